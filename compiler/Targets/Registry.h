//===- Registry.h - Targets by name -----------------------------*- C++ -*-===//
//
// Resolves the `--target` values of cgc-compile and of the pipeline passes:
// `KIND` or `KIND:ARGUMENT`, in priority order. Built in:
//
//   fallback               the target of last resort (always appended last)
//   patterns:FILE.mlir     a target whose patterns come from a file
//   cpu[:FILE.mlir]  the CPU driver's compiler side
//                          (compiler/Targets/Cpu)
//   device[:NAME|PATH]     the patterns a D3D12 device's driver declares
//                          through MLIR_EXCHANGE (compiler/Targets/Device);
//                          the default device without an argument
//   plugin:PATH[@FAMILY]   the patterns a compiler plugin declares for an
//                          adapter family, through its GetCaps: offline,
//                          no device (docs/precompilation.md)
//
// Other targets (device-backed ones) register a kind with
// registerTargetKind.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_REGISTRY_H
#define CGC_COMPILER_TARGETS_REGISTRY_H

#include "compiler/Targets/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cgc {

/// Creates a target from the text after `KIND:` (empty when there is none).
using TargetFactory = std::function<std::optional<TargetHandle>(
    llvm::StringRef argument, std::string &error)>;

/// Registers a kind of target. A later registration of the same kind
/// replaces the earlier one.
void registerTargetKind(llvm::StringRef kind, llvm::StringRef description,
                        TargetFactory factory);

/// Registers `fallback`, `patterns` and `cpu`. Idempotent.
void registerBuiltinTargets();

/// Resolves one `--target` value. Targets are created once per value and
/// process.
std::optional<TargetHandle> resolveTarget(llvm::StringRef spec,
                                          std::string &error);

/// Resolves a priority-ordered list and appends the fallback target unless it
/// is listed (it must then be last). Two targets may not share a name.
bool resolveTargets(llvm::ArrayRef<std::string> specs,
                    std::vector<TargetHandle> &targets, std::string &error);

/// Makes `spec` resolve to `handle` (a target created by the caller, such as
/// a device the application holds) until unregisterTargetInstance(spec).
void registerTargetInstance(llvm::StringRef spec, TargetHandle handle);
void unregisterTargetInstance(llvm::StringRef spec);

/// One line per registered kind: "  KIND  description".
std::string describeTargetKinds();

/// The offline compiler of the target named `targetName` (the origin on its
/// subgraphs, a plan program's `target`), or null if it has none. Built in:
/// `cpu` (the CPU driver's partition compiler).
PrecompileFn findPrecompiler(llvm::StringRef targetName);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_REGISTRY_H
