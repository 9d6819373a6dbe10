//===- ImportStage.cpp - cgc-compile's import flags and stages ------------===//
//
//   --emit=input-ir    the CGC Input IR of the model (text, or bytecode with
//                      --emit-bytecode)
//   --emit=constants   one line per constant of the ConstantStore: name,
//                      dtype, shape, bytes and an FNV-1a hash of the bytes
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

using namespace mlir;

namespace cgc::tool {
namespace {

struct ImportFlags {
  std::vector<std::string> inputShapes;
  std::vector<std::string> frozenInputs;
  bool skipOnnxShapeInference = false;
  bool noDataDependentRows = false;
  int64_t maxLoopIterations = ImportOptions().maxLoopIterations;
};

LogicalResult emitInputIR(Session &session) {
  FailureOr<ImportedModel *> model = session.getImportedModel();
  if (failed(model))
    return failure();
  return session.writeIR((*model)->module->getOperation());
}

uint64_t fnv1a(ArrayRef<uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

LogicalResult emitConstants(Session &session) {
  FailureOr<ImportedModel *> model = session.getImportedModel();
  if (failed(model))
    return failure();
  std::unique_ptr<llvm::raw_ostream> os = session.openOutput();
  if (!os)
    return failure();
  const ConstantStore &constants = (*model)->constants;
  *os << "# " << constants.size() << " constants, "
      << constants.getTotalBytes() << " bytes\n";
  for (const ConstantStore::Entry &entry : constants) {
    *os << entry.name << " " << cgc_dtype_name(entry.dtype) << " [";
    for (size_t i = 0; i < entry.shape.size(); ++i)
      *os << (i ? "," : "") << entry.shape[i];
    *os << "] " << entry.byteSize << " bytes fnv1a="
        << llvm::format_hex_no_prefix(fnv1a(entry.getBytes()), 16) << "\n";
  }
  return success();
}

} // namespace

void registerImportStages(Driver &driver) {
  auto flags = std::make_shared<ImportFlags>();
  driver.addOptionGroup(OptionGroup{
      [flags](CLI::App &app, Session &) {
        app.add_option("--input-shape", flags->inputShapes,
                       "Static shape of a graph input, NAME=D0xD1x... "
                       "(repeatable)")
            ->allow_extra_args(false)
            ->group("Import");
        app.add_option("--freeze-input", flags->frozenInputs,
                       "Bind a graph input to the tensor in FILE.pb (a "
                       "serialized onnx.TensorProto), NAME=FILE.pb "
                       "(repeatable)")
            ->allow_extra_args(false)
            ->group("Import");
        app.add_flag("--skip-onnx-shape-inference",
                     flags->skipOnnxShapeInference,
                     "Do not run ONNX's shape inference (only cgc's own "
                     "shape functions check the model)")
            ->group("Import");
        app.add_flag("--no-data-dependent-rows", flags->noDataDependentRows,
                     "Refuse outputs whose number of rows depends on the "
                     "values (NonMaxSuppression), for an application that "
                     "does not read each run's rows (cgc_context_output_rows)")
            ->group("Import");
        app.add_option("--max-loop-iterations", flags->maxLoopIterations,
                       "Iterations a Loop whose trip count or condition is "
                       "computed at run time is compiled for; a run that "
                       "needs more fails")
            ->check(CLI::Range(int64_t(1), int64_t(4096)))
            ->group("Import");
      },
      [flags](Session &session) -> std::string {
        session.importOptions.onnxShapeInference =
            !flags->skipOnnxShapeInference;
        session.importOptions.dataDependentRows = !flags->noDataDependentRows;
        session.importOptions.maxLoopIterations = flags->maxLoopIterations;
        for (const std::string &text : flags->inputShapes) {
          std::string error = parseInputShapeOption(text, session.importOptions);
          if (!error.empty())
            return error;
        }
        for (const std::string &text : flags->frozenInputs) {
          std::string error =
              parseFreezeInputOption(text, session.importOptions);
          if (!error.empty())
            return error;
        }
        return "";
      }});
  driver.addStage(EmitStage{"input-ir",
                            "the CGC Input IR (a cgc.module with the entry "
                            "point @main)",
                            emitInputIR});
  driver.addStage(EmitStage{"constants",
                            "the constants store: name, dtype, shape, size "
                            "and hash of every constant",
                            emitConstants});
}

} // namespace cgc::tool
