//===- CpuTarget.h - The CPU driver's target ----*- C++ -*-===//
//
// The compiler side of the CPU driver (runtime/drivers/cpu):
//
// - its declaration (CGC_SUBGRAPH_DECLARATION_REQUEST ->
//   CGC_SUBGRAPH_DECLARATION): the built-in patterns of patterns.mlir, or
//   the patterns file named by CGC_CPU_PATTERNS (or by the argument of
//   `--targets=cpu:FILE.mlir`), in the format of the file target
//   (cgc_pattern.pattern and cgc_pattern.reject_when ops in a cgc.module);
// - its specialization answers (CGC_SUBGRAPH_SPECIALIZATION_REQUEST ->
//   CGC_SUBGRAPH_SPECIALIZATION): a subgraph is lowered to the kernel program
//   the driver's JIT would build, and accepted only if the driver's kernel
//   library really creates its kernels and fuses each anchor with its
//   epilogue; a rejection says why, naming the op;
// - the JIT the driver calls at CreateStateObject (Jit.cpp, getJitInterface
//   of runtime/drivers/cpu/jit.h).
//
// The same exchange answers in-process (the registry's `cpu` kind) and
// through a device (MLIR_EXCHANGE -> DDI -> driver -> JIT table).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_CPU_CPUTARGET_H
#define CGC_COMPILER_TARGETS_CPU_CPUTARGET_H

#include "compiler/Targets/Target.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace cgc {

/// The origin written on the subgraphs the cpu target implements.
constexpr llvm::StringLiteral kCpuTargetName = "cpu";

/// Names a patterns file that replaces the built-in declaration.
constexpr const char kCpuPatternsEnvVar[] = "CGC_CPU_PATTERNS";

/// The built-in declaration (compiler/Targets/Cpu/patterns.mlir, as
/// text).
llvm::StringRef getCpuBuiltinPatterns();

/// Creates the cpu target. `patternsPath` names a patterns file that
/// replaces the built-in declaration; when empty, $CGC_CPU_PATTERNS
/// does if set. Errors name the file. Whatever the file's module is called,
/// the target's name is "cpu".
std::optional<TargetHandle> createCpuTarget(llvm::StringRef patternsPath,
                                                  std::string &error);

/// The exchange the driver's JIT table exports: the cpu target with
/// the declaration $CGC_CPU_PATTERNS selects at the time of the call
/// (targets are kept per file). A patterns file that cannot be read fails
/// the exchange with E_FAIL and a message on stderr: never a silent switch to
/// the built-in patterns.
int32_t cpuDriverExchange(const Guid &interface, const void *in,
                                size_t inSize, void *out, size_t *outSize);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_CPU_CPUTARGET_H
