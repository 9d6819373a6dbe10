//===- Locations.h - Locations that name ONNX nodes -------------*- C++ -*-===//
//
// Every op the importer creates is located at the ONNX node it comes from:
//
//   loc("conv1"("Conv"("model.onnx":0:0)))
//
// a NameLoc with the node's name wrapping a NameLoc with its op type wrapping
// the model file. Nodes without a name are named after their first output.
// Diagnostics printed with ONNXDiagnosticHandler read
//
//   model.onnx: node 'conv1' (Conv): error: ...
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_LOCATIONS_H
#define CGC_COMPILER_IMPORT_LOCATIONS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace cgc {

/// The location of ONNX node `nodeName` of type `opType` in `file`.
mlir::Location getONNXNodeLoc(mlir::MLIRContext *context,
                              llvm::StringRef nodeName, llvm::StringRef opType,
                              llvm::StringRef file);
/// The location of a named value of the model (an initializer, a graph
/// input): loc("name"("model.onnx":0:0)).
mlir::Location getONNXValueLoc(mlir::MLIRContext *context,
                               llvm::StringRef name, llvm::StringRef file);
/// The location of the model file itself.
mlir::Location getONNXFileLoc(mlir::MLIRContext *context, llvm::StringRef file);

struct ONNXNodeLocInfo {
  llvm::StringRef file;
  llvm::StringRef node;   // empty for a file location
  llvm::StringRef opType; // empty for a value or file location
};
/// Decodes a location built by one of the functions above.
std::optional<ONNXNodeLocInfo> getONNXNodeLocInfo(mlir::Location loc);

/// "model.onnx: node 'conv1' (Conv)" for an ONNX node location,
/// "model.onnx: 'w1'" for a value, "model.onnx" for the file, and
/// "file:line:col" or MLIR's own spelling for other locations.
std::string describeLocation(mlir::Location loc);

/// Prints every diagnostic as `<describeLocation>: <severity>: <message>`,
/// followed by its notes, to `os` (stderr by default).
class ONNXDiagnosticHandler : public mlir::ScopedDiagnosticHandler {
public:
  explicit ONNXDiagnosticHandler(mlir::MLIRContext *context,
                                 llvm::raw_ostream &os = llvm::errs());

private:
  llvm::raw_ostream &os;
};

} // namespace cgc

#endif // CGC_COMPILER_IMPORT_LOCATIONS_H
