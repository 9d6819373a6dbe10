//===- ProgramQueries.h - Who reads and writes a kernel operand -*- C++ -*-===//
//
// The byte-range questions the kernel program rewrites (KernelPrograms.cpp,
// CopyChains.cpp) ask before they move a read or drop a layer. Private to
// the reference target.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_REFERENCE_PROGRAMQUERIES_H
#define CGC_COMPILER_TARGETS_REFERENCE_PROGRAMQUERIES_H

#include "cgc/kernel_program.h"

#include <vector>

namespace cgc::reference {

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

} // namespace cgc::reference

#endif // CGC_COMPILER_TARGETS_REFERENCE_PROGRAMQUERIES_H
