//===- jit.h - The reference driver's compiler interface --------*- C++ -*-===//
//
// The reference driver is a runtime component (no MLIR), but like a real
// driver it carries a compiler for the MLIR it receives: Partition IR at
// CreateStateObject and the MLIR_EXCHANGE requests of the subgraph
// interfaces. That compiler is the reference target's compiler side,
// compiler/Targets/Reference, which links MLIR and exports this table from
// the library `cgc_reference_jit`. The driver links it when the project is
// built with the compiler; a runtime-only build has no JIT and says so.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_JIT_H
#define CGC_REFERENCE_JIT_H

#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace cgc::ref {

struct JitInterface {
  /// Lowers the Partition IR in `bytecode` (MLIR bytecode of a cgc.module
  /// holding one cgc.partition and the subgraphs it invokes) to a kernel
  /// program whose bindings are the partition's bind points, in order.
  /// Returns false with a message naming the op that cannot be lowered.
  bool (*compilePartition)(const void *bytecode, size_t size,
                           KernelProgram &program, std::string &error);

  /// Answers an MLIR_EXCHANGE request (input and output are DX containers),
  /// following the size-query protocol of D3D12_FEATURE_DATA_MLIR_EXCHANGE:
  /// with `out == nullptr` or `*outSize` too small, stores the needed size
  /// in `*outSize` and returns 0 without writing. Returns an HRESULT value
  /// (0 = S_OK; DXGI_ERROR_UNSUPPORTED for an interface it does not answer).
  int32_t (*exchange)(const Guid &interface, const void *in, size_t inSize,
                      void *out, size_t *outSize);
};

/// The JIT linked into this build, or nullptr in a runtime-only build.
/// Defined by cgc_reference_jit (with the compiler) or by the driver's
/// no-JIT translation unit (without it).
const JitInterface *getJitInterface();

} // namespace cgc::ref

#endif // CGC_REFERENCE_JIT_H
