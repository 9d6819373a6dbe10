//===- LowerStage.cpp - cgc-compile's lowering flags and stages -----------===//
//
//   --emit=output-ir     the CGC Output IR (the cgc-lower-to-output-ir pipeline)
//   --emit=partition=N   the isolated Partition IR of partition N (an index
//                        in program order, or a partition's name)
//   --emit=plan          the execution plan (JSON) the runtime reads
//   --emit=model         the compiled model (the default): one DX container
//
// Targets: --target (repeatable or comma-separated, in priority order) and
// --device NAME|PATH (the patterns a D3D12 device's driver declares through
// MLIR_EXCHANGE, first in priority). An ONNX model compiled with neither is
// compiled for the default device's patterns (the fallback target alone when
// that device declares none); Input IR (.mlir) for the fallback target. What
// each target claimed is printed to stderr for ONNX models.
//
// Flags: --target,
// --partition-granularity, --max-subgraphs, --alignment, --schedule,
// --no-in-place, --memory-report FILE (.txt table, .svg timeline, .html
// both; repeatable), --mlir-timing, --no-precompile (store no precompiled
// programs: the driver compiles every MLIR program at load).
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "compiler/Package/Package.h"
#include "compiler/Pipeline/Isolation.h"
#include "compiler/Pipeline/Pipeline.h"
#include "compiler/Targets/Device/DeviceTarget.h"
#include "compiler/Targets/Registry.h"
#include "cgc/checked.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

using namespace mlir;

namespace cgc::tool {
namespace {

struct LowerFlags {
  std::vector<std::string> targets;
  std::optional<std::string> device;
  std::string granularity = "target";
  unsigned maxSubgraphs = 0;
  uint64_t alignment = 64;
  std::string schedule = "min-memory";
  bool noInPlace = false;
  std::vector<std::string> memoryReports;
  bool timing = false;
  bool verifyPlan = false;
  bool noPrecompile = false;

  DefaultTimingManager timingManager;
  std::optional<TimingScope> root;
  bool lowered = false, loweringFailed = false;

  TimingScope &rootScope() {
    if (!root) {
      timingManager.setEnabled(timing);
      root.emplace(timingManager.getRootScope());
    }
    return *root;
  }
};

/// Imports and lowers the model once; later stages reuse the result.
FailureOr<ImportedModel *> lower(Session &session, LowerFlags &flags) {
  TimingScope &root = flags.rootScope();
  FailureOr<ImportedModel *> model;
  {
    TimingScope importTimer = root.nest("Import (ONNX -> Input IR)");
    model = session.getImportedModel();
  }
  if (failed(model) || flags.loweringFailed)
    return failure();
  if (flags.lowered)
    return model;

  // The device's target, first in priority: named by --device, or the
  // default device for an ONNX model compiled without --target.
  std::vector<std::string> targets = flags.targets;
  bool onnx = !session.inputIsCGCIR();
  DeviceTargetInfo device;
  if (flags.device || (targets.empty() && onnx)) {
    std::string error;
    if (!describeDeviceTarget(flags.device.value_or(""), device, error)) {
      llvm::errs() << "cgc-compile: error: " << error << "\n";
      flags.loweringFailed = true;
      return failure();
    }
    llvm::errs() << "cgc-compile: compiling for " << describeDevice(device) << "\n";
  }
  ScopedDeviceTarget deviceTarget(device);
  deviceTarget.prependTo(targets);

  PassManager pm(&session.getContext(), ModuleOp::getOperationName());
  LowerToOutputIROptions options;
  options.targets = ArrayRef<std::string>(targets);
  options.granularity = flags.granularity;
  options.maxSubgraphs = flags.maxSubgraphs;
  options.alignment = flags.alignment;
  options.inPlace = !flags.noInPlace;
  options.schedule = flags.schedule;
  options.memoryReport = ArrayRef<std::string>(flags.memoryReports);
  options.verify = flags.verifyPlan;
  buildLowerToOutputIRPipeline(pm, options);
  TimingScope lowerTimer = root.nest("Lower (Input IR -> Output IR)");
  pm.enableTiming(lowerTimer);
  if (failed(pm.run((*model)->module->getOperation()))) {
    flags.loweringFailed = true;
    return failure();
  }
  if (onnx)
    llvm::errs() << "cgc-compile: targets claimed:\n"
                 << describeClaims((*model)->module->getOperation());
  flags.lowered = true;
  return model;
}

LogicalResult emitOutputIR(Session &session, LowerFlags &flags) {
  FailureOr<ImportedModel *> model = lower(session, flags);
  if (failed(model))
    return failure();
  return session.writeIR((*model)->module->getOperation());
}

LogicalResult emitPartition(Session &session, LowerFlags &flags) {
  FailureOr<ImportedModel *> model = lower(session, flags);
  if (failed(model))
    return failure();
  ModuleOp module = *(*model)->module;
  // Index in program order (the plan's program numbers), or a name.
  PartitionOp partition;
  unsigned index;
  if (!StringRef(session.emitValue).getAsInteger(10, index)) {
    FailureOr<ExecutionPlan> plan = buildExecutionPlan(module);
    if (failed(plan))
      return failure();
    if (index < plan->programs.size())
      partition = findPartition(module, plan->programs[index].name);
  } else {
    partition = findPartition(module, session.emitValue);
  }
  if (!partition) {
    llvm::errs() << "cgc-compile: error: no partition '" << session.emitValue
                 << "'; the model has "
                 << llvm::range_size(module.getBody()->getOps<PartitionOp>())
                 << " partition(s), numbered in program order\n";
    return failure();
  }
  OwningOpRef<ModuleOp> isolated = isolatePartition(module, partition);
  return session.writeIR(*isolated);
}

/// Packages the lowered model (the constants are referenced, not copied).
FailureOr<PackagedModel> packageModel(Session &session, LowerFlags &flags) {
  FailureOr<ImportedModel *> model = lower(session, flags);
  if (failed(model))
    return failure();
  const ConstantStore &store = (*model)->constants;
  TimingScope packageTimer = flags.rootScope().nest("Package (compiled model)");
  PackageOptions options;
  options.precompile = !flags.noPrecompile;
  return packageCompiledModel(
      *(*model)->module,
      [&](StringRef name) -> std::optional<ConstantData> {
        const ConstantStore::Entry *entry = store.lookup(name);
        if (!entry)
          return std::nullopt;
        return ConstantData{entry->getBytes(), entry->dtype, entry->shape};
      },
      options);
}

LogicalResult emitPlan(Session &session, LowerFlags &flags) {
  // The plan as the compiled model stores it, part numbers included.
  FailureOr<PackagedModel> packaged = packageModel(session, flags);
  if (failed(packaged))
    return failure();
  std::unique_ptr<llvm::raw_ostream> os = session.openOutput();
  if (!os)
    return failure();
  *os << serializeExecutionPlan(packaged->getPlan()) << "\n";
  return success();
}

LogicalResult emitModel(Session &session, LowerFlags &flags) {
  FailureOr<PackagedModel> packaged = packageModel(session, flags);
  if (failed(packaged))
    return failure();
  // Digest and write, streaming the constants from where the importer keeps
  // them: in one pass into a file, in two (digest first) to stdout.
  TimingScope writeTimer = flags.rootScope().nest("Digest and write");
  std::string error;
  if (session.outputPath != "-") {
    if (!packaged->writeToFile(session.outputPath, error)) {
      llvm::errs() << session.outputPath << ": error: cannot write: " << error
                   << "\n";
      return failure();
    }
    return success();
  }
  std::unique_ptr<llvm::raw_ostream> os = session.openOutput(/*binary=*/true);
  if (!os)
    return failure();
  bool written = packaged->writeTo(*os, error);
  os->flush();
  if (!written) {
    llvm::errs() << "<stdout>: error: cannot write: " << error << "\n";
    return failure();
  }
  return success();
}

} // namespace

void registerLowerStages(Driver &driver) {
  auto flags = std::make_shared<LowerFlags>();
  driver.addOptionGroup(OptionGroup{
      [flags](CLI::App &app, Session &) {
        app.add_option("--target", flags->targets,
                       "Compilation targets in priority order (repeatable or "
                       "comma-separated); the fallback target is appended. "
                       "Known:\n" +
                           describeTargetKinds())
            ->delimiter(',')
            ->group("Lowering");
        app.add_option("--device", flags->device,
                       "Compile for the patterns a D3D12 device declares "
                       "(MLIR_EXCHANGE): a driver name (cpu, reference) or a "
                       "driver library's path; first in priority, before "
                       "--target. ONNX models use the default device when "
                       "neither is given")
            ->group("Lowering");
        app.add_option("--partition-granularity", flags->granularity,
                       "subgraph: one partition per subgraph; target: the "
                       "largest acyclic partitions per target")
            ->check(CLI::IsMember({"subgraph", "target"}))
            ->default_str("target")
            ->group("Lowering");
        app.add_option("--max-subgraphs", flags->maxSubgraphs,
                       "With --partition-granularity=target, the most "
                       "subgraphs in one partition (0: no bound)")
            ->group("Lowering");
        app.add_option("--alignment", flags->alignment,
                       "Byte alignment of scratch offsets (a power of two)")
            ->default_str("64")
            ->group("Lowering");
        app.add_option("--schedule", flags->schedule,
                       "min-memory: reuse memory freely; max-concurrency: "
                       "never serialize independent dispatches to save memory")
            ->check(CLI::IsMember({"min-memory", "max-concurrency"}))
            ->default_str("min-memory")
            ->group("Lowering");
        app.add_flag("--no-in-place", flags->noInPlace,
                     "Never write an elementwise dispatch's output over its "
                     "input")
            ->group("Lowering");
        app.add_option("--memory-report", flags->memoryReports,
                       "Write the scratch plan to FILE: a table (.txt, or - "
                       "for stdout), an SVG timeline (.svg) or both (.html); "
                       "repeatable")
            ->group("Lowering");
        app.add_flag("--verify-plan", flags->verifyPlan,
                     "Check the barrier schedule against every pair of "
                     "accesses (slow)")
            ->group("Lowering");
        app.add_flag("--no-precompile", flags->noPrecompile,
                     "Store no precompiled programs: the driver compiles "
                     "every MLIR program when the model is loaded")
            ->group("Lowering");
        app.add_flag("--mlir-timing", flags->timing,
                     "Print the time of every stage and pass")
            ->group("Lowering");
      },
      [flags](Session &) -> std::string {
        if (flags->alignment == 0 ||
            (flags->alignment & (flags->alignment - 1)) ||
            flags->alignment > kMaxAlignment)
          return "--alignment must be a power of two of at most " +
                 std::to_string(kMaxAlignment) + ", got " +
                 std::to_string(flags->alignment);
        return "";
      }});
  driver.addStage(EmitStage{
      "output-ir", "the CGC Output IR (subgraphs, partitions, the program)",
      [flags](Session &session) { return emitOutputIR(session, *flags); }});
  driver.addStage(EmitStage{
      "partition",
      "the isolated Partition IR of partition N (its index in program order, "
      "or its name)",
      [flags](Session &session) { return emitPartition(session, *flags); },
      /*takesValue=*/true});
  driver.addStage(EmitStage{
      "plan", "the execution plan (JSON) of the compiled model",
      [flags](Session &session) { return emitPlan(session, *flags); }});
  driver.addStage(EmitStage{
      "model", "the compiled model: one DX container (the default)",
      [flags](Session &session) { return emitModel(session, *flags); }});
}

} // namespace cgc::tool
