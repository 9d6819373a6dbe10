//===- JitModule.cpp - libcgc_driver_cpu_jit.so's entry point -------===//
//
// The CPU driver's JIT as a module of its own: the driver dlopens it
// on first need (runtime/drivers/cpu/jit_loader.cpp) and checks that
// it was built from the same sources (the compiler identity), so that a
// process running only precompiled programs never maps libMLIR.
//
//===----------------------------------------------------------------------===//

#include "jit.h"

#include "compiler/Targets/Cpu/PartitionCompiler.h"

extern "C" __attribute__((visibility("default"))) const cgc::cpu::JitInterface *
CgcCpuJitOpen(uint32_t version, const char **identity) {
  if (identity)
    *identity = cgc::cpu_target::compilerIdentity();
  return version == cgc::cpu::kJitInterfaceVersion ? cgc::cpu::getJitInterface() : nullptr;
}
