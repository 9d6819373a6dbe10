//===- program.cpp - Compiled kernel programs of the CPU driver -----===//

#include "program.h"
#include "evaluator.h"
#include "planning/kernel_program_queries.h"
#include "elementwise.h"
#include "input_scale.h"
#include "pages.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>

#ifndef CGC_CPU_HAVE_KERNELS
#define CGC_CPU_HAVE_KERNELS 1
#endif

namespace cgc::cpu {

using planning::isFusionAnchor;
using planning::overlaps;
using planning::readElsewhere;

// Until the kernel library (kernels/) has kernels, every program fails to
// compile with a message instead of running wrong or crashing.
static std::unique_ptr<Kernel> makeKernel(const KernelDesc &desc, const KernelOptions &options,
                                          std::string &error) {
#if CGC_CPU_HAVE_KERNELS
  return createKernel(desc, options, error);
#else
  error = desc.op + ": this build's kernel library (runtime/drivers/cpu/kernels) has no "
                    "kernels yet";
  return nullptr;
#endif
}

static std::unique_ptr<Kernel> makeFusedKernel(const KernelDesc &anchor,
                                               const std::vector<KernelDesc> &epilogue,
                                               const KernelOptions &options,
                                               std::string &reason) {
#if CGC_CPU_HAVE_KERNELS
  return createFusedKernel(anchor, epilogue, options, reason);
#else
  reason = "no kernels in this build";
  return nullptr;
#endif
}

static std::unique_ptr<Kernel>
makeExpandDepthwiseKernel(const KernelDesc &expand, const std::vector<KernelDesc> &expandChain,
                          const KernelDesc &depthwise,
                          const std::vector<KernelDesc> &depthwiseChain,
                          const KernelOptions &options, std::string &reason,
                          const KernelDesc *pool = nullptr) {
#if CGC_CPU_HAVE_KERNELS
  return createExpandDepthwise(expand, expandChain, depthwise, depthwiseChain, options, reason,
                               pool);
#else
  reason = "no kernels in this build";
  return nullptr;
#endif
}

static std::unique_ptr<Kernel> makeDepthwiseBlockKernel(const DepthwiseBlock &block,
                                                        const KernelOptions &options,
                                                        std::string &reason) {
#if CGC_CPU_HAVE_KERNELS
  return createDepthwiseBlock(block, options, reason);
#else
  reason = "no kernels in this build";
  return nullptr;
#endif
}

static std::unique_ptr<Kernel> makeDepthwisePoolKernel(const KernelDesc &anchor,
                                                       const std::vector<KernelDesc> &chain,
                                                       const KernelDesc &pool,
                                                       const KernelOptions &options,
                                                       std::string &reason) {
#if CGC_CPU_HAVE_KERNELS
  return createDepthwisePool(anchor, chain, pool, options, reason);
#else
  reason = "no kernels in this build";
  return nullptr;
#endif
}

/// One op on the reference evaluator (runtime/drivers/reference): the
/// steps of a program whose configuration says `evaluator=reference`.
/// Inputs that share bytes with an output (other than an elementwise op's
/// operand in place, same address and layout) are copied first, so the
/// plain loops never read what they already wrote.
class ReferenceKernel final : public Kernel {
public:
  explicit ReferenceKernel(KernelDesc desc) : desc_(std::move(desc)) {}

  void run(const KernelArgs &args, ThreadPool &) const override {
    std::vector<const void *> inputs(desc_.inputs.size());
    std::vector<std::vector<uint8_t>> copies;
    for (size_t i = 0; i < inputs.size(); ++i) {
      inputs[i] = args.inputs[i];
      if (!desc_.inputs[i] || !args.inputs[i])
        continue;
      const KernelOperand &in = *desc_.inputs[i];
      auto first = reinterpret_cast<uintptr_t>(args.inputs[i]);
      for (size_t o = 0; o < desc_.outputs.size(); ++o) {
        const KernelOperand &out = desc_.outputs[o];
        auto start = reinterpret_cast<uintptr_t>(args.outputs[o]);
        bool sameLayout = start == first && in.dtype == out.dtype && in.shape == out.shape &&
                          in.effectiveStrides() == out.effectiveStrides();
        if (sameLayout || first + in.byteSpan() <= start || start + out.byteSpan() <= first)
          continue;
        copies.emplace_back(static_cast<const uint8_t *>(args.inputs[i]),
                            static_cast<const uint8_t *>(args.inputs[i]) + in.byteSpan());
        inputs[i] = copies.back().data();
        break;
      }
    }
    try {
      reference::evaluate(desc_, inputs.data(), args.outputs);
    } catch (const reference::EvalError &e) {
      throw RunError(e.what());
    }
  }
  std::string describe() const override { return desc_.op + " (reference evaluator)"; }

private:
  KernelDesc desc_;
};

/// Which of `inputs` live in constant bindings (weights, biases): kernels
/// prepare those once per address instead of on every run.
static KernelOptions optionsFor(const KernelProgram &program,
                                const std::vector<std::optional<KernelOperand>> &inputs) {
  KernelOptions options;
  options.constantInputs.resize(inputs.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i)
    options.constantInputs[i] = inputs[i] &&
                                inputs[i]->storage == KernelOperand::Storage::Binding &&
                                program.bindings[inputs[i]->index].constant;
  return options;
}

/// The per-run memory plan of a program and the kernel-program queries come
/// from the planning library the cpu target links too (planning/).

/// Calls f on every operand of `step` (inputs, then outputs).
template <class StepT, class F> static void forEachOperand(StepT &step, F &&f) {
  for (auto &in : step.inputs)
    if (in)
      f(*in);
  for (auto &out : step.outputs)
    f(out);
}

/// Where a step's kernel would rather write its result over one of its
/// inputs (Kernel::inPlaceInput: a convolution accumulating its residual),
/// that input is a whole temporary no later step touches, and the result a
/// whole temporary of the same size, shape, dtype and strides that no
/// earlier step touches and no other input of the step reads: the result
/// moves into the input's temporary (every later reference follows). Saves
/// the copy of the residual into the result before the sum: ResNet-50 made
/// 16 of them per run, 22 MB.
static void placeInPlace(std::vector<CompiledProgram::Step> &steps, const KernelProgram &kp) {
  const size_t temps = kp.temporaries.size();
  std::vector<int64_t> first(temps, int64_t(steps.size())), last(temps, -1);
  for (size_t s = 0; s < steps.size(); ++s)
    forEachOperand(steps[s], [&](const KernelOperand &o) {
      if (o.storage == KernelOperand::Storage::Temporary) {
        first[o.index] = std::min(first[o.index], int64_t(s));
        last[o.index] = std::max(last[o.index], int64_t(s));
      }
    });
  // Whole temporaries of one shape, dtype and layout have one size.
  auto whole = [&](const KernelOperand &o) {
    return o.storage == KernelOperand::Storage::Temporary && o.offset == 0 &&
           o.byteSpan() == kp.temporaries[o.index].bytes;
  };
  for (size_t s = 0; s < steps.size(); ++s) {
    CompiledProgram::Step &step = steps[s];
    const int i = step.kernel->inPlaceInput();
    if (i < 0 || size_t(i) >= step.inputs.size() || !step.inputs[size_t(i)] ||
        step.outputs.size() != 1)
      continue;
    const KernelOperand in = *step.inputs[size_t(i)], out = step.outputs[0];
    if (!whole(in) || !whole(out) || in.index == out.index || last[in.index] != int64_t(s) ||
        first[out.index] != int64_t(s) || in.shape != out.shape || in.dtype != out.dtype ||
        in.effectiveStrides() != out.effectiveStrides() ||
        kp.temporaries[out.index].alignment >
            std::max<uint64_t>(kp.temporaries[in.index].alignment, 64))
      continue;
    bool otherReader = false;
    for (size_t j = 0; j < step.inputs.size(); ++j) {
      const auto &other = step.inputs[j];
      otherReader = otherReader || (j != size_t(i) && other &&
                                    other->storage == KernelOperand::Storage::Temporary &&
                                    (other->index == in.index || other->index == out.index));
    }
    if (otherReader)
      continue;
    const uint32_t from = out.index, to = in.index;
    for (size_t t = s; t < steps.size(); ++t)
      forEachOperand(steps[t], [&](KernelOperand &o) {
        if (o.storage == KernelOperand::Storage::Temporary && o.index == from)
          o.index = to;
      });
    last[to] = last[from];
    first[from] = int64_t(steps.size());
    last[from] = -1;
  }
}

/// The inputs of a step that fuses `anchor` with `chain`, in KernelArgs
/// order: the anchor's inputs, then each chain op's inputs after its first
/// (the running value); for an expansion fused into a depthwise convolution
/// (`depthwise` not null), then that convolution's inputs after the first
/// and `second`'s extra operands the same way.
static std::vector<std::optional<KernelOperand>>
fusedInputs(const KernelDesc &anchor, const std::vector<KernelDesc> &chain,
            const KernelDesc *depthwise = nullptr, const std::vector<KernelDesc> &second = {}) {
  std::vector<std::optional<KernelOperand>> inputs = anchor.inputs;
  auto afterFirst = [&](const KernelDesc &op) {
    inputs.insert(inputs.end(), op.inputs.begin() + 1, op.inputs.end());
  };
  for (const KernelDesc &op : chain)
    afterFirst(op);
  if (depthwise) {
    afterFirst(*depthwise);
    for (const KernelDesc &op : second)
      afterFirst(op);
  }
  return inputs;
}

/// The inputs of a step that computes `block` (createDepthwiseBlock's
/// order): [the expansion's inputs and its chain's extra operands,] the
/// depthwise convolution's inputs (after the first with an expansion) and
/// its chain's, [the projection's inputs after the first and its chain's].
static std::vector<std::optional<KernelOperand>> blockInputs(const DepthwiseBlock &block) {
  std::vector<std::optional<KernelOperand>> inputs =
      block.expand ? fusedInputs(*block.expand, block.expandChain, block.depthwise,
                                 block.depthwiseChain)
                   : fusedInputs(*block.depthwise, block.depthwiseChain);
  if (block.project) {
    inputs.insert(inputs.end(), block.project->inputs.begin() + 1, block.project->inputs.end());
    for (const KernelDesc &op : block.projectChain)
      inputs.insert(inputs.end(), op.inputs.begin() + 1, op.inputs.end());
  }
  return inputs;
}

/// A step of a convolution (and its chain) followed by a step that is only
/// a global_avg_pool of its whole result, which other steps read too
/// (EfficientNet's squeeze-excitation): one step with both outputs when
/// the kernel library fuses them (createDepthwisePool), so the pool reads
/// each band of rows while it is in cache instead of the whole result
/// again. EfficientNet-B0's 16 pools at 1 thread: see
/// docs/cpu-kernels.md.
static void mergePools(std::vector<CompiledProgram::Step> &steps, const KernelProgram &kp) {
  for (size_t s = 0; s + 1 < steps.size(); ++s) {
    CompiledProgram::Step &a = steps[s], &b = steps[s + 1];
    if (b.kernels.size() != 1 || kp.kernels[b.kernels[0]].kind() != OpKind::GlobalAvgPool ||
        a.outputs.size() != 1 || b.inputs.size() != 1 || !b.inputs[0] ||
        !(*b.inputs[0] == a.outputs[0]) || kp.kernels[a.kernels[0]].kind() != OpKind::Convolution)
      continue;
    const KernelDesc &anchor = kp.kernels[a.kernels[0]];
    const KernelDesc &pool = kp.kernels[b.kernels[0]];
    // The anchor's chain, or for an expansion fused into a depthwise
    // convolution, the expansion's chain up to the second convolution and
    // that one's chain.
    std::vector<KernelDesc> chain, second;
    const KernelDesc *dw = nullptr;
    for (size_t i = 1; i < a.kernels.size(); ++i) {
      const KernelDesc &op = kp.kernels[a.kernels[i]];
      if (!dw && op.kind() == OpKind::Convolution)
        dw = &op;
      else
        (dw ? second : chain).push_back(op);
    }
    // The step must be these kernels as they are (not rewritten, as a
    // folded input scale is).
    if (fusedInputs(anchor, chain, dw, second) != a.inputs)
      continue;
    std::string reason;
    const KernelOptions options = optionsFor(kp, a.inputs);
    std::unique_ptr<Kernel> kernel =
        dw ? makeExpandDepthwiseKernel(anchor, chain, *dw, second, options, reason, &pool)
           : makeDepthwisePoolKernel(anchor, chain, pool, options, reason);
    if (!kernel)
      continue;
    a.kernel = std::move(kernel);
    a.kernels.push_back(b.kernels[0]);
    a.outputs.push_back(b.outputs[0]);
    steps.erase(steps.begin() + std::ptrdiff_t(s + 1));
  }
}

/// Kernel k is mul(x, s) (either operand order) on float32 with x of rank
/// 4 and s one factor per channel (shape [1, C, 1, 1] or [C, 1, 1]), its
/// result a temporary that only kernel k + 1 reads, as the input of an
/// ungrouped float32 2-D convolution whose plane has at least 64 positions
/// per output channel: the scale folds into the convolution's weights
/// (input_scale.h). Sets x and s. Below that, preparing the scaled weights
/// on every run (scaling, then oneDNN's reorder into its blocked layout)
/// cost more than the multiply it saves: EfficientNet-B0, 1 / 2 threads,
/// mul + convolution vs folded: 32->16 @112 217 -> 108 / 164 -> 67 us,
/// 96->24 @56 153 -> 122 / 187 -> 80 us, but 240->40 @28 115 -> 140 /
/// 85 -> 103 us (28 * 28 < 64 * 40).
static bool foldableInputScale(const KernelProgram &kp, size_t k, KernelOperand &x,
                               KernelOperand &s) {
  if (k + 1 >= kp.kernels.size())
    return false;
  const KernelDesc &mul = kp.kernels[k], &conv = kp.kernels[k + 1];
  if (mul.kind() != OpKind::Mul || mul.inputs.size() != 2 || !mul.inputs[0] || !mul.inputs[1] ||
      mul.outputs.size() != 1 || conv.kind() != OpKind::Convolution || conv.inputs.size() < 2 ||
      !conv.inputs[0] || !conv.inputs[1] || conv.getInt("groups", 1) != 1)
    return false;
  const KernelOperand &t = mul.outputs[0], &w = *conv.inputs[1];
  const cgc_dtype_t f32 = CGC_DTYPE_FLOAT32;
  if (t.storage != KernelOperand::Storage::Temporary || t.dtype != f32 || t.shape.size() != 4 ||
      !(*conv.inputs[0] == t) || readElsewhere(kp, t, k + 1) || w.dtype != f32 ||
      w.shape.size() != 4 || w.shape[1] != t.shape[1] ||
      t.shape[2] * t.shape[3] < 64 * w.shape[0])
    return false;
  auto perChannel = [&](const KernelOperand &o) {
    if (o.dtype != f32 || o.shape.size() > 4 || o.shape.size() < 3)
      return false;
    // Right-aligned with t: the channel dimension C, every other one 1.
    const size_t lead = 4 - o.shape.size();
    for (size_t d = 0; d < o.shape.size(); ++d)
      if (o.shape[d] != (d + lead == 1 ? t.shape[1] : 1))
        return false;
    return true;
  };
  for (int first = 0; first < 2; ++first) {
    const KernelOperand &a = *mul.inputs[size_t(first)], &b = *mul.inputs[size_t(1 - first)];
    if (a.dtype == f32 && a.shape == t.shape && perChannel(b)) {
      x = a;
      s = b;
      return true;
    }
  }
  return false;
}

std::shared_ptr<CompiledProgram> CompiledProgram::create(KernelProgram program,
                                                         std::string &error) {
  return create(std::move(program), KernelConfig::process(), error);
}

std::shared_ptr<CompiledProgram> CompiledProgram::create(KernelProgram program,
                                                         const KernelConfig &config,
                                                         std::string &error) {
  if (!program.validate(error))
    return nullptr;
  auto result = std::shared_ptr<CompiledProgram>(new CompiledProgram());
  CompiledProgram &p = *result;
  p.config_ = config;
  // Every kernel choice below reads the program's configuration.
  ConfigScope scope(p.config_);
  // Preparation sites are numbered in construction order (prepared.h).
  prepared::SiteNumbering numbering;
  p.program_ = std::move(program);
  const KernelProgram &kp = p.program_;

  // The elementwise chain after anchor `desc` (kernel `a`) that consumes
  // only its result, longest first.
  auto chainAfter = [&](const KernelDesc &desc, size_t a) {
    std::vector<KernelDesc> chain;
    for (size_t j : planning::epilogueChain(kp, a))
      chain.push_back(kp.kernels[j]);
    return chain;
  };
  // The step of anchor `desc` (kernel `a`, after the kernels in `before`)
  // with the longest chain the kernel library fuses, or alone; `adjust`
  // sees the step's inputs and options before the kernel is made, `wrap`
  // the kernel after. False with `error` set if not even the anchor alone
  // makes a kernel.
  auto anchorStep = [&](const KernelDesc &desc, size_t a, std::vector<size_t> before,
                        auto &&adjust, auto &&wrap) {
    std::vector<KernelDesc> chain = chainAfter(desc, a);
    std::string declined; // why the op right after the anchor did not fuse
    while (true) {
      Step step;
      step.inputs = fusedInputs(desc, chain);
      KernelOptions options = optionsFor(kp, step.inputs);
      adjust(step.inputs, options);
      std::string reason;
      step.kernel = chain.empty() ? makeKernel(desc, options, reason)
                                  : makeFusedKernel(desc, chain, options, reason);
      if (!step.kernel && !chain.empty()) {
        if (chain.size() == 1)
          declined = chain.front().op + " after it: " + reason;
        chain.pop_back(); // try a shorter epilogue
        continue;
      }
      step.declined = std::move(declined);
      if (!step.kernel) {
        error = "kernel " + std::to_string(a) + " (" + desc.op + "): " + reason;
        return false;
      }
      step.kernel = wrap(std::move(step.kernel), step.inputs);
      step.outputs = chain.empty() ? desc.outputs : chain.back().outputs;
      step.kernels = std::move(before);
      for (size_t i = 0; i <= chain.size(); ++i)
        step.kernels.push_back(a + i);
      p.steps_.push_back(std::move(step));
      return true;
    }
  };
  // chainAfter(desc, a) up to its first convolution (a stride-1 depthwise
  // or a 1x1 convolution that keeps the shape is not an epilogue).
  auto chainToConv = [&](const KernelDesc &desc, size_t a) {
    std::vector<KernelDesc> chain = chainAfter(desc, a);
    chain.erase(std::find_if(chain.begin(), chain.end(),
                             [](const KernelDesc &op) { return op.kind() == OpKind::Convolution; }),
                chain.end());
    return chain;
  };
  // Sets `block`'s projection: the convolution after its depthwise
  // convolution (kernel d) and chain when it alone reads their result (a
  // temporary), as its input 0, with its own chain. False if there is none.
  auto addProjection = [&](DepthwiseBlock &block, size_t d) {
    const size_t j = d + 1 + block.depthwiseChain.size();
    const KernelOperand &value = block.depthwiseChain.empty()
                                     ? block.depthwise->outputs[0]
                                     : block.depthwiseChain.back().outputs[0];
    if (j >= kp.kernels.size())
      return false;
    const KernelDesc &conv = kp.kernels[j];
    if (conv.kind() != OpKind::Convolution || conv.outputs.size() != 1 || conv.inputs.empty() ||
        !conv.inputs[0] || !(*conv.inputs[0] == value) ||
        value.storage != KernelOperand::Storage::Temporary || readElsewhere(kp, value, j))
      return false;
    block.project = &conv;
    block.projectChain = chainAfter(conv, j);
    return true;
  };
  // The step of `block`, whose first kernel is `first` and depthwise
  // convolution kernel d, when the kernel library fuses it.
  auto blockStep = [&](const DepthwiseBlock &block, size_t first, size_t d) {
    Step step;
    step.inputs = blockInputs(block);
    std::string reason;
    step.kernel = makeDepthwiseBlockKernel(block, optionsFor(kp, step.inputs), reason);
    if (!step.kernel)
      return false;
    size_t last = d + block.depthwiseChain.size();
    if (block.project)
      last += 1 + block.projectChain.size();
    step.outputs = kp.kernels[last].outputs;
    for (size_t i = first; i <= last; ++i)
      step.kernels.push_back(i);
    p.steps_.push_back(std::move(step));
    return true;
  };
  // Depthwise convolution `depthwise` (kernel d) with its chain, whose
  // result only a 1x1 convolution reads, as one step with that projection
  // and its chain when the kernel library fuses them.
  auto depthwiseProjectStep = [&](const KernelDesc &depthwise, size_t d) {
    if (depthwise.kind() != OpKind::Convolution || depthwise.outputs.size() != 1 ||
        depthwise.getInt("groups", 1) == 1)
      return false;
    DepthwiseBlock block;
    block.depthwise = &depthwise;
    block.depthwiseChain = chainToConv(depthwise, d);
    return addProjection(block, d) && blockStep(block, d, d);
  };
  // Convolution `expand` (kernel e) with its chain, whose result only the
  // convolution after the chain reads, as one step with that convolution
  // and its chain (and the projection after them, when that fuses too)
  // when the kernel library fuses them (a 1x1 expansion or a CNN's stem
  // into a depthwise convolution: createDepthwiseBlock).
  auto expandDepthwiseStep = [&](const KernelDesc &expand, size_t e) {
    if (expand.kind() != OpKind::Convolution || expand.outputs.size() != 1)
      return false;
    std::vector<KernelDesc> first = chainAfter(expand, e);
    // chainAfter stops at shape changes only: a stride-1 depthwise
    // convolution keeps the shape.
    auto conv = std::find_if(first.begin(), first.end(), [](const KernelDesc &op) {
      return op.kind() == OpKind::Convolution;
    });
    const size_t d = e + 1 + size_t(conv - first.begin());
    first.erase(conv, first.end());
    if (d >= kp.kernels.size())
      return false;
    const KernelDesc &depthwise = kp.kernels[d];
    const KernelOperand &mid = first.empty() ? expand.outputs[0] : first.back().outputs[0];
    if (depthwise.kind() != OpKind::Convolution || depthwise.outputs.size() != 1 ||
        depthwise.inputs.empty() || !depthwise.inputs[0] || !(*depthwise.inputs[0] == mid) ||
        mid.storage != KernelOperand::Storage::Temporary || readElsewhere(kp, mid, d))
      return false;
    DepthwiseBlock block;
    block.expand = &expand;
    block.expandChain = std::move(first);
    block.depthwise = &depthwise;
    block.depthwiseChain = chainToConv(depthwise, d);
    if (addProjection(block, d) && blockStep(block, e, d))
      return true;
    block.project = nullptr;
    block.projectChain.clear();
    return blockStep(block, e, d);
  };
  auto asIs = [](std::vector<std::optional<KernelOperand>> &, KernelOptions &) {};
  auto noWrap = [](std::unique_ptr<Kernel> kernel, std::vector<std::optional<KernelOperand>> &) {
    return kernel;
  };

  // The reference evaluator: every op alone, as the program says.
  const bool perOp = p.config_.evaluator == "reference";
  for (size_t k = 0; perOp && k < kp.kernels.size(); ++k) {
    const KernelDesc &desc = kp.kernels[k];
    std::string why = reference::unsupported(desc);
    if (!why.empty()) {
      error = "kernel " + std::to_string(k) + " (" + desc.op + "): " + why;
      return nullptr;
    }
    Step step;
    step.inputs = desc.inputs;
    step.outputs = desc.outputs;
    step.kernels = {k};
    step.kernel = std::make_unique<ReferenceKernel>(desc);
    p.steps_.push_back(std::move(step));
  }

  for (size_t k = 0; !perOp && k < kp.kernels.size();) {
    const KernelDesc &desc = kp.kernels[k];
    KernelOperand scaleX, scaleS;
    if (foldableInputScale(kp, k, scaleX, scaleS)) {
      // mul(x, s) then conv: conv(x, W * s) (input_scale.h), the weights
      // read dense from per-run memory.
      KernelDesc conv = kp.kernels[k + 1];
      conv.inputs[0] = scaleX;
      const KernelOperand weights = *conv.inputs[1];
      conv.inputs[1]->strides.clear();
      auto adjust = [&](std::vector<std::optional<KernelOperand>> &inputs, KernelOptions &options) {
        inputs[1] = weights;
        options.constantInputs[0] = options.constantInputs[1] = false;
      };
      auto wrap = [&](std::unique_ptr<Kernel> kernel,
                      std::vector<std::optional<KernelOperand>> &inputs) {
        const size_t n = inputs.size();
        inputs.push_back(scaleS);
        return std::unique_ptr<Kernel>(
            std::make_unique<InputScaledKernel>(std::move(kernel), weights, scaleS, n));
      };
      size_t before = p.steps_.size();
      if (anchorStep(conv, k + 1, {k}, adjust, wrap)) {
        k += p.steps_.back().kernels.size();
        continue;
      }
      // Not even the convolution alone: the two run as they are.
      error.clear();
      p.steps_.resize(before);
    }
    if (expandDepthwiseStep(desc, k) || depthwiseProjectStep(desc, k)) {
      k += p.steps_.back().kernels.size();
      continue;
    }
    // An anchor with its epilogue, or an elementwise op heading a chain of
    // elementwise ops (fusion with no anchor: one pass over memory).
    const bool chainHead = p.config_.elementwiseChains && isElementwiseChainHead(desc) &&
                           !planning::epilogueChain(kp, k).empty();
    if ((isFusionAnchor(desc.op) || chainHead) && desc.outputs.size() == 1) {
      if (!anchorStep(desc, k, {}, asIs, noWrap))
        return nullptr;
      k += p.steps_.back().kernels.size();
      continue;
    }
    Step step;
    step.inputs = desc.inputs;
    step.outputs = desc.outputs;
    step.kernels = {k};
    std::string why;
    step.kernel = makeKernel(desc, optionsFor(kp, step.inputs), why);
    if (!step.kernel) {
      error = "kernel " + std::to_string(k) + " (" + desc.op + "): " + why;
      return nullptr;
    }
    p.steps_.push_back(std::move(step));
    ++k;
  }

  if (!perOp) {
    mergePools(p.steps_, kp);
    placeInPlace(p.steps_, kp);
  }

  // The temporaries in one block of memory per run, by lifetime over the
  // steps: a temporary only a fused kernel's epilogue reads is never stored.
  std::vector<planning::TemporaryBlock> blocks(kp.temporaries.size());
  for (size_t t = 0; t < blocks.size(); ++t) {
    blocks[t].bytes = kp.temporaries[t].bytes;
    blocks[t].alignment = std::max<uint64_t>(kp.temporaries[t].alignment, 64);
    blocks[t].first = int64_t(p.steps_.size());
    blocks[t].last = -1;
  }
  p.bindingAccess_.assign(kp.bindings.size(), {});
  for (BindingAccess &a : p.bindingAccess_)
    a.first = int64_t(p.steps_.size());
  for (size_t s = 0; s < p.steps_.size(); ++s) {
    const Step &step = p.steps_[s];
    for (const auto &out : step.outputs)
      if (out.storage == KernelOperand::Storage::Binding)
        p.bindingAccess_[out.index].writes = true;
    forEachOperand(step, [&](const KernelOperand &o) {
      if (o.storage == KernelOperand::Storage::Binding) {
        BindingAccess &a = p.bindingAccess_[o.index];
        a.first = std::min(a.first, int64_t(s));
        a.last = std::max(a.last, int64_t(s));
        return;
      }
      planning::TemporaryBlock &b = blocks[o.index];
      b.first = std::min(b.first, int64_t(s));
      b.last = std::max(b.last, int64_t(s));
    });
  }
  // Without binding addresses (they come with each run), every temporary
  // in per-run memory: the plan of a run whose bound ranges cannot hold the
  // temporaries that live in bindings (layoutFor).
  planning::TemporaryPlan plan = planning::planTemporaries(blocks);
  if (!planning::verifyTemporaryPlan(blocks, plan, error)) {
    error = "internal error: the per-run memory plan is invalid: " + error;
    return nullptr;
  }
  p.temporaryOffsets_ = plan.offsets;
  p.scratchBytes_ = plan.bytes;
  p.blocks_ = blocks;
  for (size_t b = 0; b < kp.bindings.size(); ++b)
    if (p.bindingAccess_[b].touched())
      p.touchedBindings_.push_back(uint32_t(b));
  p.memory_ = RunMemory::shared();
  MemoryStats &stats = p.memoryStats_;
  stats.perRunBytes = plan.bytes;
  stats.lowerBound = plan.lowerBound;
  stats.unplannedBytes = plan.unplannedBytes;
  std::vector<bool> backsTemporary(kp.bindings.size(), false);
  for (size_t t = 0; t < blocks.size(); ++t) {
    const planning::TemporaryBlock &b = blocks[t];
    if (b.bytes == 0 || b.first > b.last)
      continue;
    ++stats.temporaries;
    if (kp.temporaries[t].binding >= 0) {
      backsTemporary[size_t(kp.temporaries[t].binding)] = true;
      ++stats.boundTemporaries;
      stats.boundBytes += b.bytes;
    }
  }
  for (size_t b = 0; b < kp.bindings.size(); ++b)
    if (kp.bindings[b].internal && !p.bindingAccess_[b].touched() && !backsTemporary[b]) {
      ++stats.untouchedInternalBindings;
      stats.untouchedInternalBytes += kp.bindings[b].bytes;
    }
  if (!p.config_.profile.empty()) {
    p.profile_ = std::make_unique<StepTime[]>(p.steps_.size());
    p.profilePath_ = p.config_.profile == "1" ? "-" : p.config_.profile;
  }
  return result;
}

size_t CompiledProgram::fusedCount() const {
  size_t n = 0;
  for (const Step &s : steps_)
    n += s.kernels.size() - 1;
  return n;
}

//===----------------------------------------------------------------------===//
// The shared per-run memory
//===----------------------------------------------------------------------===//

std::shared_ptr<RunMemory> RunMemory::shared() {
  static std::mutex mutex;
  static std::weak_ptr<RunMemory> current;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<RunMemory> pool = current.lock();
  if (!pool) {
    pool = std::make_shared<RunMemory>();
    current = pool;
  }
  return pool;
}

RunMemory::~RunMemory() {
  // Every run gave its block back: runs hold their program, which holds
  // this pool.
  for (const Block &b : free_)
    freePages(b.data, b.bytes, 64);
}

RunMemory::Block RunMemory::acquire(uint64_t bytes) {
  std::vector<Block> tooSmall;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest free block that holds the request.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes))
        best = it;
    if (best != free_.end()) {
      Block b = *best;
      free_.erase(best);
      return b;
    }
    // None: every free block is smaller. Replace them with one that fits.
    tooSmall.swap(free_);
    for (const Block &b : tooSmall) {
      held_ -= b.bytes;
      --blocks_;
    }
  }
  for (const Block &b : tooSmall)
    freePages(b.data, b.bytes, 64);
  Block b;
  b.bytes = bytes;
  b.data = static_cast<uint8_t *>(allocatePages(bytes, 64));
  if (!b.data)
    throw std::bad_alloc();
  std::lock_guard<std::mutex> lock(mutex_);
  held_ += b.bytes;
  ++blocks_;
  return b;
}

void RunMemory::release(Block block) {
  if (!block.data)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(block);
}

uint64_t RunMemory::heldBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

size_t RunMemory::heldBlocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return blocks_;
}

/// True if [a, a + aBytes) and [b, b + bBytes) share a byte.
static bool commonBytes(uintptr_t a, uint64_t aBytes, uintptr_t b, uint64_t bBytes) {
  return a < b + bBytes && b < a + aBytes;
}

bool CompiledProgram::sharesWrittenBytes(const std::vector<uint8_t *> &bindings) const {
  for (size_t i = 0; i < touchedBindings_.size(); ++i)
    for (size_t j = i + 1; j < touchedBindings_.size(); ++j) {
      uint32_t x = touchedBindings_[i], y = touchedBindings_[j];
      if ((bindingAccess_[x].writes || bindingAccess_[y].writes) &&
          commonBytes(reinterpret_cast<uintptr_t>(bindings[x]), program_.bindings[x].bytes,
                      reinterpret_cast<uintptr_t>(bindings[y]), program_.bindings[y].bytes))
        return true;
    }
  return false;
}

/// True if the step's kernels are all elementwise: each element of the
/// result is computed from the elements at its own position, so the result
/// may overwrite an input of the same layout (the compiler's in-place
/// offer for an elementwise partition).
static bool elementwiseStep(const CompiledProgram::Step &step, const KernelProgram &program) {
  for (size_t k : step.kernels)
    if (!isElementwiseOp(program.kernels[k].kind()))
      return false;
  return !step.kernels.empty();
}

std::shared_ptr<const CompiledProgram::Layout>
CompiledProgram::layoutFor(const std::vector<uint8_t *> &bindings,
                           bool keepTemporariesInBindings) const {
  {
    std::lock_guard<std::mutex> lock(layoutMutex_);
    for (auto it = layouts_.rbegin(); it != layouts_.rend(); ++it)
      if ((*it)->key == bindings && (*it)->temporariesInBindings == keepTemporariesInBindings)
        return *it;
  }
  auto layout = std::make_shared<Layout>();
  layout->key = bindings;
  layout->temporariesInBindings = keepTemporariesInBindings;
  const int64_t lastStep = int64_t(steps_.size()) - 1;

  // The bound ranges the steps access, with the steps that access them.
  // The compiler places a partition's values by its order of invocations,
  // so two bind points of one dispatch may share bytes: a value read only
  // by the first invocation and one written by the last. This program's
  // steps may access them in another order (a fusion writes a result at
  // its anchor's step, a rewrite reads an input at a later op's): where two
  // bind points share bytes, at least one writes them, and the steps access
  // both at a common step or interleaved, one of them is shadowed -- its
  // steps use a copy in per-run memory, filled from the binding before the
  // first step and written back after the last -- unless the two are an
  // elementwise step's in-place operands.
  struct Bound {
    uint32_t binding;
    uintptr_t begin, end;
    int64_t first, last;
    bool writes;
  };
  std::vector<Bound> bound;
  for (uint32_t b : touchedBindings_) {
    uintptr_t at = reinterpret_cast<uintptr_t>(bindings[b]);
    const BindingAccess &access = bindingAccess_[b];
    if (program_.bindings[b].bytes && at)
      bound.push_back({b, at, at + program_.bindings[b].bytes, access.first, access.last,
                       access.writes});
  }
  auto inPlace = [&](const Bound &x, const Bound &y) {
    if (x.begin != y.begin || x.end != y.end)
      return false;
    int64_t at = x.last == y.first ? x.last : y.last == x.first ? y.last : -1;
    return at >= 0 && x.first <= at && y.first <= at &&
           elementwiseStep(steps_[size_t(at)], program_);
  };
  std::vector<int32_t> shadowOf(program_.bindings.size(), -1);
  auto shadow = [&](const Bound &victim) {
    const KernelProgram::Binding &binding = program_.bindings[victim.binding];
    shadowOf[victim.binding] = int32_t(layout->shadows.size());
    Shadow s;
    s.binding = victim.binding;
    s.bytes = binding.bytes;
    // An internal bind point's value is the partition's alone: nothing to
    // carry in or out.
    s.copyIn = !binding.internal;
    s.copyOut = !binding.internal && victim.writes;
    layout->shadows.push_back(s);
  };
  for (size_t i = 0; i < bound.size(); ++i)
    for (size_t j = i + 1; j < bound.size(); ++j) {
      const Bound &x = bound[i], &y = bound[j];
      if (shadowOf[x.binding] >= 0 || shadowOf[y.binding] >= 0)
        continue;
      if (!commonBytes(x.begin, x.end - x.begin, y.begin, y.end - y.begin) ||
          !(x.writes || y.writes) ||
          !(x.first <= y.last && y.first <= x.last) || inPlace(x, y))
        continue;
      // The copy costs least for an internal value, then for the smaller.
      bool xInternal = program_.bindings[x.binding].internal;
      bool yInternal = program_.bindings[y.binding].internal;
      bool pickX = xInternal != yInternal ? xInternal : x.end - x.begin < y.end - y.begin;
      shadow(pickX ? x : y);
    }
  // Shadowed bind points are accessed before the first step (the copy in)
  // and after the last (the copy out). Two copies out over common bytes
  // would leave one value where the compiler placed two live ones.
  for (size_t i = 0; i < layout->shadows.size(); ++i)
    for (size_t j = i + 1; j < layout->shadows.size(); ++j) {
      const Shadow &x = layout->shadows[i], &y = layout->shadows[j];
      uintptr_t xa = reinterpret_cast<uintptr_t>(bindings[x.binding]);
      uintptr_t ya = reinterpret_cast<uintptr_t>(bindings[y.binding]);
      if (x.copyOut && y.copyOut && commonBytes(xa, x.bytes, ya, y.bytes))
        throw std::invalid_argument(
            "bind points '" + program_.bindings[x.binding].name + "' and '" +
            program_.bindings[y.binding].name +
            "' are bound to common bytes and the dispatch writes both");
    }

  // Address ranges and step intervals of what stays where it is bound: the
  // bindings at the steps that access them (a shadowed one before the first
  // step and after the last), then, by first step, each temporary whose
  // binding has room for it at a free time.
  struct Held {
    uintptr_t begin, end;
    int64_t first, last;
  };
  std::vector<Held> held;
  for (const Bound &b : bound) {
    int32_t s = shadowOf[b.binding];
    if (s < 0) {
      held.push_back({b.begin, b.end, b.first, b.last});
      continue;
    }
    if (layout->shadows[size_t(s)].copyIn)
      held.push_back({b.begin, b.end, -1, -1});
    if (layout->shadows[size_t(s)].copyOut)
      held.push_back({b.begin, b.end, lastStep + 1, lastStep + 1});
  }
  std::vector<size_t> candidates;
  if (keepTemporariesInBindings)
    for (size_t t = 0; t < blocks_.size(); ++t)
      if (program_.temporaries[t].binding >= 0 && blocks_[t].bytes > 0 &&
          blocks_[t].first <= blocks_[t].last)
        candidates.push_back(t);
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t a, size_t b) { return blocks_[a].first < blocks_[b].first; });
  std::vector<planning::TemporaryBlock> blocks = blocks_;
  std::vector<bool> inBinding(blocks.size(), false);
  for (size_t t : candidates) {
    const planning::TemporaryBlock &block = blocks_[t];
    uintptr_t at = reinterpret_cast<uintptr_t>(bindings[size_t(program_.temporaries[t].binding)]);
    bool fits = at != 0 && at % std::max<uint64_t>(block.alignment, 1) == 0;
    for (const Held &h : held)
      if (fits && at < h.end && h.begin < at + block.bytes && block.first <= h.last &&
          h.first <= block.last)
        fits = false;
    if (!fits) {
      ++layout->evicted;
      layout->evictedBytes += block.bytes;
      continue;
    }
    held.push_back({at, at + block.bytes, block.first, block.last});
    inBinding[t] = true;
    blocks[t].bytes = 0; // takes no per-run memory
  }
  // The shadows live in per-run memory for the whole run.
  for (const Shadow &s : layout->shadows) {
    planning::TemporaryBlock block;
    block.bytes = s.bytes;
    block.alignment = 64;
    block.first = 0;
    block.last = std::max<int64_t>(lastStep, 0);
    blocks.push_back(block);
    layout->shadowedBytes += s.bytes;
  }
  planning::TemporaryPlan plan = planning::planTemporaries(blocks);
  layout->offsets.assign(plan.offsets.begin(), plan.offsets.begin() + ptrdiff_t(blocks_.size()));
  for (size_t t = 0; t < blocks_.size(); ++t)
    if (inBinding[t])
      layout->offsets[t] = kInBinding;
  for (size_t s = 0; s < layout->shadows.size(); ++s)
    layout->shadows[s].offset = plan.offsets[blocks_.size() + s];
  layout->shadowOf = std::move(shadowOf);
  layout->perRunBytes = plan.bytes;

  std::lock_guard<std::mutex> lock(layoutMutex_);
  if (layouts_.size() >= 4)
    layouts_.erase(layouts_.begin());
  layouts_.push_back(layout);
  return layout;
}

void CompiledProgram::run(const std::vector<uint8_t *> &bindings, ThreadPool &pool) const {
  execute(bindings, pool, true);
}

bool CompiledProgram::prepareConstants(const std::vector<uint8_t *> &bindings,
                                       ThreadPool &pool) const {
  return prepareConstants(bindings, pool, nullptr);
}

std::string CompiledProgram::preparedSignature(size_t threads) const {
  // The settings that do not decide what kernels make (how many threads
  // were asked for: the pool's size counts; spinning; profiling) aside.
  KernelConfig deciding = config_;
  const KernelConfig defaults;
  deciding.threads = defaults.threads;
  deciding.spinUs = defaults.spinUs;
  deciding.profile = defaults.profile;
  return prepared::signature(deciding.describe(), threads);
}

bool CompiledProgram::prepareConstants(const std::vector<uint8_t *> &bindings, ThreadPool &pool,
                                       prepared::Context *) const {
  if (!config_.prepareConstants || config_.evaluator == "reference")
    return false;
  const auto &declared = program_.bindings;
  std::vector<uint8_t *> constants;
  uint64_t privateBytes = 0;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i].constant)
      constants.push_back(bindings[i]);
    else
      privateBytes += (declared[i].bytes + 63) / 64 * 64;
  }
  if (constants.empty())
    return false;
  {
    std::lock_guard<std::mutex> lock(prepareMutex_);
    if (std::find(prepared_.begin(), prepared_.end(), constants) != prepared_.end())
      return false;
    prepared_.push_back(constants);
  }
  // Zeroed pages, faulted in only where a step touches them.
  const size_t mapping = std::max<uint64_t>(privateBytes, 64);
  auto *memory = static_cast<uint8_t *>(allocatePages(mapping, 64));
  if (!memory)
    throw std::bad_alloc();
  std::vector<uint8_t *> addresses(declared.size());
  uint64_t at = 0;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (declared[i].constant) {
      addresses[i] = bindings[i];
      continue;
    }
    addresses[i] = memory + at;
    at += (declared[i].bytes + 63) / 64 * 64;
  }
  try {
    execute(addresses, pool, false);
  } catch (const std::exception &e) {
    std::lock_guard<std::mutex> lock(prepareMutex_);
    prepareError_ = e.what();
  }
  freePages(memory, mapping, 64);
  return true;
}

size_t CompiledProgram::preparedConstantSets() const {
  std::lock_guard<std::mutex> lock(prepareMutex_);
  return prepared_.size();
}

void CompiledProgram::execute(const std::vector<uint8_t *> &bindings, ThreadPool &pool,
                              bool profiled) const {
  // Choices a kernel makes on its first run (preparing its weights) read
  // the program's configuration too.
  ConfigScope scope(config_);
  // Bind points of one dispatch may share bytes (the compiler places them
  // by its invocation order): the layout orders their accesses. Without
  // such a pair (the common case) the run needs none, and takes no lock.
  std::shared_ptr<const Layout> layout;
  const bool temporariesInBindings = memoryStats_.boundTemporaries && config_.boundTemporaries;
  if (temporariesInBindings || sharesWrittenBytes(bindings))
    layout = layoutFor(bindings, temporariesInBindings);
  const uint64_t perRunBytes = layout ? layout->perRunBytes : scratchBytes_;
  const std::vector<uint64_t> &offsets = layout ? layout->offsets : temporaryOffsets_;
  RunMemory::Block block;
  if (perRunBytes)
    block = memory_->acquire(perRunBytes);
  struct Release {
    RunMemory &memory;
    RunMemory::Block block;
    ~Release() { memory.release(block); }
  } release{*memory_, block};
  uint8_t *scratch = block.data;
  const Shadow *shadows = layout ? layout->shadows.data() : nullptr;
  auto address = [&](const KernelOperand &o) -> uint8_t * {
    if (o.storage == KernelOperand::Storage::Binding) {
      if (shadows && layout->shadowOf[o.index] >= 0)
        return scratch + shadows[layout->shadowOf[o.index]].offset + o.offset;
      return bindings[o.index] + o.offset;
    }
    uint64_t at = offsets[o.index];
    if (at == kInBinding)
      return bindings[size_t(program_.temporaries[o.index].binding)] + o.offset;
    return scratch + at + o.offset;
  };
  if (layout)
    for (const Shadow &s : layout->shadows)
      if (s.copyIn)
        std::memcpy(scratch + s.offset, bindings[s.binding], s.bytes);
  std::vector<const void *> inputs;
  std::vector<void *> outputs;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step &step = steps_[s];
    inputs.clear();
    outputs.clear();
    for (const auto &in : step.inputs)
      inputs.push_back(in ? address(*in) : nullptr);
    for (const auto &out : step.outputs)
      outputs.push_back(address(out));
    KernelArgs args;
    args.inputs = inputs.data();
    args.outputs = outputs.data();
    if (!profile_ || !profiled) {
      step.kernel->run(args, pool);
      continue;
    }
    auto start = std::chrono::steady_clock::now();
    step.kernel->run(args, pool);
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
    // A step's first call prepares what it keeps (weights in the kernel's
    // layout, primitives): reported apart from the steady runs.
    if (profile_[s].calls.fetch_add(1, std::memory_order_relaxed) == 0)
      profile_[s].firstNs.store(uint64_t(ns), std::memory_order_relaxed);
    else
      profile_[s].ns.fetch_add(uint64_t(ns), std::memory_order_relaxed);
  }
  if (layout)
    for (const Shadow &s : layout->shadows)
      if (s.copyOut)
        std::memcpy(bindings[s.binding], scratch + s.offset, s.bytes);
}

CompiledProgram::~CompiledProgram() {
  if (profile_)
    printProfile();
}

void CompiledProgram::printProfile() const {
  auto formatFixed = [](double value, int digits) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, value);
    return std::string(buf);
  };
  uint64_t total = 0, first = 0, runs = 0;
  std::vector<size_t> order(steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s) {
    order[s] = s;
    total += profile_[s].ns.load();
    first += profile_[s].firstNs.load();
    runs = std::max<uint64_t>(runs, profile_[s].calls.load());
  }
  if (runs == 0)
    return;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    uint64_t ta = profile_[a].ns.load(), tb = profile_[b].ns.load();
    return ta != tb ? ta > tb : a < b;
  });
  // Steady runs: every run after the first.
  const double steady = double(std::max<uint64_t>(runs - 1, 1));
  std::ostringstream os;
  os << "cgc " << (config_.evaluator == "reference" ? "reference evaluator" : "CPU driver")
     << " profile (configuration: " << config_.describe()
     << "): " << steps_.size() << " steps, " << runs
     << " runs; first run " << formatFixed(double(first) / 1e6, 3) << " ms, then "
     << formatFixed(double(total) / 1e6 / steady, 3)
     << " ms per run (wall time of each step, slowest first: share, us per run, us of the "
        "first run)\n";
  {
    std::lock_guard<std::mutex> lock(prepareMutex_);
    if (!prepared_.empty())
      os << "  constants prepared at load (one run over private memory, " << prepared_.size()
         << " set" << (prepared_.size() == 1 ? "" : "s") << " of addresses)"
         << (prepareError_.empty()
                 ? ""
                 : "; stopped, the first run prepared the rest: " + prepareError_)
         << "\n";
  }
  if (memoryStats_.boundTemporaries && config_.boundTemporaries) {
    std::shared_ptr<const Layout> last;
    {
      std::lock_guard<std::mutex> lock(layoutMutex_);
      if (!layouts_.empty())
        last = layouts_.back();
    }
    os << "  temporaries in their bind points' bytes (planned by the compiler): "
       << memoryStats_.boundTemporaries << " of " << memoryStats_.temporaries << ", "
       << formatFixed(double(memoryStats_.boundBytes) / 1048576.0, 2) << " MiB";
    if (last)
      os << "; moved to per-run memory because the steps' order needs them longer: "
         << last->evicted << " (" << formatFixed(double(last->evictedBytes) / 1048576.0, 2)
         << " MiB); per-run memory " << formatFixed(double(last->perRunBytes) / 1048576.0, 2)
         << " MiB";
    os << "\n";
  }
  {
    std::shared_ptr<const Layout> last;
    {
      std::lock_guard<std::mutex> lock(layoutMutex_);
      if (!layouts_.empty())
        last = layouts_.back();
    }
    if (last && !last->shadows.empty()) {
      os << "  bind points that share bytes with another this program's steps access out of the "
            "compiler's order, run on a copy in per-run memory: ";
      for (size_t i = 0; i < last->shadows.size(); ++i)
        os << (i ? ", " : "") << "'" << program_.bindings[last->shadows[i].binding].name << "'";
      os << " (" << formatFixed(double(last->shadowedBytes) / 1048576.0, 2) << " MiB)\n";
    }
  }
  for (size_t s : order) {
    const Step &step = steps_[s];
    uint64_t ns = profile_[s].ns.load();
    std::string ops;
    for (size_t k : step.kernels)
      ops += (ops.empty() ? "" : "+") + program_.kernels[k].op;
    os << "  " << formatFixed(100.0 * double(ns) / double(std::max<uint64_t>(total, 1)), 1)
       << "%  " << formatFixed(double(ns) / 1e3 / steady, 1) << " us  ("
       << formatFixed(double(profile_[s].firstNs.load()) / 1e3, 1) << ")  step " << s << " ["
       << ops << "] " << step.kernel->describe()
       << (step.kernel->passedOver.empty() ? "" : " (passed over " + step.kernel->passedOver + ")")
       << (step.declined.empty() ? "" : " (did not fuse " + step.declined + ")") << "\n";
  }
  std::string text = os.str();
  if (profilePath_ == "-") {
    std::fputs(text.c_str(), stderr);
    return;
  }
  if (FILE *f = std::fopen(profilePath_.c_str(), "a")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  } else {
    std::fprintf(stderr, "cgc CPU driver: cannot write the profile to %s\n",
                 profilePath_.c_str());
  }
}

} // namespace cgc::cpu
