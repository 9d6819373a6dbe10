//===- Driver.h - The cgc-compile driver ------------------------*- C++ -*-===//
//
// cgc-compile is a list of emit stages and option groups around one session.
// A stage (`--emit=<name>`) runs on the session and writes its output; an
// option group adds its flags to the command line and checks them after
// parsing. Each lives in its own source file and is added in main() with one
// register call, so new stages (`output-ir`, `plan`, ...) and their options
// need no edit to the driver.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TOOLS_CGC_COMPILE_DRIVER_H
#define CGC_TOOLS_CGC_COMPILE_DRIVER_H

#include "compiler/Import/Importer.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
} // namespace CLI

namespace cgc::tool {

/// The state of one cgc-compile run.
class Session {
public:
  Session();

  mlir::MLIRContext &getContext() { return *context; }

  /// The positional model path, `-o` (`-` for stdout) and the emit stage.
  std::string inputPath;
  std::string outputPath = "-";
  std::string emit = "model";
  /// The value of a stage that takes one (`--emit=partition=2` -> "2").
  std::string emitValue;
  /// Write MLIR bytecode instead of text where a stage writes IR.
  bool emitBytecode = false;
  /// Print locations (the ONNX node of every op) with text IR.
  bool printLocations = false;

  /// True when the input is CGC IR (.mlir text or .mlirbc bytecode) rather
  /// than an ONNX model.
  bool inputIsCGCIR() const;

  /// Options of the importer (filled by the import option group).
  ImportOptions importOptions;

  /// The imported model (imported on first use). Failure has been reported.
  mlir::FailureOr<ImportedModel *> getImportedModel();

  /// Writes `op` to the output path as text or bytecode.
  mlir::LogicalResult writeIR(mlir::Operation *op);
  /// Opens the output path for text; null after an error was reported.
  std::unique_ptr<llvm::raw_ostream> openOutput(bool binary = false);

private:
  std::unique_ptr<mlir::MLIRContext> context;
  std::optional<ImportedModel> imported;
  bool importFailed = false;
};

/// An `--emit` value.
struct EmitStage {
  std::string name;
  std::string help;
  std::function<mlir::LogicalResult(Session &)> run;
  /// Written `--emit=<name>=<value>` (the value lands in Session::emitValue).
  bool takesValue = false;
};

/// Flags added to the command line, checked after parsing.
struct OptionGroup {
  std::function<void(CLI::App &, Session &)> addOptions;
  /// Returns an error message, empty if the options are valid.
  std::function<std::string(Session &)> finish;
};

class Driver {
public:
  void addStage(EmitStage stage) { stages.push_back(std::move(stage)); }
  void addOptionGroup(OptionGroup group) { groups.push_back(std::move(group)); }

  /// Parses the command line and runs the selected stage; returns the exit
  /// code.
  int run(int argc, char **argv);

private:
  std::vector<EmitStage> stages;
  std::vector<OptionGroup> groups;
};

/// The importer's flags (--input-shape, --freeze-input) and the stages
/// `input-ir` and `constants` (ImportStage.cpp).
void registerImportStages(Driver &driver);

/// The lowering pipeline's flags (--target, --partition-granularity,
/// --memory-report, --mlir-timing, ...) and the stages `output-ir`,
/// `partition=N`, `plan` and `model` (LowerStage.cpp).
void registerLowerStages(Driver &driver);

} // namespace cgc::tool

#endif // CGC_TOOLS_CGC_COMPILE_DRIVER_H
