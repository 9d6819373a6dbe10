//===- CGCDialect.h - The cgc dialect ---------------------------*- C++ -*-===//

#ifndef CGC_IR_CGCDIALECT_H
#define CGC_IR_CGCDIALECT_H

#include "mlir/Bytecode/BytecodeImplementation.h"
#include "mlir/IR/Dialect.h"

#include "cgc/IR/CGCDialect.h.inc"

namespace cgc {

/// The semantic version of the CGC dialects, as written into bytecode. All CGC
/// dialects share one version (see cgc/version.h).
struct IRVersion : public mlir::DialectVersion {
  IRVersion(uint64_t major, uint64_t minor, uint64_t patch)
      : major(major), minor(minor), patch(patch) {}
  static IRVersion current();
  uint64_t major, minor, patch;
  std::string str() const;
};

/// Writes the version to bytecode: the one configured on the writer for
/// `dialectName` (tests use this to produce bytecode of other versions), or
/// the current one.
void writeIRVersion(mlir::DialectBytecodeWriter &writer,
                    llvm::StringRef dialectName);
/// Reads a version written by writeIRVersion and rejects a newer major
/// version with an error naming both versions.
std::unique_ptr<mlir::DialectVersion>
readIRVersion(mlir::DialectBytecodeReader &reader, llvm::StringRef dialectName);

} // namespace cgc

#endif // CGC_IR_CGCDIALECT_H
