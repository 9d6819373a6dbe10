//===- Package.h - Output IR -> compiled model ------------------*- C++ -*-===//
//
// Writes the compiled model container (cgc/compiled_model.h) for an Output IR
// module: the Output IR, per partition its isolated Partition IR, bind
// points and (for fallback partitions) kernel program or (for partitions of
// a target with an offline compiler) precompiled program, the execution plan
// and the constants. The plan is built from the program: its views, barriers
// and invokes, nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PACKAGE_PACKAGE_H
#define CGC_COMPILER_PACKAGE_PACKAGE_H

#include "cgc/IR/CGCOps.h"
#include "cgc/compiled_model.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace cgc {

/// A named constant's bytes as the importer's ConstantStore holds them.
struct ConstantData {
  llvm::ArrayRef<uint8_t> bytes;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  llvm::ArrayRef<int64_t> shape;
};
/// The data of a named constant, or std::nullopt if there is none.
using ConstantBytes =
    std::function<std::optional<ConstantData>(llvm::StringRef name)>;

struct PackageOptions {
  /// Alignment of the constants blob in the file (the runtime maps the file
  /// and uses the constants in place).
  uint64_t pageAlignment = 4096;
  /// Store, for each MLIR program whose target has an offline compiler
  /// (findPrecompiler: the cpu target), its precompiled program (a
  /// 'CGPC' part, the driver's cached blob), so that the driver need not
  /// compile it at load. A partition its target's compiler rejects is then
  /// an error at the partition, here rather than at load.
  bool precompile = true;
};

/// The execution plan of an Output IR module (without part numbers for the
/// constants and programs, which packageCompiledModel fills in). Errors are
/// emitted at the op.
mlir::FailureOr<ExecutionPlan> buildExecutionPlan(ModuleOp module);

/// A packaged compiled model. The small parts are owned; the constants are
/// referenced where the ConstantBytes callback found them, which must stay
/// alive until the model is written.
class PackagedModel {
public:
  /// Streams the container (no copy of the constants).
  bool writeTo(llvm::raw_ostream &os, std::string &error) const;
  /// Writes the container to a file in one pass over the constants (the
  /// digest is hashed while writing and patched in at the end).
  bool writeToFile(llvm::StringRef path, std::string &error) const;
  /// The whole container in memory.
  std::vector<uint8_t> getBytes() const;
  const ExecutionPlan &getPlan() const { return plan; }

private:
  friend mlir::FailureOr<PackagedModel>
  packageCompiledModel(ModuleOp, const ConstantBytes &, const PackageOptions &);
  ContainerWriter writer;
  ExecutionPlan plan;
};

/// The compiled model container of an Output IR module. Errors (a constant
/// without data or of another type, a partition that cannot be lowered, ...)
/// are emitted at the op.
mlir::FailureOr<PackagedModel>
packageCompiledModel(ModuleOp module, const ConstantBytes &constants,
                     const PackageOptions &options = {});

} // namespace cgc

#endif // CGC_COMPILER_PACKAGE_PACKAGE_H
