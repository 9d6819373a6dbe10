//===- gemm_compiler.h - The gemm driver's compiler -------------*- C++ -*-===//
//
// Like a real driver, the example driver carries its own compiler for the
// MLIR it receives (gemm_compiler.cpp, the one MLIR file of the driver):
//   - MLIR_EXCHANGE: its declaration (one pattern: a matrix product and an
//     epilogue of up to two of add/relu/sigmoid/tanh) and its answers to
//     specialization requests (gemm::supports on every layer);
//   - CreateStateObject: Partition IR -> the kernel program it runs.
// No MLIR type crosses this header (the DDI file includes the D3D12 headers,
// whose macros clash with MLIR's).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_EXAMPLES_GEMM_DRIVER_GEMM_COMPILER_H
#define CGC_EXAMPLES_GEMM_DRIVER_GEMM_COMPILER_H

#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include <string>

namespace gemm {

/// An MLIR_EXCHANGE under the size-query protocol (compiler/Targets/Target.h).
int32_t exchange(const cgc::Guid &mlirInterface, const void *in, size_t inSize, void *out,
                 size_t *outSize);

/// Lowers the Partition IR bytecode of a program to the kernel program the
/// driver runs; false with a message naming the layer it does not run.
bool compilePartition(const void *bytecode, size_t size, cgc::KernelProgram &program,
                      std::string &error);

} // namespace gemm

#endif // CGC_EXAMPLES_GEMM_DRIVER_GEMM_COMPILER_H
