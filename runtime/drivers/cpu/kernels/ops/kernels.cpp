//===- kernels.cpp - The op registry and kernel creation ------------------===//

#include "common.h"
#include "config.h"
#include "elementwise.h"
#include "strided.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace cgc::cpu {
namespace {

const std::map<OpKind, OpEntry> &registry() {
  static const std::map<OpKind, OpEntry> table = [] {
    std::vector<OpEntry> ops;
    registerElementwiseOps(ops);
    registerReductionOps(ops);
    registerNormalizationOps(ops);
    registerPoolingOps(ops);
    registerConvolutionOps(ops);
    registerMatMulOps(ops);
    registerMovementOps(ops);
    registerResizeOps(ops);
    registerScatterOps(ops);
    registerDetectionOps(ops);
    registerCheckOps(ops);
    registerGeluOps(ops);
    std::map<OpKind, OpEntry> map;
    for (const OpEntry &entry : ops)
      map.emplace(entry.op, entry);
    return map;
  }();
  return table;
}

bool allContiguous(const KernelDesc &desc) {
  for (const auto &in : desc.inputs)
    if (in && !in->isContiguous())
      return false;
  for (const auto &out : desc.outputs)
    if (!out.isContiguous())
      return false;
  return true;
}

/// Runs a kernel built for contiguous operands on strided ones: strided
/// inputs are packed into scratch first, strided outputs written to scratch
/// and copied out after.
class DenseAdapter final : public KernelBase {
public:
  DenseAdapter(const KernelDesc &desc, std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {
    for (const auto &in : desc.inputs) {
      Pack pack;
      if (in && !in->isContiguous()) {
        pack.needed = true;
        pack.bytes = size_t(in->numElements()) * cgc_dtype_size(in->dtype);
        pack.copy = CopyPlan(in->shape, cgc_dtype_size(in->dtype), contiguousStrides(in->shape),
                             in->effectiveStrides());
      }
      inputs_.push_back(std::move(pack));
    }
    for (const auto &out : desc.outputs) {
      Pack pack;
      if (!out.isContiguous()) {
        pack.needed = true;
        pack.bytes = size_t(out.numElements()) * cgc_dtype_size(out.dtype);
        pack.copy = CopyPlan(out.shape, cgc_dtype_size(out.dtype), out.effectiveStrides(),
                             contiguousStrides(out.shape));
      }
      outputs_.push_back(std::move(pack));
    }
    description_ = inner_->describe() + " [strided operands packed]";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    std::vector<Scratch> buffers;
    buffers.reserve(inputs_.size() + outputs_.size());
    std::vector<const void *> ins(inputs_.size());
    std::vector<void *> outs(outputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      ins[i] = args.inputs[i];
      if (inputs_[i].needed && args.inputs[i]) {
        buffers.emplace_back(inputs_[i].bytes);
        inputs_[i].copy.run(pool, buffers.back().data(), args.inputs[i]);
        ins[i] = buffers.back().data();
      }
    }
    for (size_t i = 0; i < outputs_.size(); ++i) {
      outs[i] = args.outputs[i];
      if (outputs_[i].needed) {
        buffers.emplace_back(outputs_[i].bytes);
        outs[i] = buffers.back().data();
      }
    }
    KernelArgs inner{ins.data(), outs.data()};
    inner_->run(inner, pool);
    for (size_t i = 0; i < outputs_.size(); ++i)
      if (outputs_[i].needed)
        outputs_[i].copy.run(pool, args.outputs[i], outs[i]);
  }

private:
  struct Pack {
    bool needed = false;
    size_t bytes = 0;
    CopyPlan copy;
  };
  std::unique_ptr<Kernel> inner_;
  std::vector<Pack> inputs_, outputs_;
};

} // namespace

std::unique_ptr<Kernel> makeDenseAdapted(
    const KernelDesc &desc,
    const std::function<std::unique_ptr<Kernel>(const KernelDesc &dense)> &make) {
  if (allContiguous(desc))
    return make(desc);
  KernelDesc dense = desc;
  for (auto &in : dense.inputs)
    if (in)
      in->strides.clear();
  for (auto &out : dense.outputs)
    out.strides.clear();
  std::unique_ptr<Kernel> inner = make(dense);
  if (!inner)
    return nullptr;
  return std::make_unique<DenseAdapter>(desc, std::move(inner));
}

namespace {

std::unique_ptr<Kernel> createChecked(const KernelDesc &desc, const KernelOptions &options) {
  auto it = registry().find(desc.kind());
  if (it == registry().end())
    fail(cat(desc.op.empty() ? "<empty op name>" : desc.op,
             ": no kernel for this op in the CPU kernel library"));
  checkOperands(desc);
  const OpEntry &entry = it->second;
  if (entry.strided)
    return entry.factory(desc, options);
  return makeDenseAdapted(desc, [&](const KernelDesc &dense) { return entry.factory(dense, options); });
}

} // namespace

std::unique_ptr<Kernel> createKernel(const KernelDesc &desc, std::string &error) {
  return createKernel(desc, KernelOptions{}, error);
}

std::unique_ptr<Kernel> createKernel(const KernelDesc &desc, const KernelOptions &options,
                                     std::string &error) {
  try {
    std::unique_ptr<Kernel> kernel = createChecked(desc, options);
    if (!kernel)
      error = desc.op + ": kernel creation failed";
    return kernel;
  } catch (const DescError &e) {
    error = e.message;
  } catch (const std::exception &e) {
    error = desc.op + ": " + e.what();
  }
  return nullptr;
}

/// `make()` for a fused kernel of `anchor`, after every operand of
/// `descs` is checked; null with `reason` for a descriptor error or an
/// exception (oneDNN's, an allocation's) instead of passing it on.
template <class F>
static std::unique_ptr<Kernel>
fusedGuarded(const KernelDesc &anchor, std::initializer_list<const KernelDesc *> descs,
             std::initializer_list<const std::vector<KernelDesc> *> chains, std::string &reason,
             F &&make) {
  try {
    for (const KernelDesc *desc : descs)
      if (desc)
        checkOperands(*desc);
    for (const std::vector<KernelDesc> *chain : chains)
      for (const KernelDesc &op : *chain)
        checkOperands(op);
    return make();
  } catch (const DescError &e) {
    reason = e.message;
  } catch (const std::exception &e) {
    reason = anchor.op + ": " + e.what();
  }
  return nullptr;
}

bool isElementwiseChainHead(const KernelDesc &desc) {
  return isElementwiseOp(desc.kind()) && desc.outputs.size() == 1;
}

std::unique_ptr<Kernel> createFusedKernel(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          std::string &reason) {
  return createFusedKernel(anchor, epilogue, KernelOptions{}, reason);
}

std::unique_ptr<Kernel> createFusedKernel(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          const KernelOptions &options, std::string &reason) {
  if (epilogue.empty()) {
    reason = "empty epilogue: use createKernel";
    return nullptr;
  }
  return fusedGuarded(anchor, {&anchor}, {&epilogue}, reason, [&]() -> std::unique_ptr<Kernel> {
    if (anchor.kind() == OpKind::Convolution || anchor.kind() == OpKind::ConvTranspose)
      return createFusedConvolution(anchor, epilogue, options, reason);
    if (anchor.kind() == OpKind::MatMul || anchor.kind() == OpKind::Gemm)
      return createFusedMatMul(anchor, epilogue, options, reason);
    if (anchor.kind() == OpKind::BatchNorm)
      return createFusedBatchNorm(anchor, epilogue, reason);
    if (isElementwiseOp(anchor.kind()) && activeConfig().elementwiseChains)
      return makeElementwiseChainKernel(anchor, epilogue);
    reason = anchor.op + " is not a fusion anchor (convolution, conv_transpose, matmul, gemm, "
                         "batch_norm, an elementwise op)";
    return nullptr;
  });
}

std::unique_ptr<Kernel> createExpandDepthwise(const KernelDesc &expand,
                                              const std::vector<KernelDesc> &expandChain,
                                              const KernelDesc &depthwise,
                                              const std::vector<KernelDesc> &depthwiseChain,
                                              const KernelOptions &options, std::string &reason,
                                              const KernelDesc *pool) {
  return fusedGuarded(expand, {pool, &expand, &depthwise}, {&expandChain, &depthwiseChain}, reason,
                      [&] {
                        DepthwiseBlock block;
                        block.expand = &expand;
                        block.expandChain = expandChain;
                        block.depthwise = &depthwise;
                        block.depthwiseChain = depthwiseChain;
                        return createFusedDepthwiseBlock(block, options, pool, reason);
                      });
}

std::unique_ptr<Kernel> createDepthwiseBlock(const DepthwiseBlock &block,
                                             const KernelOptions &options,
                                             std::string &reason) {
  if (!block.depthwise) {
    reason = "a depthwise block needs its depthwise convolution";
    return nullptr;
  }
  return fusedGuarded(*block.depthwise, {block.expand, block.depthwise, block.project},
                      {&block.expandChain, &block.depthwiseChain, &block.projectChain}, reason,
                      [&] { return createFusedDepthwiseBlock(block, options, nullptr, reason); });
}

std::unique_ptr<Kernel> createDepthwisePool(const KernelDesc &anchor,
                                            const std::vector<KernelDesc> &chain,
                                            const KernelDesc &pool, const KernelOptions &options,
                                            std::string &reason) {
  return fusedGuarded(anchor, {&anchor, &pool}, {&chain}, reason, [&] {
    return createFusedDepthwisePool(anchor, chain, pool, options, reason);
  });
}

bool hasKernel(std::string_view op) { return registry().count(opKindOf(op)) != 0; }

std::vector<std::string> supportedOps() {
  std::vector<std::string> names;
  for (const auto &[op, entry] : registry())
    names.emplace_back(opName(op));
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace cgc::cpu
