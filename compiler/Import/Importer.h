//===- Importer.h - ONNX to CGC Input IR ------------------------*- C++ -*-===//
//
// Imports an ONNX model into CGC Input IR: a `cgc.module` holding one
// `cgc.entry_point @main` over static-shaped tensors, plus a ConstantStore
// with the bytes of every constant the IR names with `cgc.constant`.
//
// Every op's location names the ONNX node it comes from (see
// compiler/Import/Locations.h); errors are reported through the context's
// diagnostic engine and the import returns failure. docs/importer.md
// describes the supported ops, the shape binding and the errors.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_IMPORTER_H
#define CGC_COMPILER_IMPORT_IMPORTER_H

#include "cgc/IR/CGCOps.h"
#include "compiler/Import/ConstantStore.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace cgc {

struct ImportOptions {
  /// Static shapes for graph inputs whose shapes are symbolic or unknown in
  /// the model, by input name (`--input-shape name=1x3x224x224`), or by
  /// position among the graph inputs that are not initializers as `#N`
  /// (`--input-shape '#0=1x3x224x224'`: what a tool that has the input
  /// files but not the model's input names passes).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Sequence graph inputs (and optional inputs holding a sequence), by
  /// name: how many tensors they hold (`--input-shape x=sequence(3)`).
  /// Tensor i is the model input `x[i]`, whose shape is given as any other
  /// (`--input-shape 'x[0]=2x3'`) where the model's element type leaves it
  /// open.
  std::map<std::string, int64_t> sequenceLengths;
  /// Optional graph inputs that hold no value (`--input-shape x=none`); an
  /// optional input not named here holds one, bound like any other input.
  std::set<std::string> absentInputs;
  /// Graph inputs bound to constants, by input name: the path of a file
  /// holding one serialized onnx.TensorProto (`--freeze-input name=x.pb`).
  std::map<std::string, std::string> frozenInputs;
  /// Results of constant subgraphs with at most this many elements are
  /// computed at import time.
  int64_t foldLimit = 1 << 16;
  /// Run ONNX's own shape inference (strict) and check every op's result
  /// type against it.
  bool onnxShapeInference = true;
  /// Allow graph outputs whose number of rows depends on the values
  /// (NonMaxSuppression's selected indices): each such output has its upper
  /// bound of rows and is named by the `cgc.rows_from` attribute of the
  /// entry point's result, which gives the extra int64 output holding each
  /// run's rows. Off, such ops are an error at the node: callers opt in
  /// when they read the rows back (the runtime's cgc_context_output_rows).
  bool dataDependentRows = false;
  /// How many iterations a Loop whose trip count or condition is computed
  /// at run time is unrolled to (each predicated on the run's values); a
  /// run that needs more fails (`--max-loop-iterations`).
  int64_t maxLoopIterations = 64;
};

struct ImportedModel {
  mlir::OwningOpRef<ModuleOp> module;
  ConstantStore constants;
};

/// Imports the model at `path`: binary ONNX (any extension), ONNX's textual
/// syntax (`.onnxtxt`) or protobuf text format (`.pbtxt`, `.textproto`).
/// External data is read relative to the model's directory.
mlir::FailureOr<ImportedModel> importONNX(llvm::StringRef path,
                                          const ImportOptions &options,
                                          mlir::MLIRContext &context);

/// Imports a binary ONNX model held in memory (an application's bytes: the
/// runtime's compile API). `name` labels it in diagnostics; external data is
/// read relative to `name`'s directory, and a model with external data but
/// no directory in `name` is refused. The bytes must outlive the returned
/// model's constants (they point into them).
mlir::FailureOr<ImportedModel>
importONNXBuffer(std::shared_ptr<llvm::MemoryBuffer> bytes, llvm::StringRef name,
                 const ImportOptions &options, mlir::MLIRContext &context);

/// Parses `name=D0xD1x...` (a rank-0 shape is written `name=`) into
/// `options.inputShapes`, `name=sequence(N)` into `options.sequenceLengths`
/// and `name=none` into `options.absentInputs`. Returns an error message,
/// empty on success.
std::string parseInputShapeOption(llvm::StringRef text, ImportOptions &options);
/// Parses `name=PATH` into `options.frozenInputs`.
std::string parseFreezeInputOption(llvm::StringRef text,
                                   ImportOptions &options);

/// Registers the dialects the importer creates ops of.
void registerImportDialects(mlir::DialectRegistry &registry);

} // namespace cgc

#endif // CGC_COMPILER_IMPORT_IMPORTER_H
