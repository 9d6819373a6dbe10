//===- CompilerModule.cpp - libcgc_compiler.so: ONNX -> compiled model ----===//
//
// The module the runtime loads to compile an ONNX model for a device
// (cgc/compiler_module.h): the same import, pipeline and packaging as
// cgc-compile, in memory, with the device's declared patterns first.
//
//===----------------------------------------------------------------------===//

#include "cgc/compiler_module.h"

#include "compiler/Import/Importer.h"
#include "compiler/Import/Locations.h"
#include "compiler/InitAll.h"
#include "compiler/Package/Package.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Targets/Device/DeviceTarget.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;

namespace cgc::compiler_module {
namespace {

bool compileOnnx(const Request &request, std::vector<uint8_t> &model, std::string &error) {
  auto say = [&](const std::string &text) {
    if (request.message)
      request.message(text);
  };
  auto stage = [&](const std::string &name) {
    if (request.progress)
      request.progress(name);
  };
  DialectRegistry registry;
  registerAllDialects(registry);
  registerImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // Diagnostics name the ONNX node; collect them for the error message.
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  ONNXDiagnosticHandler handler(&context, os);
  // Registered last, so it sees each diagnostic first: it collects the ONNX
  // nodes errors point at and lets the printing handler run too.
  std::set<std::string> errorNodes;
  ScopedDiagnosticHandler nodeCollector(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error || !request.errorNode)
      return failure();
    auto collect = [&](Location where) {
      where->walk([&](Location loc) {
        if (std::optional<ONNXNodeLocInfo> info = getONNXNodeLocInfo(loc);
            info && !info->node.empty() && errorNodes.insert(info->node.str()).second)
          request.errorNode(info->node.str());
        return WalkResult::advance();
      });
    };
    collect(diag.getLocation());
    for (Diagnostic &note : diag.getNotes()) // e.g. each unsupported node
      collect(note.getLocation());
    return failure();
  });
  auto failed = [&](const std::string &what) {
    os.flush();
    error = what + " failed";
    if (!diagnostics.empty())
      error += ":\n" + diagnostics;
    while (!error.empty() && error.back() == '\n')
      error.pop_back();
    return false;
  };

  ImportOptions importOptions;
  importOptions.dataDependentRows = request.dataDependentRows;
  if (request.maxLoopIterations > 0)
    importOptions.maxLoopIterations = request.maxLoopIterations;
  for (const std::string &shape : request.inputShapes)
    if (std::string message = parseInputShapeOption(shape, importOptions); !message.empty()) {
      error = "--input-shape " + shape + ": " + message;
      return false;
    }
  for (const std::string &freeze : request.freezeInputs)
    if (std::string message = parseFreezeInputOption(freeze, importOptions); !message.empty()) {
      error = "--freeze-input " + freeze + ": " + message;
      return false;
    }

  // The device's target first (its patterns through MLIR_EXCHANGE).
  std::vector<std::string> targets = request.targets;
  DeviceTargetInfo info;
  if (request.d3d12Device) {
    if (!describeDeviceTarget(device::retainDevice(request.d3d12Device),
                              request.deviceLabel.empty() ? "the device" : request.deviceLabel,
                              info, error))
      return false;
    say("compiling for " + describeDevice(info));
  }
  ScopedDeviceTarget deviceTarget(info);
  deviceTarget.prependTo(targets);

  stage("importing");
  FailureOr<ImportedModel> imported =
      request.onnx ? importONNXBuffer(llvm::MemoryBuffer::getMemBuffer(
                                          StringRef(static_cast<const char *>(request.onnx),
                                                    request.onnxSize),
                                          request.path, /*RequiresNullTerminator=*/false),
                                      request.path, importOptions, context)
                   : importONNX(request.path, importOptions, context);
  if (mlir::failed(imported))
    return failed("import");

  stage("lowering");
  PassManager pm(&context, ModuleOp::getOperationName());
  LowerToOutputIROptions lowerOptions;
  lowerOptions.targets = ArrayRef<std::string>(targets);
  buildLowerToOutputIRPipeline(pm, lowerOptions);
  if (mlir::failed(pm.run(imported->module->getOperation())))
    return failed("lowering");
  say("targets claimed:\n" + describeClaims(imported->module->getOperation()));

  stage("packaging");
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

bool describeDevice(void *d3d12Device, DeviceDescription &description, std::string &error) {
  DeviceTargetInfo info;
  if (!describeDeviceTarget(device::retainDevice(d3d12Device), "the device", info, error))
    return false;
  description.tier = info.caps.tierName();
  description.target = info.target ? info.target->name : "";
  description.patterns = info.patterns;
  description.unavailable = info.unavailable;
  return true;
}

} // namespace
} // namespace cgc::compiler_module

extern "C" __attribute__((visibility("default"))) const cgc::compiler_module::Interface *
CgcCompilerModuleOpen(uint32_t version) {
  static const cgc::compiler_module::Interface module = {&cgc::compiler_module::compileOnnx,
                                                         &cgc::compiler_module::describeDevice};
  return version == cgc::compiler_module::kVersion ? &module : nullptr;
}
