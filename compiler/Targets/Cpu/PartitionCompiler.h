//===- PartitionCompiler.h - The CPU driver's compiler ----*- C++ -*-===//
//
// What the CPU driver compiles an MLIR program into, in two settings
// that share this code (DESIGN.md: "the same code the offline SODB/PSDB
// precompiler will call"):
//
// - at CreateStateObject, through the driver's JIT module
//   (Jit.cpp, runtime/drivers/cpu/jit.h): compilePartition;
// - offline, when cgc-compile packages a model: precompilePartition wraps
//   the same kernel program in a precompiled-program blob keyed by the
//   driver's compiler identity and the bytecode's digest
//   (cgc/precompiled_program.h), which the driver then uses instead of
//   compiling (the spec's PSDB).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_CPU_PARTITIONCOMPILER_H
#define CGC_COMPILER_TARGETS_CPU_PARTITIONCOMPILER_H

#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc::cpu_target {

/// Lowers Partition IR bytecode (read as untrusted input, in an MLIR context
/// of its own; calls may run concurrently) to the optimized kernel program
/// the CPU driver runs. False with a message naming what cannot be
/// read or lowered.
bool compilePartition(const void *bytecode, size_t size, KernelProgram &program,
                      std::string &error);

/// The identity of this compiler (cmake/CompilerIdentity.cmake): the key of
/// the programs it precompiles; the driver built from the same sources
/// reports the same.
const char *compilerIdentity();

/// compilePartition, then the result as a precompiled-program blob: key
/// {compilerIdentity(), MD5 of `bytecode`}, one 'CGKP' part.
bool precompilePartition(ByteView bytecode, std::vector<uint8_t> &blob, std::string &error);

} // namespace cgc::cpu_target

#endif // CGC_COMPILER_TARGETS_CPU_PARTITIONCOMPILER_H
