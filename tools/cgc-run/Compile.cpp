//===- Compile.cpp - ONNX -> compiled model, in memory --------------------===//
//
// libcgc_run_compiler.so, the module cgc-run loads to run an .onnx model
// (Compile.h): the same import, pipeline and packaging as cgc-compile.
//
//===----------------------------------------------------------------------===//

#include "Compile.h"

#include "compiler/Import/Importer.h"
#include "compiler/Import/Locations.h"
#include "compiler/InitAll.h"
#include "compiler/Package/Package.h"
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace cgc::run {
namespace {

bool compileOnnx(const std::string &path, const CompileOptions &options,
                 std::vector<uint8_t> &model, std::string &error) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics name the ONNX node; collect them for the error message.
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ONNXDiagnosticHandler handler(&context, os);
  auto failed = [&](const std::string &stage) {
    os.flush();
    error = stage + " failed";
    if (!diagnostics.empty())
      error += ":\n" + diagnostics;
    while (!error.empty() && error.back() == '\n')
      error.pop_back();
    return false;
  };

  ImportOptions importOptions;
  for (const std::string &shape : options.inputShapes)
    if (std::string message = parseInputShapeOption(shape, importOptions); !message.empty()) {
      error = "--input-shape " + shape + ": " + message;
      return false;
    }
  for (const std::string &freeze : options.freezeInputs)
    if (std::string message = parseFreezeInputOption(freeze, importOptions); !message.empty()) {
      error = "--freeze-input " + freeze + ": " + message;
      return false;
    }
  if (options.progress)
    options.progress("importing");
  FailureOr<ImportedModel> imported = importONNX(path, importOptions, context);
  if (mlir::failed(imported))
    return failed("import");

  if (options.progress)
    options.progress("lowering");
  PassManager pm(&context, ModuleOp::getOperationName());
  LowerToOutputIROptions lowerOptions;
  lowerOptions.targets = ArrayRef<std::string>(options.targets);
  buildLowerToOutputIRPipeline(pm, lowerOptions);
  if (mlir::failed(pm.run(imported->module->getOperation())))
    return failed("lowering");

  if (options.progress)
    options.progress("packaging");
  const ConstantStore &store = imported->constants;
  FailureOr<PackagedModel> packaged = packageCompiledModel(
      *imported->module, [&](StringRef name) -> std::optional<ConstantData> {
        const ConstantStore::Entry *entry = store.lookup(name);
        if (!entry)
          return std::nullopt;
        return ConstantData{entry->getBytes(), entry->dtype, entry->shape};
      });
  if (mlir::failed(packaged))
    return failed("packaging");
  model = packaged->getBytes();
  return true;
}

} // namespace
} // namespace cgc::run

extern "C" __attribute__((visibility("default"))) const cgc::run::CompilerInterface *
CgcRunCompilerOpen(uint32_t version) {
  static const cgc::run::CompilerInterface compiler = {&cgc::run::compileOnnx};
  return version == cgc::run::kCompilerInterfaceVersion ? &compiler : nullptr;
}
