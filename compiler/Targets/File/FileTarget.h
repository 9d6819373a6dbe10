//===- FileTarget.h - A target whose patterns come from a file --*- C++ -*-===//
//
// `--target=patterns:FILE.mlir`: a target described by a cgc.module holding
// cgc_pattern.pattern ops (what it declares) and cgc_pattern.reject_when ops
// (what it rejects when asked to specialize a concrete match). Its name (the
// `origin` of the subgraphs it claims) is the module's symbol name, or the
// file's stem. Used by tests and by users who describe their own targets.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_FILE_FILETARGET_H
#define CGC_COMPILER_TARGETS_FILE_FILETARGET_H

#include "compiler/Targets/Target.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace cgc {

/// Reads and verifies the patterns file now; errors name the file.
std::optional<TargetHandle> createFileTarget(llvm::StringRef path,
                                             std::string &error);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_FILE_FILETARGET_H
