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

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc::cpu {

inline constexpr const char *kAdapterFamily = "cgc-cpu-x86-64";
inline constexpr uint64_t kAbiVersion =
    uint64_t(KernelProgram::kVersion) << 8 | PrecompiledKey::kFormat;
/// No application-specific compilation: profile version 0 for every
/// application.
inline constexpr uint64_t kApplicationProfileVersion = 0;

//===----------------------------------------------------------------------===//
// Prepared constants (prepared.h): one PSDB value per program and set of
// constant contents, written by the plugin, read by the driver.
//===----------------------------------------------------------------------===//

/// "<family>/prepared/<partition MD5>/<MD5 of the bindings' digests and the
/// preparation signature>".
std::string preparedValueKey(const Md5Digest &partition,
                             const std::vector<std::array<uint8_t, 16>> &digests,
                             const std::string &signature);

/// A prepared-constants value:
///   'CGPR'  uint32 version (1), uint32 block count, uint32 0
///   per block: uint32 key bytes, uint32 0, uint64 offset, uint64 bytes,
///              then the key, padded to 8 bytes
///   the blocks, each at a multiple of 4096 from the value's start (the
///   runtime maps the value page-aligned, so blocks are too)
struct PreparedBlockRef {
  std::string key;
  const void *data = nullptr;
  size_t bytes = 0;
};
std::vector<uint8_t> writePreparedValue(const std::vector<PreparedBlockRef> &blocks);
/// The blocks of a value (pointers into it); false with a message for a
/// malformed one.
bool readPreparedValue(const void *value, size_t size, std::vector<PreparedBlockRef> &blocks,
                       std::string &error);

} // namespace cgc::cpu

#endif // CGC_CPU_COMPILER_TARGET_H
