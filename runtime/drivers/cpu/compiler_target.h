//===- compiler_target.h - What the CPU driver's compiler produces -*- C++ -*-===//
//
// Shared by the CPU driver (pfnGetCompilerPropertiesCgc, its database
// lookups) and its compiler plugin (libcgc_compiler_plugin_cpu.so), so that
// a precompiled database the plugin writes is one the driver takes
// (docs/precompilation.md).
//
// - The adapter family: every x86-64 CPU. Kernel programs name ops, not
//   instructions; the kernels are chosen by CPUID when a program is
//   created, so one compiled form serves every CPU.
// - The ABI version: the kernel program format (KernelProgram::kVersion)
//   inside a precompiled-program blob of key format PrecompiledKey::kFormat.
// - The compiler version: from the compiler identity (compilerVersionNumber).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_COMPILER_TARGET_H
#define CGC_CPU_COMPILER_TARGET_H

#include "cgc/kernel_program.h"
#include "cgc/precompiled_program.h"

#include <cstdint>

namespace cgc::cpu {

inline constexpr const char *kAdapterFamily = "cgc-cpu-x86-64";
inline constexpr uint64_t kAbiVersion =
    uint64_t(KernelProgram::kVersion) << 8 | PrecompiledKey::kFormat;
/// No application-specific compilation: profile version 0 for every
/// application.
inline constexpr uint64_t kApplicationProfileVersion = 0;

} // namespace cgc::cpu

#endif // CGC_CPU_COMPILER_TARGET_H
