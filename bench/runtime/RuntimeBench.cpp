//===- RuntimeBench.cpp - Per-run overhead of the runtime -----------------===//
//
// cgc-runtime-bench: times cgc_context_run (replay of the recorded command
// list, submit, wait) on compiled models whose work is negligible, so what
// is measured is the runtime's and the driver's per-run overhead: the
// command list replay, ExecuteCommandLists + Signal, the wait, the
// executor's per-dispatch and per-barrier cost. Not part of any test suite.
//
//   cgc-runtime-bench MODEL.cgc... [--runs N] [--warmup N] [--threads N]
//                     [--json FILE]
//
// `ninja bench-runtime` compiles the models of bench/runtime (add4: one
// fallback kernel program; matmul4: one MLIR program compiled by the
// CPU driver's JIT; chain16: 16 MLIR programs and 15 barriers) and runs
// this on them at 1 and 2 device threads.
//
//===----------------------------------------------------------------------===//

#include "cgc/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "cgc-runtime-bench: %s\n", message.c_str());
  std::exit(2);
}

void check(cgc_status_t status, const std::string &what) {
  if (!status)
    return;
  std::string message = what + ": " + cgc_status_message(status);
  cgc_status_free(status);
  die(message);
}

uint64_t nowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

struct Result {
  std::string model;
  uint32_t dispatches = 0, barriers = 0, mlirPrograms = 0, kernelPrograms = 0;
  double minUs = 0, medianUs = 0, p90Us = 0, meanUs = 0;
};

double percentile(std::vector<double> sorted, double p) {
  if (sorted.empty())
    return 0;
  size_t i = size_t(p * double(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

Result bench(cgc_device_t *device, const std::string &path, int warmup, int runs) {
  Result r;
  r.model = path;
  cgc_model_t *model = nullptr;
  check(cgc_model_load_file(device, path.c_str(), nullptr, &model), path);
  cgc_model_stats_t stats;
  cgc_model_stats(model, &stats);
  r.dispatches = stats.dispatches;
  r.barriers = stats.barriers;
  r.mlirPrograms = stats.mlir_programs;
  r.kernelPrograms = stats.kernel_programs;
  cgc_context_t *context = nullptr;
  check(cgc_context_create(model, nullptr, &context), path);
  // Inputs keep the zeros of the context's own buffers: the runs' work is
  // the same whatever the values.
  for (int i = 0; i < warmup; ++i)
    check(cgc_context_run(context), path + ": run");
  std::vector<double> us;
  us.reserve(size_t(runs));
  for (int i = 0; i < runs; ++i) {
    uint64_t start = nowNs();
    check(cgc_context_run(context), path + ": run");
    us.push_back(double(nowNs() - start) / 1000.0);
  }
  cgc_context_release(context);
  cgc_model_release(model);
  double sum = 0;
  for (double u : us)
    sum += u;
  std::sort(us.begin(), us.end());
  r.minUs = us.front();
  r.medianUs = percentile(us, 0.5);
  r.p90Us = percentile(us, 0.9);
  r.meanUs = sum / double(us.size());
  return r;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> models;
  int runs = 10000, warmup = 100, threads = 0;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--runs")
      runs = std::max(1, std::atoi(value().c_str()));
    else if (a == "--warmup")
      warmup = std::max(0, std::atoi(value().c_str()));
    else if (a == "--threads")
      threads = std::max(0, std::atoi(value().c_str()));
    else if (a == "--json")
      json = value();
    else if (a == "-h" || a == "--help") {
      std::printf("usage: cgc-runtime-bench MODEL.cgc... [--runs N (10000)] [--warmup N (100)]\n"
                  "                         [--threads N (0: the driver's default)] "
                  "[--json FILE]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-')
      die("unknown option " + a);
    else
      models.push_back(a);
  }
  if (models.empty())
    die("no model given (cgc-runtime-bench --help)");

  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.device_threads = uint32_t(threads);
  cgc_device_t *device = nullptr;
  check(cgc_device_create(&options, &device), "cgc_device_create");

  std::vector<Result> results;
  std::printf("cgc-runtime-bench: %d runs after %d warm-up, device threads %s\n", runs, warmup,
              threads ? std::to_string(threads).c_str() : "default");
  std::printf("%-24s %5s %5s %10s %10s %10s %10s\n", "model", "disp", "barr", "min us",
              "median us", "p90 us", "mean us");
  for (const std::string &path : models) {
    Result r = bench(device, path, warmup, runs);
    std::string name = path.substr(path.find_last_of('/') + 1);
    std::printf("%-24s %5u %5u %10.2f %10.2f %10.2f %10.2f\n", name.c_str(), r.dispatches,
                r.barriers, r.minUs, r.medianUs, r.p90Us, r.meanUs);
    std::fflush(stdout);
    results.push_back(r);
  }
  cgc_device_release(device);

  if (!json.empty()) {
    FILE *f = std::fopen(json.c_str(), "w");
    if (!f)
      die("cannot write " + json);
    std::fprintf(f, "{\"threads\": %d, \"runs\": %d, \"warmup\": %d, \"models\": [", threads, runs,
                 warmup);
    for (size_t i = 0; i < results.size(); ++i) {
      const Result &r = results[i];
      std::fprintf(f,
                   "%s\n  {\"model\": \"%s\", \"dispatches\": %u, \"barriers\": %u, "
                   "\"mlir_programs\": %u, \"kernel_programs\": %u, \"min_us\": %.3f, "
                   "\"median_us\": %.3f, \"p90_us\": %.3f, \"mean_us\": %.3f}",
                   i ? "," : "", r.model.c_str(), r.dispatches, r.barriers, r.mlirPrograms,
                   r.kernelPrograms, r.minUs, r.medianUs, r.p90Us, r.meanUs);
    }
    std::fprintf(f, "\n]}\n");
    std::fclose(f);
  }
  return 0;
}
