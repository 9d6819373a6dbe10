//===- kernel_program_queries.h - Questions about a kernel program -*- C++ -*-===//
//
// Part of cgc's planning library (planning/): the questions about a kernel
// program (cgc/kernel_program.h) that the cpu target's rewrites
// (compiler/Targets/Cpu) and the CPU driver's step formation
// (runtime/drivers/cpu/program.cpp) must answer alike: who reads and
// writes which bytes, which kernels anchor a fusion, which elementwise
// chain follows an anchor. One definition each, linked by both.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PLANNING_KERNEL_PROGRAM_QUERIES_H
#define CGC_PLANNING_KERNEL_PROGRAM_QUERIES_H

#include "cgc/kernel_program.h"

#include <string>
#include <vector>

namespace cgc::planning {

/// True if `a` and `b` address common bytes of one binding or temporary.
inline bool overlaps(const KernelOperand &a, const KernelOperand &b) {
  if (a.storage != b.storage || a.index != b.index)
    return false;
  uint64_t aEnd = a.offset + a.byteSpan(), bEnd = b.offset + b.byteSpan();
  return a.offset < bEnd && b.offset < aEnd;
}

inline bool writes(const KernelDesc &k, const KernelOperand &value) {
  for (const KernelOperand &out : k.outputs)
    if (overlaps(out, value))
      return true;
  return false;
}

inline bool reads(const KernelDesc &k, const KernelOperand &value) {
  for (const auto &in : k.inputs)
    if (in && overlaps(*in, value))
      return true;
  return false;
}

inline bool touches(const KernelDesc &k, const KernelOperand &value) {
  return writes(k, value) || reads(k, value);
}

/// The kernels that write bytes of `value`.
inline std::vector<size_t> writersOf(const KernelProgram &program, const KernelOperand &value) {
  std::vector<size_t> writers;
  for (size_t k = 0; k < program.kernels.size(); ++k)
    if (writes(program.kernels[k], value))
      writers.push_back(k);
  return writers;
}

/// The kernels from `from` on that read bytes of `value`.
inline std::vector<size_t> readersOf(const KernelProgram &program, const KernelOperand &value,
                                     size_t from) {
  std::vector<size_t> readers;
  for (size_t k = from; k < program.kernels.size(); ++k)
    if (reads(program.kernels[k], value))
      readers.push_back(k);
  return readers;
}

/// True if any input of any kernel other than (`except`, input 0) reads
/// bytes of `value`: then a step that fuses kernel `except` after the
/// writer of `value` must still store it.
bool readElsewhere(const KernelProgram &program, const KernelOperand &value, size_t except);

/// Kernels a step may start with and fuse the elementwise ops after it
/// into: convolution, conv_transpose, matmul, gemm (any elementwise
/// epilogue the kernel library takes), and batch_norm (a leading relu or
/// clip only).
bool isFusionAnchor(const std::string &op);
/// The anchors whose kernels take any elementwise epilogue (not
/// batch_norm): where the cpu target's kernel check requires the
/// first op of the chain to fuse.
bool takesAnyEpilogue(const std::string &op);

/// The elementwise chain after anchor kernel `anchor` that consumes only
/// its result, longest first: each next kernel has one output of the
/// anchor's shape and reads the running value (a temporary no other kernel
/// reads) as its input 0. The kernels the driver tries to fuse into the
/// anchor's step, in order.
std::vector<size_t> epilogueChain(const KernelProgram &program, size_t anchor);

} // namespace cgc::planning

#endif // CGC_PLANNING_KERNEL_PROGRAM_QUERIES_H
