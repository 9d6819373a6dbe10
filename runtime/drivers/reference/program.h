//===- program.h - Compiled kernel programs of the reference driver -*- C++ -*-===//
//
// A KernelProgram (from the JIT for an MLIR program, or from a 'CGKP' part for
// a compute pipeline) turned into kernels once, at creation: an anchor
// (convolution, matmul, gemm) and the elementwise ops that follow it are
// fused when the intermediate is a temporary nobody else reads. Running a
// program resolves every operand (binding address + offset, or a temporary in
// scratch memory private to that run) and runs the steps in order.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_PROGRAM_H
#define CGC_REFERENCE_PROGRAM_H

#include "cgc/kernel_program.h"
#include "kernels.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cgc::ref {

class CompiledProgram {
public:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    /// Inputs in KernelArgs order (a fused kernel's extra operands last).
    std::vector<std::optional<KernelOperand>> inputs;
    std::vector<KernelOperand> outputs;
    /// Indices into the program's kernels this step computes.
    std::vector<size_t> kernels;
  };

  /// Creates the kernels of `program`. Returns null with a message naming
  /// the kernel that failed.
  static std::shared_ptr<CompiledProgram> create(KernelProgram program, std::string &error);

  /// Runs the program with binding i at `bindings[i]`.
  void run(const std::vector<uint8_t *> &bindings, ThreadPool &pool) const;

  const KernelProgram &program() const { return program_; }
  const std::vector<Step> &steps() const { return steps_; }
  /// How many of the program's kernels were fused into an anchor's kernel.
  size_t fusedCount() const;

private:
  uint8_t *acquireScratch() const;
  void releaseScratch(uint8_t *scratch) const;

  KernelProgram program_;
  std::vector<Step> steps_;
  std::vector<uint64_t> temporaryOffsets_;
  uint64_t scratchBytes_ = 0;
  mutable std::mutex scratchMutex_;
  mutable std::vector<uint8_t *> freeScratch_;

public:
  ~CompiledProgram();
};

} // namespace cgc::ref

#endif // CGC_REFERENCE_PROGRAM_H
