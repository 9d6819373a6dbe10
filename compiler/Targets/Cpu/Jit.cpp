//===- Jit.cpp - The CPU driver's MLIR JIT ---------------------------===//
//
// getJitInterface() of runtime/drivers/cpu/jit.h: what the CPU
// driver calls at CreateStateObject (compilePartition: the partition compiler
// of PartitionCompiler.h, which the offline precompiler shares) and for
// MLIR_EXCHANGE (exchange). The driver reaches it through the module
// libcgc_driver_cpu_jit.so (JitModule.cpp); tests and tools link it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Cpu/PartitionCompiler.h"
#include "compiler/Targets/Cpu/CpuTarget.h"
#include "jit.h"

namespace cgc {
namespace {

int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                 void *out, size_t *outSize) {
  return cpuDriverExchange(interface, in, inSize, out, outSize);
}

} // namespace

namespace cpu {
const JitInterface *getJitInterface() {
  static const JitInterface jit = {&cpu_target::compilePartition, &exchange};
  return &jit;
}
} // namespace cpu

} // namespace cgc
