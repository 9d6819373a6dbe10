//===- no_jit.cpp - The tests' view of a build without the MLIR JIT -------===//
//
// Linked into D3D12CpuDriverTests instead of cgc_cpu_jit when the
// project is built without the compiler (-DCGC_ENABLE_COMPILER=OFF): the
// tests ask getJitInterface() whether this build has a JIT. The driver then
// has no JIT module (libcgc_driver_cpu_jit.so), reports
// D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED, answers no MLIR_EXCHANGE, and fails
// the creation of an MLIR program that does not come precompiled with a
// message saying it has no MLIR JIT; compute pipelines (kernel programs) work.

#include "jit.h"

namespace cgc::cpu {
const JitInterface *getJitInterface() { return nullptr; }
} // namespace cgc::cpu
