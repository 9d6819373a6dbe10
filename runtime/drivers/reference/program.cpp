//===- program.cpp - Compiled kernel programs of the reference driver -----===//

#include "program.h"

#include <algorithm>
#include <cstdlib>

#ifndef CGC_REF_HAVE_KERNELS
#define CGC_REF_HAVE_KERNELS 1
#endif

namespace cgc::ref {

// Until the kernel library (kernels/) has kernels, every program fails to
// compile with a message instead of running wrong or crashing.
static std::unique_ptr<Kernel> makeKernel(const KernelDesc &desc, const KernelOptions &options,
                                          std::string &error) {
#if CGC_REF_HAVE_KERNELS
  return createKernel(desc, options, error);
#else
  error = desc.op + ": this build's kernel library (runtime/drivers/reference/kernels) has no "
                    "kernels yet";
  return nullptr;
#endif
}

static std::unique_ptr<Kernel> makeFusedKernel(const KernelDesc &anchor,
                                               const std::vector<KernelDesc> &epilogue,
                                               const KernelOptions &options,
                                               std::string &reason) {
#if CGC_REF_HAVE_KERNELS
  return createFusedKernel(anchor, epilogue, options, reason);
#else
  reason = "no kernels in this build";
  return nullptr;
#endif
}

static bool isAnchor(const std::string &op) {
  return op == "cgc_op.convolution" || op == "cgc_op.matmul" || op == "cgc_op.gemm";
}

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

static bool overlaps(const KernelOperand &a, const KernelOperand &b) {
  if (a.storage != b.storage || a.index != b.index)
    return false;
  uint64_t aEnd = a.offset + a.byteSpan(), bEnd = b.offset + b.byteSpan();
  return a.offset < bEnd && b.offset < aEnd;
}

/// True if any input of any kernel other than (`except`, input 0) reads
/// bytes of `value`.
static bool readElsewhere(const KernelProgram &program, const KernelOperand &value,
                          size_t except) {
  for (size_t k = 0; k < program.kernels.size(); ++k)
    for (size_t i = 0; i < program.kernels[k].inputs.size(); ++i) {
      if (k == except && i == 0)
        continue;
      const auto &in = program.kernels[k].inputs[i];
      if (in && overlaps(*in, value))
        return true;
    }
  return false;
}

std::shared_ptr<CompiledProgram> CompiledProgram::create(KernelProgram program,
                                                         std::string &error) {
  if (!program.validate(error))
    return nullptr;
  auto result = std::shared_ptr<CompiledProgram>(new CompiledProgram());
  CompiledProgram &p = *result;
  p.program_ = std::move(program);
  const KernelProgram &kp = p.program_;

  // Temporaries, each aligned, in one scratch block per run.
  for (const auto &t : kp.temporaries) {
    uint64_t align = std::max<uint64_t>(t.alignment, 64);
    p.scratchBytes_ = (p.scratchBytes_ + align - 1) / align * align;
    p.temporaryOffsets_.push_back(p.scratchBytes_);
    p.scratchBytes_ += t.bytes;
  }

  for (size_t k = 0; k < kp.kernels.size();) {
    const KernelDesc &desc = kp.kernels[k];
    // An anchor and the elementwise chain that consumes only its result.
    if (isAnchor(desc.op) && desc.outputs.size() == 1) {
      std::vector<KernelDesc> chain;
      KernelOperand current = desc.outputs[0];
      for (size_t j = k + 1; j < kp.kernels.size(); ++j) {
        const KernelDesc &next = kp.kernels[j];
        if (current.storage != KernelOperand::Storage::Temporary || next.outputs.size() != 1 ||
            next.inputs.empty() || !next.inputs[0] || !(*next.inputs[0] == current) ||
            next.outputs[0].shape != desc.outputs[0].shape || readElsewhere(kp, current, j))
          break;
        chain.push_back(next);
        current = next.outputs[0];
      }
      bool fused = false;
      while (!chain.empty() && !fused) {
        Step step;
        step.inputs = desc.inputs;
        for (const KernelDesc &e : chain)
          step.inputs.insert(step.inputs.end(), e.inputs.begin() + 1, e.inputs.end());
        std::string reason;
        step.kernel = makeFusedKernel(desc, chain, optionsFor(kp, step.inputs), reason);
        if (!step.kernel) {
          chain.pop_back(); // try a shorter epilogue
          continue;
        }
        step.outputs = chain.back().outputs;
        for (size_t i = 0; i <= chain.size(); ++i)
          step.kernels.push_back(k + i);
        k += chain.size() + 1;
        p.steps_.push_back(std::move(step));
        fused = true;
      }
      if (fused)
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
  return result;
}

size_t CompiledProgram::fusedCount() const {
  size_t n = 0;
  for (const Step &s : steps_)
    n += s.kernels.size() - 1;
  return n;
}

CompiledProgram::~CompiledProgram() {
  for (uint8_t *s : freeScratch_)
    std::free(s);
}

uint8_t *CompiledProgram::acquireScratch() const {
  if (scratchBytes_ == 0)
    return nullptr;
  {
    std::lock_guard<std::mutex> lock(scratchMutex_);
    if (!freeScratch_.empty()) {
      uint8_t *s = freeScratch_.back();
      freeScratch_.pop_back();
      return s;
    }
  }
  size_t bytes = (scratchBytes_ + 63) / 64 * 64;
  auto *s = static_cast<uint8_t *>(std::aligned_alloc(64, bytes));
  if (!s)
    throw std::bad_alloc();
  return s;
}

void CompiledProgram::releaseScratch(uint8_t *scratch) const {
  if (!scratch)
    return;
  std::lock_guard<std::mutex> lock(scratchMutex_);
  freeScratch_.push_back(scratch);
}

void CompiledProgram::run(const std::vector<uint8_t *> &bindings, ThreadPool &pool) const {
  uint8_t *scratch = acquireScratch();
  struct Release {
    const CompiledProgram *p;
    uint8_t *s;
    ~Release() { p->releaseScratch(s); }
  } release{this, scratch};
  auto address = [&](const KernelOperand &o) -> uint8_t * {
    if (o.storage == KernelOperand::Storage::Binding)
      return bindings[o.index] + o.offset;
    return scratch + temporaryOffsets_[o.index] + o.offset;
  };
  std::vector<const void *> inputs;
  std::vector<void *> outputs;
  for (const Step &step : steps_) {
    inputs.clear();
    outputs.clear();
    for (const auto &in : step.inputs)
      inputs.push_back(in ? address(*in) : nullptr);
    for (const auto &out : step.outputs)
      outputs.push_back(address(out));
    KernelArgs args;
    args.inputs = inputs.data();
    args.outputs = outputs.data();
    step.kernel->run(args, pool);
  }
}

} // namespace cgc::ref
