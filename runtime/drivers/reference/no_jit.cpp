//===- no_jit.cpp - The reference driver built without its MLIR JIT -------===//
//
// Linked instead of cgc_reference_jit when the project is built without the
// compiler (-DCGC_ENABLE_COMPILER=OFF) or before compiler/Targets/Reference
// exists. The driver then reports D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED,
// answers no MLIR_EXCHANGE, and fails MLIR-program creation with a message
// saying this build has no MLIR JIT; compute pipelines (kernel programs) work.

#include "jit.h"

namespace cgc::ref {
const JitInterface *getJitInterface() { return nullptr; }
} // namespace cgc::ref
