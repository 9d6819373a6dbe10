//===- jit.h - The CPU driver's compiler interface --------*- C++ -*-===//
//
// The CPU driver is a runtime component (no MLIR), but like a real
// driver it carries a compiler for the MLIR it receives: Partition IR at
// CreateStateObject and the MLIR_EXCHANGE requests of the subgraph
// interfaces. That compiler is the cpu target's compiler side,
// compiler/Targets/Cpu, which links MLIR. It is a module of its own,
// libcgc_driver_cpu_jit.so next to the driver, which the driver loads
// (jit_loader.cpp) only when it needs it: to compile an MLIR program that
// did not come precompiled, or to answer an MLIR_EXCHANGE. A process that
// only runs precompiled programs never maps libMLIR. A runtime-only build
// (no compiler) has no JIT module and says so.
//
// In-process users (the cpu target's tests, tools) link the static
// library cgc_cpu_jit and call getJitInterface() directly.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_JIT_H
#define CGC_CPU_JIT_H

#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace cgc::cpu {

struct JitInterface {
  /// Lowers the Partition IR in `bytecode` (MLIR bytecode of a cgc.module
  /// holding one cgc.partition and the subgraphs it invokes) to a kernel
  /// program whose bindings are the partition's bind points, in order.
  /// Returns false with a message naming the op that cannot be lowered.
  bool (*compilePartition)(const void *bytecode, size_t size,
                           KernelProgram &program, std::string &error);

  /// Answers an MLIR_EXCHANGE request (input and output are DX containers),
  /// following the size-query protocol of D3D12_FEATURE_DATA_MLIR_EXCHANGE:
  /// with `out == nullptr` stores the needed size in `*outSize` and returns
  /// 0; with `*outSize` too small stores the needed size and returns
  /// E_NOT_SUFFICIENT_BUFFER, writing nothing. Returns an HRESULT value
  /// (0 = S_OK; DXGI_ERROR_UNSUPPORTED for an interface it does not answer).
  int32_t (*exchange)(const Guid &interface, const void *in, size_t inSize,
                      void *out, size_t *outSize);
};

/// The JIT module's one export: `const JitInterface *CgcCpuJitOpen(
/// uint32_t version, const char **identity)` returns the table (null if it
/// does not serve `version`) and its compiler's identity.
constexpr uint32_t kJitInterfaceVersion = 1;
#define CGC_CPU_JIT_OPEN_NAME "CgcCpuJitOpen"
using JitOpenFn = const JitInterface *(*)(uint32_t version, const char **identity);
/// The module's file name, next to libcgc_driver_cpu.so.
#define CGC_CPU_JIT_MODULE "libcgc_driver_cpu_jit.so"
/// Names another JIT module (a path); set but empty: no JIT.
#define CGC_CPU_JIT_ENV "CGC_CPU_JIT"

/// The JIT table of the statically linked cgc_cpu_jit library (what
/// the module exports).
const JitInterface *getJitInterface();

//===----------------------------------------------------------------------===//
// The driver's side (jit_loader.cpp)
//===----------------------------------------------------------------------===//

/// The identity of the compiler this driver was built with: the key its
/// precompiled programs must carry (cgc/precompiled_program.h). It changes
/// with every change to the sources that decide what the JIT produces
/// (cmake/CompilerIdentity.cmake).
const char *compilerIdentity();

/// Where the driver finds its JIT: $CGC_CPU_JIT if set, else
/// libcgc_driver_cpu_jit.so in the driver's directory.
std::string jitModulePath();

/// Whether the JIT module is there (no load): what the driver reports as
/// its MLIR programs tier and interface support.
bool haveJitModule();

/// Loads the JIT module on first use (later calls return the same table;
/// it is never unloaded). Null with a message naming the path when it is
/// missing, cannot be loaded, or was built from other sources than this
/// driver (another compiler identity).
const JitInterface *loadJit(std::string &error);

} // namespace cgc::cpu

#endif // CGC_CPU_JIT_H
