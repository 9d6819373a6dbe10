//===- ImportBench.cpp - ONNX import time and peak memory -----------------===//
//
// For each model of the zoo (scripts/export_models.py), in a child process
// of its own: the time of importONNX (the first import, which also pays
// libonnx's schema registration, and the best and median of --repeat more,
// each into a fresh MLIRContext) and the peak resident set size
// (getrusage ru_maxrss) of the process, next to its peak before the import
// (the libraries and an empty context) and the model's size (with its
// external data). peak/size is the whole process's peak over the model
// size: the import itself adds peak minus base.
//
//   cgc-import-bench --models DIR [--repeat N] [--only NAME]
//
//===----------------------------------------------------------------------===//

#include "bench/ModelZoo.h"
#include "compiler/Import/Importer.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace mlir;
using cgc::ImportedModel;
using cgc::ImportOptions;
using cgc::importONNX;
using cgc::parseInputShapeOption;
using cgc::registerImportDialects;

namespace {

using cgc::bench::Model;

/// What a child reports back.
struct Result {
  bool ok = false;
  double firstMs = 0, bestMs = 0, medianMs = 0;
  long baselineKB = 0, peakKB = 0;
  uint64_t constantBytes = 0;
  unsigned ops = 0;
};

long maxRssKB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

Result measure(const std::string &path, const Model &model, int repeat) {
  Result result;
  ImportOptions options;
  for (const char *shape : model.shapes)
    if (!parseInputShapeOption(shape, options).empty())
      return result;
  DialectRegistry registry;
  registerImportDialects(registry);
  std::vector<double> times;
  for (int run = 0; run <= repeat; ++run) {
    MLIRContext context(registry);
    context.loadAllAvailableDialects();
    if (run == 0)
      result.baselineKB = maxRssKB();
    auto start = std::chrono::steady_clock::now();
    FailureOr<ImportedModel> imported = importONNX(path, options, context);
    auto end = std::chrono::steady_clock::now();
    if (failed(imported))
      return result;
    double ms = std::chrono::duration<double, std::milli>(end - start).count();
    if (run == 0) {
      result.firstMs = ms;
      result.constantBytes = imported->constants.getTotalBytes();
      imported->module->walk([&](Operation *) { ++result.ops; });
      result.peakKB = maxRssKB();
    } else {
      times.push_back(ms);
    }
  }
  std::sort(times.begin(), times.end());
  result.bestMs = times.empty() ? result.firstMs : times.front();
  result.medianMs = times.empty() ? result.firstMs : times[times.size() / 2];
  result.ok = true;
  return result;
}

/// Runs `measure` in a child so that each model's peak RSS is its own.
Result measureInChild(const std::string &path, const Model &model,
                      int repeat) {
  int fds[2];
  Result result;
  if (pipe(fds) != 0)
    return result;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    Result child = measure(path, model, repeat);
    ssize_t written = write(fds[1], &child, sizeof(child));
    _exit(written == sizeof(child) ? 0 : 1);
  }
  close(fds[1]);
  ssize_t got = read(fds[0], &result, sizeof(result));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got != sizeof(result))
    result.ok = false;
  return result;
}

} // namespace

int main(int argc, char **argv) {
  std::string models = "build/models", only;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--models" && i + 1 < argc)
      models = argv[++i];
    else if (arg == "--repeat" && i + 1 < argc)
      repeat = std::max(0, std::atoi(argv[++i]));
    else if (arg == "--only" && i + 1 < argc)
      only = argv[++i];
    else {
      llvm::errs() << "usage: cgc-import-bench --models DIR [--repeat N] "
                      "[--only NAME]\n";
      return 2;
    }
  }
  llvm::outs() << "ONNX import: first import (cold: includes libonnx schema "
                  "registration), best and median of "
               << repeat << " more; peak RSS of the process\n\n";
  llvm::outs() << llvm::format("%-30s %8s %8s %8s %9s %8s %8s %10s %6s\n",
                               "model", "size MB", "cold ms", "best ms",
                               "median ms", "base MB", "peak MB",
                               "peak/size", "ops");
  int failures = 0;
  for (const Model &model : cgc::bench::modelZoo()) {
    if (!only.empty() && only != model.name && only != model.file)
      continue;
    std::string path = models + "/" + model.file;
    uint64_t size = 0;
    if (llvm::sys::fs::file_size(path, size)) {
      llvm::outs() << llvm::format("%-30s missing (run scripts/export_models.py)\n",
                                   model.name);
      continue;
    }
    // External data counts toward the model's size.
    std::string weights = models + "/bert_encoder_external/weights.bin";
    uint64_t external = 0;
    if (model.externalData &&
        !llvm::sys::fs::file_size(weights, external))
      size += external;
    Result result = measureInChild(path, model, repeat);
    if (!result.ok) {
      llvm::outs() << llvm::format("%-30s import failed\n", model.name);
      ++failures;
      continue;
    }
    double mb = size / 1e6;
    llvm::outs() << llvm::format(
        "%-30s %8.1f %8.1f %8.1f %9.1f %8.1f %8.1f %10.2f %6u\n", model.name,
        mb, result.firstMs, result.bestMs, result.medianMs,
        result.baselineKB / 1024.0, result.peakKB / 1024.0,
        (result.peakKB * 1024.0) / size, result.ops);
  }
  return failures ? 1 : 0;
}
