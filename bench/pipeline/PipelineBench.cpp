//===- PipelineBench.cpp - .onnx to compiled model on the model zoo -------===//
//
// For each model: import, lower to Output IR (cgc-lower-to-output-ir with the
// given targets), package, digest and write the compiled model, then open it
// with the MLIR-free reader. Prints per model the memory plan (footprint,
// lower bound, naive sum of intermediates), dispatches and barriers, and the
// time from .onnx to compiled model (best of --repeat runs, wall and CPU),
// and checks that two compilations give identical bytes.
//
//   cgc-pipeline-bench --models DIR [--target T ...] [--repeat N]
//                      [--granularity G] [--schedule S] [--only NAME]
//
//===----------------------------------------------------------------------===//

#include "bench/ModelZoo.h"
#include "compiler/Import/Importer.h"
#include "compiler/InitAll.h"
#include "compiler/Package/Package.h"
#include "compiler/Pipeline/Pipeline.h"

#include "cgc/compiled_model.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <vector>

using namespace mlir;

namespace {

using cgc::bench::Model;

double cpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
         usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
}

struct Times {
  double import = 0, lower = 0, package = 0, write = 0, total = 0, cpu = 0;
};

struct Options {
  std::string models = "build/models";
  std::vector<std::string> targets;
  std::string granularity = "target";
  std::string schedule = "min-memory";
  std::string only;
  int repeat = 3;
};

/// One compilation, .onnx to a compiled model file. Returns false after
/// printing the error.
bool compile(const Model &model, const Options &options,
             const std::string &output, Times &times) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  double cpu0 = cpuSeconds();
  auto t0 = Clock::now();
  DialectRegistry registry;
  cgc::registerAllDialects(registry);
  cgc::registerImportDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  cgc::ImportOptions importOptions;
  for (const char *shape : model.shapes)
    if (std::string error = cgc::parseInputShapeOption(shape, importOptions);
        !error.empty()) {
      llvm::errs() << error << "\n";
      return false;
    }
  FailureOr<cgc::ImportedModel> imported = cgc::importONNX(
      options.models + "/" + model.file, importOptions, context);
  if (failed(imported))
    return false;
  auto t1 = Clock::now();

  PassManager pm(&context, cgc::ModuleOp::getOperationName());
  cgc::LowerToOutputIROptions lowerOptions;
  lowerOptions.targets = ArrayRef<std::string>(options.targets);
  lowerOptions.granularity = options.granularity;
  lowerOptions.schedule = options.schedule;
  cgc::buildLowerToOutputIRPipeline(pm, lowerOptions);
  if (failed(pm.run(imported->module->getOperation())))
    return false;
  auto t2 = Clock::now();

  const cgc::ConstantStore &store = imported->constants;
  FailureOr<cgc::PackagedModel> packaged = cgc::packageCompiledModel(
      *imported->module, [&](StringRef name) -> std::optional<cgc::ConstantData> {
        const cgc::ConstantStore::Entry *entry = store.lookup(name);
        if (!entry)
          return std::nullopt;
        return cgc::ConstantData{entry->getBytes(), entry->dtype, entry->shape};
      });
  if (failed(packaged))
    return false;
  auto t3 = Clock::now();

  std::string error;
  if (!packaged->writeToFile(output, error)) {
    llvm::errs() << output << ": cannot write: " << error << "\n";
    return false;
  }
  auto t4 = Clock::now();
  times.import = seconds(t0, t1);
  times.lower = seconds(t1, t2);
  times.package = seconds(t2, t3);
  times.write = seconds(t3, t4);
  times.total = seconds(t0, t4);
  times.cpu = cpuSeconds() - cpu0;
  return true;
}

bool sameFiles(const std::string &a, const std::string &b) {
  FILE *fa = std::fopen(a.c_str(), "rb"), *fb = std::fopen(b.c_str(), "rb");
  bool same = fa && fb;
  std::vector<char> ba(1 << 20), bb(1 << 20);
  while (same) {
    size_t na = std::fread(ba.data(), 1, ba.size(), fa);
    size_t nb = std::fread(bb.data(), 1, bb.size(), fb);
    same = na == nb && std::memcmp(ba.data(), bb.data(), na) == 0;
    if (na == 0)
      break;
  }
  if (fa)
    std::fclose(fa);
  if (fb)
    std::fclose(fb);
  return same;
}

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f", bytes / (1024.0 * 1024.0));
  return text;
}

} // namespace

int main(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        llvm::errs() << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--models")
      options.models = value();
    else if (arg == "--target")
      options.targets.push_back(value());
    else if (arg == "--repeat")
      options.repeat = std::max(1, std::atoi(value().c_str()));
    else if (arg == "--granularity")
      options.granularity = value();
    else if (arg == "--schedule")
      options.schedule = value();
    else if (arg == "--only")
      options.only = value();
    else {
      llvm::errs() << "usage: cgc-pipeline-bench --models DIR [--target T]... "
                      "[--repeat N] [--granularity subgraph|target] "
                      "[--schedule min-memory|max-concurrency] [--only FILE]\n";
      return 2;
    }
  }
  cgc::registerAllPasses();

  std::string targets = "fallback";
  if (!options.targets.empty()) {
    targets.clear();
    for (const std::string &t : options.targets)
      targets += (targets.empty() ? "" : ",") + t;
  }
  llvm::outs() << "cgc pipeline benchmark: targets " << targets
               << ", granularity " << options.granularity << ", schedule "
               << options.schedule << ", best of " << options.repeat
               << " runs\n\n";
  llvm::outs() << llvm::format(
      "%-16s %10s %10s %10s %6s %10s %10s %8s %10s %10s\n", "model",
      "footprint", "lower bnd", "naive", "f/lb", "dispatches", "barriers",
      "import", "lower+pkg", "total");
  llvm::outs() << llvm::format("%-16s %10s %10s %10s %6s %10s %10s %8s %10s %10s\n",
                               "", "MiB", "MiB", "MiB", "", "", "", "s", "s",
                               "s (cpu)");
  int failures = 0;
  for (const Model &model : cgc::bench::modelZoo()) {
    if (model.externalData) // the same IR as the inline BERT encoder
      continue;
    if (!options.only.empty() && options.only != model.file)
      continue;
    std::string path = options.models + "/" + model.file;
    if (!llvm::sys::fs::exists(path)) {
      llvm::outs() << model.name << ": " << path
                   << " is missing; run scripts/export_models.py --out "
                   << options.models << "\n";
      ++failures;
      continue;
    }
    std::string out = options.models + "/" + model.file + ".cgc";
    std::string again = out + ".again";
    Times best;
    best.total = 1e30;
    bool ok = true;
    for (int r = 0; r < options.repeat && ok; ++r) {
      Times times;
      ok = compile(model, options, r == 0 ? out : again, times);
      if (ok && times.total < best.total)
        best = times;
    }
    if (!ok) {
      llvm::outs() << model.name << ": compilation failed\n";
      ++failures;
      continue;
    }
    bool deterministic = options.repeat < 2 || sameFiles(out, again);
    llvm::sys::fs::remove(again);

    cgc::CompiledModel compiled;
    std::string error;
    if (!compiled.openFile(out, error)) {
      llvm::outs() << model.name << ": the compiled model does not open: "
                   << error << "\n";
      ++failures;
      continue;
    }
    const cgc::ExecutionPlan &plan = compiled.getPlan();
    double ratio = plan.lowerBound ? double(plan.footprint) / plan.lowerBound : 0;
    llvm::outs() << llvm::format(
        "%-16s %10s %10s %10s %6.3f %10u %10u %8.3f %10.3f %5.3f (%.3f)\n",
        model.name, mib(plan.footprint).c_str(), mib(plan.lowerBound).c_str(),
        mib(plan.naive).c_str(), ratio, plan.dispatchCount, plan.barrierCount,
        best.import, best.lower + best.package + best.write, best.total,
        best.cpu);
    if (!deterministic) {
      llvm::outs() << "  NOT DETERMINISTIC: two compilations differ\n";
      ++failures;
    }
    size_t kernels = 0;
    for (const cgc::PlanProgram &p : plan.programs)
      kernels += p.kind == cgc::PlanProgram::Kind::Kernel;
    llvm::outs() << "  " << plan.programs.size() << " programs ("
                 << plan.programs.size() - kernels << " MLIR, " << kernels
                 << " kernel), constants " << mib(plan.constantsBytes)
                 << " MiB; lower " << llvm::format("%.3f", best.lower)
                 << " s, package " << llvm::format("%.3f", best.package)
                 << " s, digest+write " << llvm::format("%.3f", best.write)
                 << " s\n";
  }
  return failures ? 1 : 0;
}
