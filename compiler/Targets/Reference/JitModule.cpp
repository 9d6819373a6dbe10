//===- JitModule.cpp - libcgc_driver_reference_jit.so's entry point -------===//
//
// The reference driver's JIT as a module of its own: the driver dlopens it
// on first need (runtime/drivers/reference/jit_loader.cpp) and checks that
// it was built from the same sources (the compiler identity), so that a
// process running only precompiled programs never maps libMLIR.
//
//===----------------------------------------------------------------------===//

#include "jit.h"

#include "compiler/Targets/Reference/PartitionCompiler.h"

extern "C" __attribute__((visibility("default"))) const cgc::ref::JitInterface *
CgcReferenceJitOpen(uint32_t version, const char **identity) {
  if (identity)
    *identity = cgc::reference::compilerIdentity();
  return version == cgc::ref::kJitInterfaceVersion ? cgc::ref::getJitInterface() : nullptr;
}
