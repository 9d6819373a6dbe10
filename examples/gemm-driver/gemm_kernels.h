//===- gemm_kernels.h - What the gemm driver runs, and how ------*- C++ -*-===//
//
// The example third-party driver's own kernels: matrix products (cgc_op.matmul
// and cgc_op.gemm) and the epilogue it declares (cgc_op.add of a bias or a
// residual, cgc_op.relu, cgc_op.sigmoid, cgc_op.tanh), float32 only, over the
// kernel program form (cgc/kernel_program.h) its compiler lowers Partition IR
// to. `supports` is the one rule its specialization answers and its
// CreateStateObject both apply. No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_EXAMPLES_GEMM_DRIVER_GEMM_KERNELS_H
#define CGC_EXAMPLES_GEMM_DRIVER_GEMM_KERNELS_H

#include "cgc/kernel_program.h"

#include <string>
#include <vector>

namespace gemm {

/// True when `kernel` is one this driver runs; otherwise false with the
/// reason ("cgc_op.matmul: operand 1 is float16; this driver runs float32").
bool supports(const cgc::KernelDesc &kernel, std::string &why);

/// Runs the kernels of `program` in order, binding i at `bindings[i]` and
/// temporaries in `temporaries` (at least temporaryBytes(program), 64-byte
/// aligned).
void run(const cgc::KernelProgram &program, const std::vector<uint8_t *> &bindings,
         uint8_t *temporaries);

/// The per-run bytes of `program`'s temporaries, each at its alignment.
uint64_t temporaryBytes(const cgc::KernelProgram &program, std::vector<uint64_t> &offsets);

} // namespace gemm

#endif // CGC_EXAMPLES_GEMM_DRIVER_GEMM_KERNELS_H
