//===- cgc-ort-run.cpp - Run an ONNX model with ONNX Runtime --------------===//
//
//   cgc-ort-run model.onnx [INPUT...] [--input-dir DIR] [--output-dir DIR]
//               [--benchmark --warmup N --runs N] [--threads N] [--seed S]
//               [--report-json FILE] [--ort-library PATH] [--profile PREFIX]
//               [--ep cgc [--ep-option KEY=VALUE]... [--all-on-ep] [--no-fallback]
//                [--ep-context OUT.onnx [--ep-context-embed]] [--ep-stats]]
//               [--version]
//
// The peer cgc is measured against: ONNX Runtime 1.30 (from npm,
// scripts/setup_ort.sh), loaded with dlopen through its C API only
// (onnxruntime_c_api.h). Inputs and outputs use the same files as cgc-run
// (.npy, TensorProto .pb; random inputs from the same generator and seed, so
// both tools see the same values); outputs are written as DIR/NAME.npy.
// Used by the model-zoo comparison (test/models) and the benchmarks.
// --profile turns on ONNX Runtime's own profiler: a Chrome-trace JSON of
// every node's time in every run (PREFIX_DATE.json), to set beside cgc-run's
// CGC_CPU_PROFILE=1 steps (bench/models/ort_profile.py sums it).
//
// --ep cgc runs the model through ONNX Runtime with cgc's plugin execution
// provider (libcgc_onnxruntime_ep.so, docs/onnxruntime.md): registered with
// RegisterExecutionProviderLibrary, its OrtEpDevice appended with
// SessionOptionsAppendExecutionProvider_V2. It prints which EP runs how many
// nodes; --all-on-ep fails unless cgc runs every node. --ep-context writes
// the EPContext model (ep.context_enable) while creating the session;
// --ep-stats prints the plugin's counters and whether the compiler module
// was loaded into the process.
//
//===----------------------------------------------------------------------===//

#include "../cgc-run/Tensors.h"
#include "../cgc-run/ToolSupport.h"

#include <onnxruntime_c_api.h>

#include "cgc/onnxruntime_ep.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <climits>
#include <map>
#include <thread>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace cgc::run;

namespace {

struct Failure {
  std::string message;
};
[[noreturn]] void fail(std::string message) { throw Failure{std::move(message)}; }

const OrtApi *ort = nullptr;

void check(OrtStatus *status, const std::string &what) {
  if (!status)
    return;
  std::string message = ort->GetErrorMessage(status);
  ort->ReleaseStatus(status);
  fail(what + ": " + message);
}

cgc_dtype_t toDtype(ONNXTensorElementDataType t) {
  // Both are ONNX's TensorProto.DataType numbers.
  return dtypeFromInt(t);
}

/// input_0.pb, input_1.pb, ... in DIR, by N.
std::vector<std::string> numberedFiles(const std::string &dir, const std::string &prefix) {
  std::vector<std::string> paths;
  std::string error;
  if (!cgc::run::numberedFiles(dir, prefix, paths, error))
    fail(error);
  return paths;
}

std::string fileNameOf(std::string name) {
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      c = '_';
  return name.empty() ? "output" : name;
}

struct Options {
  std::string model, inputDir, outputDir, reportJson, profile, library = CGC_ORT_LIBRARY;
  std::vector<std::string> inputs;
  std::string ep, epLibrary, epContext, logLevel = "error";
  std::vector<std::string> epOptions;
  bool allOnEp = false, noFallback = false, epContextEmbed = false, epStats = false;
  bool benchmark = false, quiet = false;
  int warmup = 3, runs = 20, threads = 0, concurrent = 0;
  uint64_t seed = 1;
};

/// --concurrent N: N threads each Run the session --runs times at once; every
/// output of every run must equal the first run's, byte for byte.
void runConcurrently(const Options &o, OrtSession *session, const std::vector<const char *> &inNames,
                     const std::vector<OrtValue *> &inputs,
                     const std::vector<const char *> &outNames,
                     const std::vector<OrtValue *> &reference) {
  auto bytesOf = [](OrtValue *v) {
    size_t size = 0;
    void *data = nullptr;
    check(ort->GetTensorSizeInBytes(v, &size), "output size");
    check(ort->GetTensorMutableData(v, &data), "output data");
    return std::string(static_cast<const char *>(data), size);
  };
  std::vector<std::string> expected;
  for (OrtValue *v : reference)
    expected.push_back(bytesOf(v));
  std::vector<std::string> errors(size_t(o.concurrent));
  std::vector<std::thread> threads;
  auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < o.concurrent; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int r = 0; r < o.runs; ++r) {
          std::vector<OrtValue *> outputs(outNames.size(), nullptr);
          check(ort->Run(session, nullptr, inNames.data(), inputs.data(), inputs.size(),
                         outNames.data(), outNames.size(), outputs.data()),
                "Run");
          for (size_t i = 0; i < outputs.size(); ++i) {
            if (bytesOf(outputs[i]) != expected[i] && errors[size_t(t)].empty())
              errors[size_t(t)] = "thread " + std::to_string(t) + " run " + std::to_string(r) +
                                  ": output '" + outNames[i] + "' differs from the first run's";
            ort->ReleaseValue(outputs[i]);
          }
        }
      } catch (const Failure &f) {
        errors[size_t(t)] = "thread " + std::to_string(t) + ": " + f.message;
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &e : errors)
    if (!e.empty())
      fail("--concurrent: " + e);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                  .count();
  if (!o.quiet)
    std::printf("concurrent: %d threads x %d runs on one session in %.1f ms, every output equal "
                "to the first run's\n",
                o.concurrent, o.runs, ms);
}

/// Registers cgc's plugin EP library and appends its first device (or the
/// one whose driver is the ep option "driver") to the session options.
void *appendCgcEp(const Options &o, OrtEnv *env, OrtSessionOptions *options) {
  if (o.ep != "cgc")
    fail("--ep " + o.ep + ": the only plugin EP this tool registers is 'cgc'");
  char resolved[PATH_MAX];
  if (!realpath(o.epLibrary.c_str(), resolved))
    fail("--ep-library " + o.epLibrary + ": no such file (build target cgc_onnxruntime_ep)");
  // ONNX Runtime resolves relative paths against its own folder: give it an
  // absolute one.
  check(ort->RegisterExecutionProviderLibrary(env, "cgc", resolved),
        std::string("RegisterExecutionProviderLibrary ") + resolved);
  const OrtEpDevice *const *devices = nullptr;
  size_t count = 0;
  check(ort->GetEpDevices(env, &devices, &count), "GetEpDevices");
  const OrtEpDevice *chosen = nullptr;
  for (size_t i = 0; i < count && !chosen; ++i)
    if (std::strcmp(ort->EpDevice_EpName(devices[i]), "cgc") == 0)
      chosen = devices[i];
  if (!chosen)
    fail("ONNX Runtime lists no OrtEpDevice of EP 'cgc' after registering " +
         std::string(resolved));
  std::vector<std::string> keys, values;
  bool threadsGiven = false;
  for (const std::string &kv : o.epOptions) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      fail("--ep-option " + kv + ": expected KEY=VALUE");
    keys.push_back(kv.substr(0, eq));
    values.push_back(kv.substr(eq + 1));
    threadsGiven |= keys.back() == "threads";
  }
  if (o.threads && !threadsGiven) { // the same thread count on both sides
    keys.push_back("threads");
    values.push_back(std::to_string(o.threads));
  }
  std::vector<const char *> k, v;
  for (size_t i = 0; i < keys.size(); ++i) {
    k.push_back(keys[i].c_str());
    v.push_back(values[i].c_str());
  }
  check(ort->SessionOptionsAppendExecutionProvider_V2(options, env, &chosen, 1, k.data(),
                                                      v.data(), k.size()),
        "SessionOptionsAppendExecutionProvider_V2");
  check(ort->AddSessionConfigEntry(options, "session.record_ep_graph_assignment_info", "1"),
        "record_ep_graph_assignment_info");
  if (o.noFallback)
    check(ort->AddSessionConfigEntry(options, "session.disable_cpu_ep_fallback", "1"),
          "disable_cpu_ep_fallback");
  if (!o.epContext.empty()) {
    check(ort->AddSessionConfigEntry(options, "ep.context_enable", "1"), "ep.context_enable");
    check(ort->AddSessionConfigEntry(options, "ep.context_file_path", o.epContext.c_str()),
          "ep.context_file_path");
    check(ort->AddSessionConfigEntry(options, "ep.context_embed_mode",
                                     o.epContextEmbed ? "1" : "0"),
          "ep.context_embed_mode");
  }
  return dlopen(resolved, RTLD_NOW | RTLD_NOLOAD); // the library ORT loaded
}

/// Prints how many nodes each EP runs; --all-on-ep fails unless cgc runs all.
void printAssignment(const Options &o, OrtSession *session) {
  const OrtEpAssignedSubgraph *const *subgraphs = nullptr;
  size_t count = 0;
  check(ort->Session_GetEpGraphAssignmentInfo(session, &subgraphs, &count),
        "Session_GetEpGraphAssignmentInfo");
  std::map<std::string, std::pair<size_t, size_t>> perEp; // subgraphs, nodes
  std::vector<std::string> elsewhere;
  for (size_t i = 0; i < count; ++i) {
    const char *ep = nullptr;
    check(ort->EpAssignedSubgraph_GetEpName(subgraphs[i], &ep), "EpAssignedSubgraph_GetEpName");
    const OrtEpAssignedNode *const *nodes = nullptr;
    size_t n = 0;
    check(ort->EpAssignedSubgraph_GetNodes(subgraphs[i], &nodes, &n), "EpAssignedSubgraph_GetNodes");
    perEp[ep].first++;
    perEp[ep].second += n;
    if (std::strcmp(ep, "cgc") != 0)
      for (size_t j = 0; j < n; ++j) {
        const char *name = nullptr, *op = nullptr;
        check(ort->EpAssignedNode_GetName(nodes[j], &name), "EpAssignedNode_GetName");
        check(ort->EpAssignedNode_GetOperatorType(nodes[j], &op), "EpAssignedNode_GetOperatorType");
        elsewhere.push_back(std::string(op) + " '" + name + "' on " + ep);
      }
  }
  if (!o.quiet) {
    std::printf("assignment:");
    for (const auto &[ep, c] : perEp)
      std::printf(" %s %zu node%s in %zu subgraph%s;", ep.c_str(), c.second,
                  c.second == 1 ? "" : "s", c.first, c.first == 1 ? "" : "s");
    std::printf("\n");
    for (const std::string &e : elsewhere)
      std::printf("  not on cgc: %s\n", e.c_str());
  }
  if (o.allOnEp && !elsewhere.empty())
    fail("--all-on-ep: " + std::to_string(elsewhere.size()) + " node" +
         (elsewhere.size() == 1 ? "" : "s") + " not on cgc, the first: " + elsewhere.front());
}

void printEpStats(void *epLibrary) {
  using StatsFn = void (*)(cgc_ort_ep_stats_t *);
  auto stats = epLibrary ? reinterpret_cast<StatsFn>(dlsym(epLibrary, "cgc_ort_ep_stats"))
                         : nullptr;
  if (!stats)
    fail("--ep-stats: the cgc EP library exports no cgc_ort_ep_stats");
  cgc_ort_ep_stats_t s = {};
  stats(&s);
  bool compilerLoaded = false;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    compilerLoaded |= line.find("libcgc_compiler.so") != std::string::npos;
  std::printf("ep-stats: compiles %llu, capability compiles %llu, context loads %llu, runs %llu, "
              "tensors copied %llu (%llu bytes), compiler module %s\n",
              (unsigned long long)s.compiles, (unsigned long long)s.capability_compiles,
              (unsigned long long)s.context_loads, (unsigned long long)s.runs,
              (unsigned long long)s.tensors_copied, (unsigned long long)s.bytes_copied,
              compilerLoaded ? "loaded" : "not loaded");
}

int runMain(const Options &o) {
  void *library = dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    fail("cannot load ONNX Runtime from " + o.library + " (" + dlerror() +
         "); run scripts/setup_ort.sh");
  using GetApiBase = const OrtApiBase *(*)();
  auto getApiBase = reinterpret_cast<GetApiBase>(dlsym(library, "OrtGetApiBase"));
  if (!getApiBase)
    fail(o.library + " does not export OrtGetApiBase");
  const OrtApiBase *base = getApiBase();
  ort = base->GetApi(ORT_API_VERSION);
  if (!ort)
    fail(std::string("ONNX Runtime ") + base->GetVersionString() + " does not offer C API " +
         std::to_string(ORT_API_VERSION));

  OrtEnv *env = nullptr;
  static const std::map<std::string, OrtLoggingLevel> levels = {
      {"verbose", ORT_LOGGING_LEVEL_VERBOSE}, {"info", ORT_LOGGING_LEVEL_INFO},
      {"warning", ORT_LOGGING_LEVEL_WARNING}, {"error", ORT_LOGGING_LEVEL_ERROR}};
  auto level = levels.find(o.logLevel);
  if (level == levels.end())
    fail("--log-level " + o.logLevel + ": expected verbose, info, warning or error");
  check(ort->CreateEnv(level->second, "cgc-ort-run", &env), "CreateEnv");
  OrtSessionOptions *options = nullptr;
  check(ort->CreateSessionOptions(&options), "CreateSessionOptions");
  check(ort->SetSessionGraphOptimizationLevel(options, ORT_ENABLE_ALL), "optimization level");
  if (o.threads)
    check(ort->SetIntraOpNumThreads(options, o.threads), "SetIntraOpNumThreads");
  if (!o.profile.empty())
    check(ort->EnableProfiling(options, o.profile.c_str()), "EnableProfiling");
  void *epLibrary = nullptr;
  if (!o.ep.empty())
    epLibrary = appendCgcEp(o, env, options);
  auto loadStart = std::chrono::steady_clock::now();
  OrtSession *session = nullptr;
  check(ort->CreateSession(env, o.model.c_str(), options, &session), o.model);
  double loadMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - loadStart)
          .count();
  OrtAllocator *allocator = nullptr;
  check(ort->GetAllocatorWithDefaultOptions(&allocator), "allocator");
  if (!o.ep.empty())
    printAssignment(o, session);

  size_t numInputs = 0, numOutputs = 0;
  check(ort->SessionGetInputCount(session, &numInputs), "inputs");
  check(ort->SessionGetOutputCount(session, &numOutputs), "outputs");
  std::vector<std::string> inputNames(numInputs), outputNames(numOutputs);
  std::vector<cgc_dtype_t> inputTypes(numInputs);
  std::vector<std::vector<int64_t>> inputShapes(numInputs);
  for (size_t i = 0; i < numInputs; ++i) {
    char *name = nullptr;
    check(ort->SessionGetInputName(session, i, allocator, &name), "input name");
    inputNames[i] = name;
    ort->AllocatorFree(allocator, name);
    OrtTypeInfo *type = nullptr;
    check(ort->SessionGetInputTypeInfo(session, i, &type), "input type");
    const OrtTensorTypeAndShapeInfo *info = nullptr;
    check(ort->CastTypeInfoToTensorInfo(type, &info), "input tensor type");
    if (!info)
      fail("input '" + inputNames[i] + "' is not a tensor");
    ONNXTensorElementDataType et;
    check(ort->GetTensorElementType(info, &et), "element type");
    inputTypes[i] = toDtype(et);
    size_t rank = 0;
    check(ort->GetDimensionsCount(info, &rank), "rank");
    inputShapes[i].resize(rank);
    check(ort->GetDimensions(info, inputShapes[i].data(), rank), "dimensions");
    ort->ReleaseTypeInfo(type);
  }
  for (size_t i = 0; i < numOutputs; ++i) {
    char *name = nullptr;
    check(ort->SessionGetOutputName(session, i, allocator, &name), "output name");
    outputNames[i] = name;
    ort->AllocatorFree(allocator, name);
  }

  // Inputs.
  std::vector<std::optional<HostTensor>> inputs(numInputs);
  std::vector<std::string> positional;
  auto indexOf = [&](const std::string &name) -> std::optional<size_t> {
    for (size_t i = 0; i < numInputs; ++i)
      if (inputNames[i] == name)
        return i;
    return std::nullopt;
  };
  for (const std::string &arg : o.inputs) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || access(arg.c_str(), F_OK) == 0) {
      positional.push_back(arg);
      continue;
    }
    auto index = indexOf(arg.substr(0, eq));
    if (!index)
      fail("the model has no input '" + arg.substr(0, eq) + "'");
    HostTensor t;
    std::string error;
    if (!readTensorFile(arg.substr(eq + 1), t, error))
      fail(error);
    inputs[*index] = std::move(t);
  }
  if (!o.inputDir.empty())
    for (const std::string &p : numberedFiles(o.inputDir, "input_"))
      positional.push_back(p);
  size_t next = 0;
  for (const std::string &path : positional) {
    HostTensor t;
    std::string error;
    if (!readTensorFile(path, t, error))
      fail(error);
    std::optional<size_t> index = t.name.empty() ? std::nullopt : indexOf(t.name);
    if (!index) {
      while (next < numInputs && inputs[next])
        ++next;
      if (next >= numInputs)
        fail("too many inputs: " + path);
      index = next;
    }
    inputs[*index] = std::move(t);
  }
  for (size_t i = 0; i < numInputs; ++i) {
    if (inputs[i])
      continue;
    for (int64_t d : inputShapes[i])
      if (d < 0)
        fail("input '" + inputNames[i] + "' has a symbolic dimension: give it as a file");
    HostTensor t;
    t.dtype = inputTypes[i];
    t.shape = inputShapes[i];
    fillRandom(t, o.seed * 1000003 + i); // cgc-run's generator and seeds
    inputs[i] = std::move(t);
  }

  OrtMemoryInfo *memory = nullptr;
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "memory info");
  std::vector<OrtValue *> inputValues(numInputs, nullptr);
  for (size_t i = 0; i < numInputs; ++i) {
    HostTensor &t = *inputs[i];
    // NumPy and ONNX's test data hold bfloat16 as uint16 bit patterns.
    if (inputTypes[i] == CGC_DTYPE_BFLOAT16 && t.dtype == CGC_DTYPE_UINT16)
      t.dtype = CGC_DTYPE_BFLOAT16;
    if (t.dtype != inputTypes[i])
      fail("input '" + inputNames[i] + "': expected " + describe(inputTypes[i], inputShapes[i]) +
           ", got " + describe(t.dtype, t.shape));
    check(ort->CreateTensorWithDataAsOrtValue(memory, t.data.data(), t.data.size(),
                                              t.shape.data(), t.shape.size(),
                                              ONNXTensorElementDataType(t.dtype), &inputValues[i]),
          "input '" + inputNames[i] + "'");
  }
  std::vector<const char *> inNames, outNames;
  for (auto &n : inputNames)
    inNames.push_back(n.c_str());
  for (auto &n : outputNames)
    outNames.push_back(n.c_str());

  std::vector<OrtValue *> outputValues(numOutputs, nullptr);
  std::vector<double> times;
  int total = o.benchmark ? o.warmup + o.runs : 1;
  // The EP's time inside cgc's runs during the timed runs: what ONNX Runtime
  // and the EP add around cgc, measured in the same runs.
  cgc_ort_ep_stats_fn epStats =
      epLibrary ? reinterpret_cast<cgc_ort_ep_stats_fn>(dlsym(epLibrary, "cgc_ort_ep_stats"))
                : nullptr;
  std::vector<double> outside; // per timed run: Run time minus cgc's run time, ms
  double firstMs = 0;           // the first Run after the session was created
  for (int r = 0; r < total; ++r) {
    cgc_ort_ep_stats_t before = {}, after = {};
    if (epStats)
      epStats(&before);
    for (OrtValue *&v : outputValues) {
      if (v)
        ort->ReleaseValue(v);
      v = nullptr;
    }
    auto start = std::chrono::steady_clock::now();
    check(ort->Run(session, nullptr, inNames.data(), inputValues.data(), numInputs,
                   outNames.data(), numOutputs, outputValues.data()),
          "Run");
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    if (r == 0)
      firstMs = ms;
    if (!o.benchmark || r >= o.warmup) {
      times.push_back(ms);
      if (epStats) {
        epStats(&after);
        outside.push_back(ms - double(after.run_ns - before.run_ns) / 1e6);
      }
    }
  }

  // The median of what ONNX Runtime and the EP add around cgc's run in each
  // Run (robust to a slow run, which slows both alike).
  double addedMs = -1;
  if (!outside.empty()) {
    std::sort(outside.begin(), outside.end());
    addedMs = outside[outside.size() / 2];
  }
  if (o.concurrent > 0)
    runConcurrently(o, session, inNames, inputValues, outNames, outputValues);

  for (size_t i = 0; i < numOutputs; ++i) {
    OrtTensorTypeAndShapeInfo *info = nullptr;
    check(ort->GetTensorTypeAndShape(outputValues[i], &info), "output type");
    ONNXTensorElementDataType et;
    check(ort->GetTensorElementType(info, &et), "output element type");
    size_t rank = 0;
    check(ort->GetDimensionsCount(info, &rank), "output rank");
    HostTensor out;
    out.name = outputNames[i];
    out.dtype = toDtype(et);
    if (out.dtype == CGC_DTYPE_INVALID)
      fail("output '" + out.name + "' has an unsupported element type");
    out.shape.resize(rank);
    check(ort->GetDimensions(info, out.shape.data(), rank), "output dimensions");
    ort->ReleaseTensorTypeAndShapeInfo(info);
    void *data = nullptr;
    check(ort->GetTensorMutableData(outputValues[i], &data), "output data");
    out.data.assign(static_cast<uint8_t *>(data),
                    static_cast<uint8_t *>(data) + size_t(out.elements()) * cgc_dtype_size(out.dtype));
    if (!o.quiet)
      std::printf("output %zu '%s': %s\n", i, out.name.c_str(), summarize(out).c_str());
    if (!o.outputDir.empty()) {
      mkdir(o.outputDir.c_str(), 0755);
      std::string error;
      if (!writeNpy(o.outputDir + "/" + fileNameOf(out.name) + ".npy", out, error))
        fail(error);
    }
  }

  std::sort(times.begin(), times.end());
  auto pct = [&](double p) {
    return times[std::min(times.size() - 1,
                          p <= 0 ? size_t(0) : size_t(std::ceil(p * double(times.size()))) - 1)];
  };
  double mean = std::accumulate(times.begin(), times.end(), 0.0) / double(times.size());
  if (!o.quiet && addedMs >= 0)
    std::printf("ep-timing: ONNX Runtime and the EP add %.1f us per Run around cgc's run "
                "(median; %.2f%% of the median Run)\n",
                addedMs * 1000, 100 * addedMs / pct(0.5));
  if (!o.quiet) {
    std::printf("timing: ONNX Runtime %s session %.1f ms\n", base->GetVersionString(), loadMs);
    if (o.benchmark)
      std::printf("benchmark: %zu runs after %d warm-up: min %.3f ms, median %.3f ms, p90 %.3f "
                  "ms, mean %.3f ms; first run %.3f ms\n",
                  times.size(), o.warmup, pct(0), pct(0.5), pct(0.9), mean, firstMs);
    else
      std::printf("timing: run %.3f ms\n", pct(0));
  }
  if (!o.reportJson.empty()) {
    std::ostringstream out;
    out << "{\"model\": \"" << o.model << "\", \"ort_version\": \"" << base->GetVersionString()
        << "\", \"load_ms\": " << loadMs << ", \"first_run_ms\": " << firstMs
        << ", \"runs_ms\": [";
    for (size_t i = 0; i < times.size(); ++i)
      out << (i ? ", " : "") << times[i];
    out << "], \"ep_added_ms\": " << addedMs << ", \"mean_ms\": " << mean
        << ", \"min_ms\": " << pct(0) << ", \"median_ms\": " << pct(0.5)
        << ", \"p90_ms\": " << pct(0.9) << ", \"peak_rss_kib\": " << peakRssKiB() << "}\n";
    std::string error, text = out.str();
    if (!writeFile(o.reportJson, text.data(), text.size(), error))
      fail("--report-json: " + error);
  }
  for (OrtValue *v : outputValues)
    ort->ReleaseValue(v);
  for (OrtValue *v : inputValues)
    ort->ReleaseValue(v);
  ort->ReleaseMemoryInfo(memory);
  if (!o.profile.empty()) {
    char *path = nullptr;
    check(ort->SessionEndProfiling(session, allocator, &path), "SessionEndProfiling");
    std::string written = path ? path : "";
    ort->AllocatorFree(allocator, path);
    struct stat st;
    if (written.empty() || stat(written.c_str(), &st) != 0)
      fail("--profile " + o.profile + ": ONNX Runtime wrote no profile" +
           (written.empty() ? std::string() : " (to " + written + ")"));
    if (!o.quiet)
      std::printf("profile: %s\n", written.c_str());
  }
  if (o.epStats)
    printEpStats(epLibrary);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
  if (!o.ep.empty())
    check(ort->UnregisterExecutionProviderLibrary(env, "cgc"), "UnregisterExecutionProviderLibrary");
  ort->ReleaseEnv(env);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"cgc-ort-run: run an ONNX model with ONNX Runtime, with cgc-run's input and "
               "output files.\n\nINPUT: FILE (.npy/.pb, in input order) or NAME=FILE; inputs "
               "not given are random."};
  app.add_option("model", o.model, "The ONNX model")->required();
  app.add_option("inputs", o.inputs, "Inputs: FILE or NAME=FILE");
  app.add_option("--input-dir", o.inputDir, "Read DIR/input_N.pb (ONNX test data layout)");
  app.add_option("--output-dir", o.outputDir, "Write each output to DIR/NAME.npy");
  app.add_option("--report-json", o.reportJson, "Write the timings as JSON");
  app.add_option("--ort-library", o.library, "libonnxruntime.so to load")
      ->default_str(CGC_ORT_LIBRARY);
  app.add_option("--profile", o.profile,
                 "ONNX Runtime's profiler: a Chrome trace of every node in PREFIX_DATE.json");
  app.add_option("--ep", o.ep, "Run through a plugin execution provider: 'cgc'");
  app.add_option("--ep-library", o.epLibrary, "The cgc EP library")
      ->default_str(CGC_ORT_EP_LIBRARY);
  // One value per occurrence (repeatable), so that inputs after it are not
  // taken as more options (and the run silently given random inputs).
  app.add_option("--ep-option", o.epOptions,
                 "An EP option KEY=VALUE (threads, driver_options, require_all, "
                 "value_specialization, max_loop_iterations); repeatable")
      ->allow_extra_args(false);
  app.add_flag("--all-on-ep", o.allOnEp, "Fail unless the EP runs every node");
  app.add_flag("--no-fallback", o.noFallback,
               "session.disable_cpu_ep_fallback=1: fail when a node would run on the CPU EP");
  app.add_option("--ep-context", o.epContext,
                 "Write the EPContext model to this file while creating the session");
  app.add_flag("--ep-context-embed", o.epContextEmbed,
               "Embed the compiled models in the EPContext nodes (else files beside it)");
  app.add_flag("--ep-stats", o.epStats,
               "Print the EP's counters and whether the compiler module was loaded");
  app.add_option("--concurrent", o.concurrent,
                 "Then run the session from N threads at once, --runs times each, and check "
                 "every output equals the first run's")
      ->check(CLI::Range(0, 64));
  app.add_option("--log-level", o.logLevel,
                 "ONNX Runtime's log level: verbose, info, warning, error (the default)");
  app.add_flag("--benchmark", o.benchmark, "Time --warmup then --runs runs");
  app.add_option("--warmup", o.warmup, "Warm-up runs of --benchmark")
      ->default_str("3")
      ->check(CLI::Range(0, kMaxRuns));
  app.add_option("--runs", o.runs, "Timed runs of --benchmark")
      ->default_str("20")
      ->check(CLI::Range(1, kMaxRuns));
  app.add_option("--threads", o.threads, "ONNX Runtime's intra-op threads (0: its default)")
      ->check(CLI::Range(0, int(cgc::kMaxThreads)));
  app.add_option("--seed", o.seed, "Seed of random inputs")->default_str("1");
  app.add_flag("-q,--quiet", o.quiet, "Print only errors");
  app.set_version_flag("--version", versionText("cgc-ort-run"));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (o.epLibrary.empty())
    o.epLibrary = CGC_ORT_EP_LIBRARY;
  if (const char *env = std::getenv("CGC_ORT_LIBRARY"))
    if (o.library == CGC_ORT_LIBRARY)
      o.library = env;
  // Side files are checked before the work: ONNX Runtime itself writes no
  // profile into a missing folder and says nothing.
  for (const std::string *path : {&o.reportJson, &o.profile}) {
    std::string error;
    if (!path->empty() && !checkOutputPath(*path, error)) {
      std::fprintf(stderr, "cgc-ort-run: error: %s %s\n",
                   path == &o.reportJson ? "--report-json" : "--profile", error.c_str());
      return 2;
    }
  }
  try {
    return runMain(o);
  } catch (const Failure &f) {
    std::fprintf(stderr, "cgc-ort-run: error: %s\n", f.message.c_str());
    return 3;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cgc-ort-run: error: %s\n", e.what());
    return 3;
  }
}
