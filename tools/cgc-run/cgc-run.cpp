//===- cgc-run.cpp - Run or benchmark a compiled model --------------------===//
//
//   cgc-run model.cgc [INPUT...] [options]
//   cgc-run model.onnx ...          compiles on the fly for the device
//                                   (cgc_model_compile_onnx_file: its driver's
//                                   patterns through MLIR_EXCHANGE, the rest
//                                   on the fallback target; --target instead
//                                   names the targets)
//
// INPUT is FILE (.npy or ONNX TensorProto .pb, in input order), NAME=FILE, or
// NAME=random; inputs not given are random (--seed). --input-dir DIR takes
// DIR/input_N.pb (the ONNX test layout). Outputs: a summary line each,
// --output-dir DIR writes NAME.npy. --compare FILE... (or --expected-dir DIR
// with output_N.pb) checks outputs against expected values with
// --rtol/--atol and reports the largest absolute and relative errors and the
// first mismatching index. An output whose number of rows depends on the
// values (NonMaxSuppression) is written and compared with the rows its run
// produced; the extra output holding that count is not matched to expected
// files in output order. --benchmark times --warmup and --runs runs
// (min/median/p90), separately from compiling and loading. The load line
// says how many MLIR programs came precompiled and how many the driver
// compiled; --no-precompiled (or CGC_NO_PRECOMPILED=1) makes it compile all.
//
// Exit codes: 0 success, 1 outputs differ from the expected ones, 2 usage or
// input error, 3 compile/load/run failure.
//
//===----------------------------------------------------------------------===//

#include "Tensors.h"
#include "ToolSupport.h"

#include "cgc/runtime.h"
#include "cgc/runtime.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace cgc::run;

namespace {

enum ExitCode { kOk = 0, kMismatch = 1, kUsage = 2, kFailure = 3 };

struct Failure {
  int code;
  std::string message;
};
[[noreturn]] void fail(int code, std::string message) { throw Failure{code, std::move(message)}; }

/// Reads input and expected-output files: tensors (.npy, TensorProto), and
/// for an .onnx model's sequence and optional inputs and outputs the
/// SequenceProto or OptionalProto files the ONNX node tests keep them in.
/// Which of those a file holds is told by the model's declared kind for the
/// value's name (their wire formats overlap), read from the model on first
/// need.
class ValueReader {
public:
  ValueReader(const std::string &model, bool isOnnx) : model(model), isOnnx(isOnnx) {}
  /// The value in `path` for `name` (empty: the name stored in the file).
  HostValue read(const std::string &path, std::string name, bool isInput) {
    HostValue value;
    HostTensor tensor;
    std::string error;
    if (readTensorFile(path, tensor, error)) {
      value.name = name.empty() ? tensor.name : name;
      value.tensors.push_back(std::move(tensor));
      return value;
    }
    if (name.empty())
      name = storedValueName(path);
    if (!isOnnx || name.empty() || !endsWith(model, ".onnx"))
      fail(kUsage, error);
    if (!loaded) {
      std::string why;
      if (!readModelValueKinds(model, inputs, outputs, why))
        fail(kUsage, error + " (" + why + ")");
      loaded = true;
    }
    const auto &kinds = isInput ? inputs : outputs;
    auto it = kinds.find(name);
    if (it == kinds.end() || it->second == ValueKind::Tensor)
      fail(kUsage, error);
    if (!readValueFile(path, name, it->second, value, error))
      fail(kUsage, error);
    return value;
  }

private:
  std::string model;
  bool isOnnx;
  bool loaded = false;
  std::map<std::string, ValueKind> inputs, outputs;
};

/// Whether `value` is a sequence or optional (not one tensor).
bool isAggregate(const HostValue &value) { return value.isSequence || value.isOptional; }

void check(cgc_status_t status, int code = kFailure, const std::string &context = "") {
  if (!status)
    return;
  std::string message = cgc_status_message(status);
  std::string name = cgc_status_code_name(cgc_status_code(status));
  cgc_status_free(status);
  fail(code, (context.empty() ? "" : context + ": ") + message + " [" + name + "]");
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

/// input_0.pb, input_1.pb, ... (or output_N.pb) in DIR, by N.
std::vector<std::string> numberedFiles(const std::string &dir, const std::string &prefix) {
  std::vector<std::string> paths;
  std::string error;
  if (!cgc::run::numberedFiles(dir, prefix, paths, error))
    fail(kUsage, error);
  return paths;
}

/// NumPy has no bfloat16: ONNX's test data and .npy files hold bfloat16
/// tensors as uint16 bit patterns. Such a file is taken as bfloat16 where the
/// model has bfloat16.
void reinterpretBfloat16(HostTensor &tensor, cgc_dtype_t want) {
  if (want == CGC_DTYPE_BFLOAT16 && tensor.dtype == CGC_DTYPE_UINT16)
    tensor.dtype = CGC_DTYPE_BFLOAT16;
}

std::string fileNameOf(std::string name) {
  for (char &c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      c = '_';
  return name.empty() ? "output" : name;
}

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::string inputDir;
  std::string outputDir;
  std::vector<std::string> compare;
  std::string expectedDir;
  Tolerances tolerances;
  bool benchmark = false;
  int warmup = 3, runs = 20;
  uint32_t threads = 0, compileThreads = 0;
  std::string driver;
  std::string driverOptions;
  bool debugLayer = false;
  uint64_t seed = 1;
  std::vector<std::string> inputShapes, freezeInputs, targets;
  int64_t maxLoopIterations = 0; // 0: the compiler's default
  std::string saveModel;
  std::string reportJson;
  bool quiet = false;
  int printValues = 5;
  bool noPrecompiled = false;
  std::string sodb;
  std::vector<std::string> psdbs;
};

/// Progress on stderr: one line rewritten in place on a terminal.
class Progress {
public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(isatty(2)) {}
  void line(const std::string &text) {
    if (quiet_)
      return;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", text.c_str());
      open_ = true;
    } else {
      std::fprintf(stderr, "%s\n", text.c_str());
    }
    std::fflush(stderr);
  }
  /// A line that only a terminal shows (frequent updates).
  void transient(const std::string &text) {
    if (!quiet_ && tty_)
      line(text);
  }
  void done() {
    if (open_)
      std::fprintf(stderr, "\n");
    open_ = false;
  }
  ~Progress() { done(); }

private:
  bool quiet_, tty_, open_ = false;
};

struct Timings {
  double compileSeconds = 0; // .onnx -> compiled model
  double loadSeconds = 0;    // cgc_model_load_*: partitions compiled, constants mapped
  std::vector<double> runSeconds;
  double firstRunSeconds = 0; // the first run after loading (any lazy work in it)
};

int runMain(const Options &o) {
  Progress progress(o.quiet);
  Timings timings;

  cgc_device_options_t deviceOptions;
  cgc_device_options_init(&deviceOptions);
  deviceOptions.driver = o.driver.empty() ? nullptr : o.driver.c_str();
  deviceOptions.debug_layer = o.debugLayer;
  deviceOptions.device_threads = o.threads;
  deviceOptions.driver_options = o.driverOptions.empty() ? nullptr : o.driverOptions.c_str();
  deviceOptions.compile_threads = o.compileThreads;
  if (!o.psdbs.empty()) {
    std::vector<const char *> paths;
    for (const std::string &path : o.psdbs)
      paths.push_back(path.c_str());
    check(cgc_register_precompiled_databases(o.sodb.c_str(), paths.size(), paths.data()),
          kFailure, "registering the precompiled databases");
  }
  cgc_device_t *device = nullptr;
  check(cgc_device_create(&deviceOptions, &device), kFailure, "creating the device");
  // Released on every way out, errors (fail() throws) included; in reverse
  // order of creation: context, model, device.
  std::unique_ptr<cgc_device_t, void (*)(cgc_device_t *)> deviceGuard(device,
                                                                      cgc_device_release);

  // The compiled model: from the file, or compiled now for the device (its
  // driver's patterns first unless --target names the targets).
  std::vector<uint8_t> compiled;
  bool isOnnx = endsWith(o.model, ".onnx") || endsWith(o.model, ".onnxtxt");
  ValueReader reader(o.model, isOnnx);
  if (isOnnx) {
    cgc::CompileOptions co;
    co.inputShapes = o.inputShapes;
    // Without --input-shape, the shapes of the input files bind the model's
    // symbolic dimensions: by name (NAME=FILE, a .pb's stored name), or, when
    // no file is named, by position (#0, #1, ...).
    if (co.inputShapes.empty()) {
      auto shapeText = [](const std::vector<int64_t> &shape) {
        std::string text;
        for (size_t d = 0; d < shape.size(); ++d)
          text += (d ? "x" : "") + std::to_string(shape[d]);
        return text;
      };
      std::vector<std::string> named, unnamed;
      std::vector<std::string> files;
      // A sequence binds its length and its tensors' shapes; an optional
      // its tensor's or its sequence's, or that it holds none.
      auto bindValue = [&](const HostValue &value) {
        if (value.isOptional && !value.present)
          named.push_back(value.name + "=none");
        else if (value.isSequence)
          named.push_back(value.name + "=sequence(" + std::to_string(value.tensors.size()) + ")");
        for (const HostTensor &t : value.tensors)
          named.push_back(t.name + "=" + shapeText(t.shape));
      };
      for (const std::string &arg : o.inputs) {
        size_t eq = arg.find('=');
        if (eq == std::string::npos || access(arg.c_str(), F_OK) == 0) {
          files.push_back(arg);
          continue;
        }
        std::string value = arg.substr(eq + 1);
        if (value == "random" || value.compare(0, 7, "random:") == 0)
          continue;
        HostValue read = reader.read(value, arg.substr(0, eq), true);
        if (isAggregate(read))
          bindValue(read);
        else
          named.push_back(arg.substr(0, eq) + "=" + shapeText(read.tensors.front().shape));
      }
      if (!o.inputDir.empty())
        for (const std::string &path : numberedFiles(o.inputDir, "input_"))
          files.push_back(path);
      for (const std::string &path : files) {
        HostValue read = reader.read(path, "", true);
        if (isAggregate(read)) {
          bindValue(read);
          continue;
        }
        const HostTensor &t = read.tensors.front();
        if (!t.name.empty())
          named.push_back(t.name + "=" + shapeText(t.shape));
        else
          unnamed.push_back(shapeText(t.shape));
      }
      co.inputShapes = named;
      if (named.empty())
        for (size_t i = 0; i < unnamed.size(); ++i)
          co.inputShapes.push_back("#" + std::to_string(i) + "=" + unnamed[i]);
      if (!co.inputShapes.empty()) {
        std::string list;
        for (const std::string &s : co.inputShapes)
          list += (list.empty() ? "" : " ") + s;
        progress.line("cgc-run: input shapes from the input files (--input-shape overrides): " +
                      list);
      }
    }
    co.freezeInputs = o.freezeInputs;
    co.targets = o.targets;
    co.noDevicePatterns = !o.targets.empty();
    // cgc-run returns outputs with data-dependent rows at their size.
    co.dataDependentRows = true;
    co.maxLoopIterations = o.maxLoopIterations;
    auto start = std::chrono::steady_clock::now();
    co.onStage = [&](const std::string &stage) {
      std::ostringstream os;
      os.precision(2);
      os << std::fixed << "cgc-run: compiling " << o.model << ": " << stage << " ("
         << seconds(std::chrono::steady_clock::now() - start) << " s)";
      progress.line(os.str());
    };
    co.onMessage = [&](const std::string &text) { progress.line("cgc-run: " + text); };
    try {
      compiled = cgc::compileOnnxFile(device, o.model, co).bytes;
    } catch (const cgc::Error &e) {
      fail(kFailure, std::string(e.what()) + " [" + cgc_status_code_name(e.code()) + "]");
    }
    timings.compileSeconds = seconds(std::chrono::steady_clock::now() - start);
    progress.done();
    if (!o.saveModel.empty()) {
      std::string error;
      if (!writeFile(o.saveModel, compiled.data(), compiled.size(), error))
        fail(kFailure, "--save-model: cannot write the compiled model: " + error);
    }
  } else if (!o.inputShapes.empty() || !o.freezeInputs.empty() || !o.targets.empty()) {
    fail(kUsage, "--input-shape, --freeze-input and --target apply to .onnx models only");
  }

  struct ProgressState {
    Progress *progress;
  } state{&progress};
  cgc_model_options_t modelOptions = {};
  modelOptions.progress = [](void *user, uint32_t done, uint32_t total, const char *program) {
    auto *s = static_cast<ProgressState *>(user);
    s->progress->transient("cgc-run: compiling partitions " + std::to_string(done) + "/" +
                           std::to_string(total) + " (" + program + ")");
  };
  modelOptions.progress_user_data = &state;
  modelOptions.ignore_precompiled = o.noPrecompiled;
  cgc_model_t *model = nullptr;
  auto loadStart = std::chrono::steady_clock::now();
  cgc_status_t loaded =
      compiled.empty()
          ? cgc_model_load_file(device, o.model.c_str(), &modelOptions, &model)
          : cgc_model_load_memory(device, compiled.data(), compiled.size(), &modelOptions, &model);
  progress.done();
  check(loaded, kFailure, compiled.empty() ? "" : o.model);
  std::unique_ptr<cgc_model_t, void (*)(cgc_model_t *)> modelGuard(model, cgc_model_release);
  timings.loadSeconds = seconds(std::chrono::steady_clock::now() - loadStart);
  compiled.clear();
  compiled.shrink_to_fit();

  size_t numInputs = cgc_model_input_count(model), numOutputs = cgc_model_output_count(model);
  std::vector<cgc_tensor_info_t> inputInfo(numInputs), outputInfo(numOutputs);
  std::string inputNames;
  for (size_t i = 0; i < numInputs; ++i) {
    check(cgc_model_input_info(model, i, &inputInfo[i]));
    inputNames += std::string(i ? ", " : "") + inputInfo[i].name;
  }
  for (size_t i = 0; i < numOutputs; ++i)
    check(cgc_model_output_info(model, i, &outputInfo[i]));
  auto shapeOf = [](const cgc_tensor_info_t &info) {
    return std::vector<int64_t>(info.shape, info.shape + info.rank);
  };

  // Inputs: positional files in order, NAME=FILE, NAME=random, a directory.
  std::vector<std::optional<HostTensor>> inputs(numInputs);
  std::vector<std::string> sources(numInputs, "random");
  auto place = [&](size_t index, HostTensor tensor, const std::string &source) {
    const cgc_tensor_info_t &info = inputInfo[index];
    std::string what = "input " + std::to_string(index) + " '" + info.name + "' from " + source;
    reinterpretBfloat16(tensor, info.dtype);
    if (tensor.dtype != info.dtype || tensor.shape != shapeOf(info))
      fail(kUsage, what + ": expected " + describe(info.dtype, shapeOf(info)) + ", got " +
                       describe(tensor.dtype, tensor.shape));
    if (inputs[index])
      fail(kUsage, "input " + std::to_string(index) + " '" + info.name + "' is given twice");
    inputs[index] = std::move(tensor);
    sources[index] = source;
  };
  auto findInput = [&](const std::string &name) -> size_t {
    size_t index = 0;
    cgc_status_t s = cgc_model_find_input(model, name.c_str(), &index);
    check(s, kUsage);
    return index;
  };
  std::vector<std::string> positional;
  for (const std::string &arg : o.inputs) {
    size_t eq = arg.find('=');
    if (eq == std::string::npos || access(arg.c_str(), F_OK) == 0) {
      positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (value == "random" || value.compare(0, 7, "random:") == 0) {
      size_t index = findInput(name);
      if (inputs[index])
        fail(kUsage, "input '" + name + "' is given twice");
      continue; // filled below
    }
    HostValue read = reader.read(value, name, true);
    if (isAggregate(read)) {
      for (HostTensor &t : read.tensors)
        place(findInput(t.name), std::move(t), value);
      continue;
    }
    place(findInput(name), std::move(read.tensors.front()), value);
  }
  if (!o.inputDir.empty()) {
    std::vector<std::string> found = numberedFiles(o.inputDir, "input_");
    // A directory without the files is a mistake (an .npy layout, a wrong
    // path), not a request for random inputs.
    if (found.empty() && numInputs > 0)
      fail(kUsage, "--input-dir " + o.inputDir + " holds no input_N.pb (ONNX test data layout); "
                   "give other files as NAME=FILE or positionally");
    positional.insert(positional.end(), found.begin(), found.end());
  }
  // Positional files: by the name stored in a .pb when it names an input,
  // else in input order among the inputs not yet given.
  std::vector<HostTensor> unnamed;
  std::vector<std::string> unnamedPaths;
  for (const std::string &path : positional) {
    HostValue read = reader.read(path, "", true);
    if (isAggregate(read)) {
      for (HostTensor &t : read.tensors)
        place(findInput(t.name), std::move(t), path);
      continue;
    }
    HostTensor t = std::move(read.tensors.front());
    size_t index = 0;
    cgc_status_t s = t.name.empty() ? nullptr : cgc_model_find_input(model, t.name.c_str(), &index);
    if (!t.name.empty() && !s) {
      place(index, std::move(t), path);
    } else {
      cgc_status_free(s);
      unnamed.push_back(std::move(t));
      unnamedPaths.push_back(path);
    }
  }
  size_t next = 0;
  for (size_t k = 0; k < unnamed.size(); ++k) {
    while (next < numInputs && inputs[next])
      ++next;
    if (next >= numInputs)
      fail(kUsage, "too many inputs: the model has " + std::to_string(numInputs) + " (" +
                       inputNames + "), " + unnamedPaths[k] + " is one more");
    place(next, std::move(unnamed[k]), unnamedPaths[k]);
  }
  for (size_t i = 0; i < numInputs; ++i) {
    if (inputs[i])
      continue;
    HostTensor t;
    t.dtype = inputInfo[i].dtype;
    t.shape = shapeOf(inputInfo[i]);
    fillRandom(t, o.seed * 1000003 + i);
    inputs[i] = std::move(t);
  }

  // Expected outputs.
  std::vector<std::string> expectedPaths = o.compare;
  if (!o.expectedDir.empty()) {
    auto found = numberedFiles(o.expectedDir, "output_");
    expectedPaths.insert(expectedPaths.end(), found.begin(), found.end());
  }
  std::vector<std::optional<HostTensor>> expected(numOutputs);
  std::vector<std::string> expectedSource(numOutputs);
  // Outputs holding another output's data-dependent rows are not the ONNX
  // model's: expected files in output order skip them.
  std::vector<bool> isRowCount(numOutputs, false);
  for (size_t i = 0; i < numOutputs; ++i) {
    int64_t from = -1;
    check(cgc_model_output_rows_from(model, i, &from));
    if (from >= 0 && size_t(from) < numOutputs)
      isRowCount[size_t(from)] = true;
  }
  // A sequence or optional expected: its tensors are matched by name
  // (`y[0]`, ... or `y`), and the model must compute no more of them.
  std::vector<std::string> structureMismatches;
  auto hasOutput = [&](const std::string &name) {
    size_t k = 0;
    cgc_status_t s = cgc_model_find_output(model, name.c_str(), &k);
    bool found = s == nullptr;
    cgc_status_free(s);
    return found;
  };
  auto expectAggregate = [&](HostValue &value, const std::string &path) {
    for (HostTensor &t : value.tensors) {
      if (!hasOutput(t.name)) {
        structureMismatches.push_back("MISMATCH output '" + t.name + "' vs " + path +
                                      ": the model computes no such output ('" + value.name +
                                      "' holds fewer tensors than expected)");
        continue;
      }
      size_t k = 0;
      check(cgc_model_find_output(model, t.name.c_str(), &k));
      reinterpretBfloat16(t, outputInfo[k].dtype);
      expected[k] = std::move(t);
      expectedSource[k] = path;
    }
    std::string past = value.name + "[" + std::to_string(value.tensors.size()) + "]";
    bool tensorHeld = value.isOptional && value.present && !value.isSequence;
    if ((!tensorHeld && hasOutput(value.name)) || (!tensorHeld && hasOutput(past)) ||
        (tensorHeld && hasOutput(value.name + "[0]")))
      structureMismatches.push_back(
          "MISMATCH output '" + value.name + "' vs " + path + ": expected " +
          (value.isOptional && !value.present
               ? std::string("an optional holding no value")
               : std::to_string(value.tensors.size()) + " tensor(s)") +
          ", the model computes more");
  };
  {
    size_t position = 0;
    for (const std::string &arg : expectedPaths) {
      std::string path = arg, givenName;
      std::optional<size_t> index;
      size_t eq = arg.find('=');
      if (eq != std::string::npos && access(arg.c_str(), F_OK) != 0) {
        givenName = arg.substr(0, eq);
        path = arg.substr(eq + 1);
        if (hasOutput(givenName)) {
          size_t k = 0;
          check(cgc_model_find_output(model, givenName.c_str(), &k));
          index = k;
        }
      }
      HostValue read = reader.read(path, givenName, false);
      if (isAggregate(read)) {
        expectAggregate(read, path);
        continue;
      }
      if (!givenName.empty() && !index) {
        size_t k = 0;
        check(cgc_model_find_output(model, givenName.c_str(), &k), kUsage);
      }
      HostTensor t = std::move(read.tensors.front());
      if (!index && !t.name.empty()) {
        size_t k = 0;
        cgc_status_t s = cgc_model_find_output(model, t.name.c_str(), &k);
        if (!s)
          index = k;
        cgc_status_free(s);
      }
      if (!index) {
        while (position < numOutputs && (expected[position] || isRowCount[position]))
          ++position;
        index = position;
      }
      if (*index >= numOutputs)
        fail(kUsage, "more expected outputs than the model's " + std::to_string(numOutputs) +
                         ": " + path);
      reinterpretBfloat16(t, outputInfo[*index].dtype);
      expected[*index] = std::move(t);
      expectedSource[*index] = path;
    }
  }

  // Run.
  cgc_context_t *context = nullptr;
  check(cgc_context_create(model, nullptr, &context));
  std::unique_ptr<cgc_context_t, void (*)(cgc_context_t *)> contextGuard(context,
                                                                         cgc_context_release);
  for (size_t i = 0; i < numInputs; ++i)
    check(cgc_context_set_input_data(context, i, inputs[i]->data.data(), inputs[i]->data.size()),
          kUsage);
  int total = o.benchmark ? o.warmup + o.runs : 1;
  for (int r = 0; r < total; ++r) {
    auto start = std::chrono::steady_clock::now();
    check(cgc_context_run(context), kFailure, o.model);
    double s = seconds(std::chrono::steady_clock::now() - start);
    if (r == 0)
      timings.firstRunSeconds = s;
    if (!o.benchmark || r >= o.warmup)
      timings.runSeconds.push_back(s);
    if (o.benchmark)
      progress.transient("cgc-run: run " + std::to_string(r + 1) + "/" + std::to_string(total));
  }
  progress.done();

  std::vector<HostTensor> outputs(numOutputs);
  for (size_t i = 0; i < numOutputs; ++i) {
    outputs[i].name = outputInfo[i].name;
    outputs[i].dtype = outputInfo[i].dtype;
    outputs[i].shape = shapeOf(outputInfo[i]);
    outputs[i].data.resize(outputInfo[i].bytes);
    check(cgc_context_get_output_data(context, i, outputs[i].data.data(), outputs[i].data.size()));
    // Data-dependent rows: the run's rows, not the bound.
    int64_t rows = 0;
    check(cgc_context_output_rows(context, i, &rows), kFailure, o.model);
    if (!outputs[i].shape.empty() && rows < outputs[i].shape[0]) {
      outputs[i].data.resize(outputs[i].data.size() / size_t(outputs[i].shape[0]) * size_t(rows));
      outputs[i].shape[0] = rows;
    }
  }

  // Report.
  int exitCode = kOk;
  for (const std::string &line : structureMismatches) {
    std::fprintf(stderr, "%s\n", line.c_str());
    exitCode = kMismatch;
  }
  std::ostringstream json;
  json << "{\"model\": \"" << o.model << "\", \"outputs\": [";
  for (size_t i = 0; i < numOutputs; ++i) {
    const HostTensor &out = outputs[i];
    if (!o.quiet)
      std::printf("output %zu '%s': %s\n", i, out.name.c_str(),
                  summarize(out, o.printValues).c_str());
    if (!o.outputDir.empty()) {
      mkdir(o.outputDir.c_str(), 0755);
      std::string path = o.outputDir + "/" + fileNameOf(out.name) + ".npy";
      std::string error;
      if (!writeNpy(path, out, error))
        fail(kFailure, error);
    }
    json << (i ? ", " : "") << "{\"name\": \"" << out.name << "\"";
    if (expected[i]) {
      const Tolerances &t = o.tolerances;
      Comparison c = compare(out, *expected[i], t);
      auto finite = [](double v) { return std::isfinite(v) ? v : 1e300; };
      json << ", \"matches\": " << (c.matches ? "true" : "false")
           << ", \"max_abs_error\": " << finite(c.maxAbsError)
           << ", \"max_rel_error\": " << finite(c.maxRelError)
           << ", \"normwise_rel_error\": " << finite(c.normwiseRelError)
           << ", \"scale\": " << c.scale << ", \"mismatches\": " << c.mismatches;
      char line[1024];
      char errors[256];
      std::snprintf(errors, sizeof(errors),
                    "max abs error %.3g, max rel error %.3g, normwise rel error %.3g (scale "
                    "%.3g; rtol %g, atol %g, stol %g)",
                    c.maxAbsError, c.maxRelError, c.normwiseRelError, c.scale, t.rtol, t.atol,
                    t.stol);
      if (!c.error.empty()) {
        std::snprintf(line, sizeof(line), "MISMATCH output %zu '%s' vs %s: %s\n", i,
                      out.name.c_str(), expectedSource[i].c_str(), c.error.c_str());
      } else if (c.matches) {
        std::snprintf(line, sizeof(line), "match    output %zu '%s' vs %s: %s\n", i,
                      out.name.c_str(), expectedSource[i].c_str(), errors);
      } else {
        std::snprintf(line, sizeof(line),
                      "MISMATCH output %zu '%s' vs %s: %lld of %lld elements differ; %s; first "
                      "at %s: got %.9g, expected %.9g\n",
                      i, out.name.c_str(), expectedSource[i].c_str(), (long long)c.mismatches,
                      (long long)out.elements(), errors,
                      indexString(c.firstMismatch, out.shape).c_str(), c.got, c.want);
      }
      std::fputs(line, c.matches ? stdout : stderr);
      // A fixed absolute tolerance as large as the output itself accepts
      // anything of that size (zeros, the negation): say so beside the match.
      if (c.matches && c.error.empty() && c.maxAbsError > 0 && t.atol >= c.scale)
        std::fprintf(stderr,
                     "warning: output %zu '%s': --atol %g is at least the expected output's "
                     "largest magnitude %.3g: this comparison cannot tell it from zeros (use "
                     "--stol, relative to the output's scale)\n",
                     i, out.name.c_str(), t.atol, c.scale);
      if (!c.matches)
        exitCode = kMismatch;
    }
    json << "}";
  }
  json << "]";

  std::vector<double> sorted = timings.runSeconds;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    return sorted.empty() ? 0.0
                          : sorted[std::min(sorted.size() - 1,
                                            p <= 0 ? size_t(0)
                                                   : size_t(std::ceil(p * double(sorted.size()))) - 1)];
  };
  cgc_model_stats_t stats;
  cgc_model_stats(model, &stats);
  if (!o.quiet) {
    std::printf("timing: %scompile partitions + load %.1f ms (%u MLIR programs, %u kernel "
                "programs, %u dispatches, %u barriers; scratch %.2f MiB, constants %.2f MiB%s)\n",
                isOnnx ? ("onnx -> compiled model " + std::to_string(int(timings.compileSeconds * 1000)) + " ms, ").c_str() : "",
                timings.loadSeconds * 1000, stats.mlir_programs, stats.kernel_programs,
                stats.dispatches, stats.barriers, double(stats.scratch_bytes) / (1 << 20),
                double(stats.constants_bytes) / (1 << 20),
                stats.constants_in_place ? ", mapped in place" : "");
    if (stats.mlir_programs) {
      std::string rejected =
          stats.precompiled_rejected
              ? ", " + std::to_string(stats.precompiled_rejected) +
                    " of them with a precompiled program the driver did not accept"
              : "";
      std::string database =
          stats.database_programs || stats.database_stale
              ? ", " + std::to_string(stats.database_programs) +
                    " from a precompiled database" +
                    (stats.database_stale ? " (" + std::to_string(stats.database_stale) +
                                                " stale entries compiled)"
                                          : "")
              : "";
      std::printf("programs: %u MLIR programs: %u precompiled%s, %u compiled by the driver%s%s\n",
                  stats.mlir_programs, stats.precompiled_programs, database.c_str(),
                  stats.compiled_programs, rejected.c_str(),
                  stats.precompiled_ignored ? " (precompiled programs ignored)" : "");
    }
    if (stats.prepared_blocks_mapped || stats.prepared_blocks_computed)
      std::printf("constants: prepared at load in %.1f ms: %llu blocks (%.2f MiB) mapped from a "
                  "precompiled database, %llu blocks (%.2f MiB) transformed\n",
                  double(stats.prepare_ns) / 1e6, (unsigned long long)stats.prepared_blocks_mapped,
                  double(stats.prepared_bytes_mapped) / (1 << 20),
                  (unsigned long long)stats.prepared_blocks_computed,
                  double(stats.prepared_bytes_computed) / (1 << 20));
    if (!o.benchmark)
      std::printf("timing: run %.3f ms\n", pct(0) * 1000);
  }
  if (o.benchmark) // asked for: printed even with --quiet
    std::printf("benchmark: %zu runs after %d warm-up: min %.3f ms, median %.3f ms, p90 %.3f "
                "ms, mean %.3f ms; first run %.3f ms\n",
                sorted.size(), o.warmup, pct(0) * 1000, pct(0.5) * 1000, pct(0.9) * 1000,
                sorted.empty() ? 0.0
                               : 1000 * std::accumulate(sorted.begin(), sorted.end(), 0.0) /
                                     double(sorted.size()),
                timings.firstRunSeconds * 1000);
  json << ", \"compile_ms\": " << timings.compileSeconds * 1000
       << ", \"load_ms\": " << timings.loadSeconds * 1000
       << ", \"first_run_ms\": " << timings.firstRunSeconds * 1000
       << ", \"precompiled_programs\": " << stats.precompiled_programs
       << ", \"compiled_programs\": " << stats.compiled_programs
       << ", \"precompiled_rejected\": " << stats.precompiled_rejected
       << ", \"database_programs\": " << stats.database_programs
       << ", \"database_stale\": " << stats.database_stale
       << ", \"prepare_ms\": " << double(stats.prepare_ns) / 1e6
       << ", \"prepared_blocks_mapped\": " << stats.prepared_blocks_mapped
       << ", \"prepared_blocks_computed\": " << stats.prepared_blocks_computed
       << ", \"prepared_bytes_computed\": " << stats.prepared_bytes_computed << ", \"runs_ms\": [";
  for (size_t i = 0; i < timings.runSeconds.size(); ++i)
    json << (i ? ", " : "") << timings.runSeconds[i] * 1000;
  json << "], \"min_ms\": " << pct(0) * 1000 << ", \"median_ms\": " << pct(0.5) * 1000
       << ", \"p90_ms\": " << pct(0.9) * 1000 << ", \"peak_rss_kib\": " << peakRssKiB()
       << "}\n";
  if (!o.reportJson.empty()) {
    std::string error, text = json.str();
    if (!writeFile(o.reportJson, text.data(), text.size(), error))
      fail(kFailure, "--report-json: " + error);
  }

  return exitCode;
}

} // namespace

/// A tolerance: a finite number >= 0 (CLI::NonNegativeNumber would print
/// DBL_MAX in full as its bound).
const CLI::Validator kTolerance(
    [](std::string &value) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(value, v) || !std::isfinite(v) || v < 0)
        return "Value " + value + " is not a tolerance (a finite number >= 0)";
      return "";
    },
    "TOLERANCE");

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"cgc-run: run or benchmark a compiled model (.cgc), or an ONNX model compiled on "
               "the fly.\n\nINPUT: FILE (.npy or ONNX TensorProto .pb, in input order), "
               "NAME=FILE or NAME=random. Inputs not given are random."};
  app.add_option("model", o.model, "The compiled model (.cgc) or ONNX model (.onnx)")->required();
  app.add_option("inputs", o.inputs, "Inputs: FILE, NAME=FILE or NAME=random");
  app.add_option("--input-dir", o.inputDir, "Read DIR/input_N.pb (ONNX test data layout)");
  app.add_option("--output-dir", o.outputDir, "Write each output to DIR/NAME.npy");
  app.add_option("--compare", o.compare,
                 "Expected outputs (.npy or .pb; FILE in output order or NAME=FILE)");
  app.add_option("--expected-dir", o.expectedDir, "Expected outputs DIR/output_N.pb");
  app.add_option("--rtol", o.tolerances.rtol,
                 "Relative tolerance of --compare: |got - want| <= atol + rtol |want| + stol "
                 "max|want|")
      ->default_str("1e-4")
      ->check(kTolerance);
  app.add_option("--atol", o.tolerances.atol, "Absolute tolerance of --compare")
      ->default_str("0")
      ->check(kTolerance);
  app.add_option("--stol", o.tolerances.stol,
                 "Tolerance of --compare relative to the expected output's scale (its largest "
                 "magnitude)")
      ->default_str("1e-5")
      ->check(kTolerance);
  app.add_flag("--benchmark", o.benchmark, "Time --warmup then --runs runs");
  app.add_option("--warmup", o.warmup, "Warm-up runs of --benchmark")->default_str("3")
      ->check(CLI::Range(0, kMaxRuns));
  app.add_option("--runs", o.runs, "Timed runs of --benchmark")->default_str("20")
      ->check(CLI::Range(1, kMaxRuns));
  app.add_option("--threads", o.threads, "Worker threads of the device (0: one per core)")
      ->check(CLI::Range(0u, cgc::kMaxThreads));
  app.add_option("--compile-threads", o.compileThreads,
                 "Threads compiling partitions at load (0: one per core)")
      ->check(CLI::Range(0u, cgc::kMaxThreads));
  app.add_option("--driver", o.driver, "D3D12 driver name or path (default: cpu)");
  app.add_option("--driver-options", o.driverOptions,
                 "The driver's configuration of the device: NAME=VALUE,... (the CPU "
                 "driver's kernel and scheduling choices, docs/runtime.md)");
  app.add_flag("--debug-layer", o.debugLayer, "Validate every dispatch with the debug layer");
  app.add_option("--seed", o.seed, "Seed of random inputs")->default_str("1");
  // One value per occurrence (repeatable), so that inputs after them are not
  // taken as their values.
  app.add_option("--input-shape", o.inputShapes,
                 "(.onnx) NAME=D0xD1x... for inputs with symbolic dimensions (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--freeze-input", o.freezeInputs,
                 "(.onnx) NAME=FILE.pb: compile the input as a constant (repeatable)")
      ->allow_extra_args(false);
  app.add_option("--max-loop-iterations", o.maxLoopIterations,
                 "(.onnx) iterations a Loop steered at run time is compiled for (default 64)")
      ->check(CLI::Range(int64_t(1), int64_t(4096)));
  app.add_option("--target", o.targets,
                 "(.onnx) compilation targets in priority order (repeatable or comma-separated; "
                 "e.g. cpu)")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("--save-model", o.saveModel, "(.onnx) also write the compiled model here");
  app.add_flag("--no-precompiled", o.noPrecompiled,
               "Do not give the driver the model's precompiled programs: it compiles every "
               "MLIR program (as CGC_NO_PRECOMPILED=1 does)");
  auto *sodbOption = app.add_option("--sodb", o.sodb,
                                    "A state object database (cgc-soc add) whose precompiled "
                                    "databases --psdb names: MLIR programs found there are not "
                                    "compiled (docs/precompilation.md)");
  app.add_option("--psdb", o.psdbs, "A precompiled database compiled from --sodb (cgc-soc "
                                    "compile); repeatable")
      ->needs(sodbOption);
  sodbOption->needs(app.get_option("--psdb"));
  app.add_option("--report-json", o.reportJson, "Write timings and comparisons as JSON");
  app.add_option("--print-values", o.printValues, "Values shown per output")->default_str("5");
  app.add_flag("-q,--quiet", o.quiet, "Print only mismatches and errors");
  app.set_version_flag("--version", versionText("cgc-run"));
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose,
               "Also print the D3D12 runtime's and driver's messages (errors are reported "
               "either way)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kUsage;
  }
  // Side files are checked before the work, so that a long run does not end
  // in a file that cannot be written.
  for (const std::string *path : {&o.reportJson, &o.saveModel}) {
    std::string error;
    if (!path->empty() && !checkOutputPath(*path, error)) {
      std::fprintf(stderr, "cgc-run: error: %s %s\n",
                   path == &o.reportJson ? "--report-json" : "--save-model", error.c_str());
      return kUsage;
    }
  }
  // The runtime returns the D3D12 layer's error messages in its statuses;
  // printing them to stderr as well is only noise unless asked for.
  if (!verbose)
    setenv("CGC_D3D12_DEBUG_QUIET", "1", /*overwrite=*/0);
  try {
    return runMain(o);
  } catch (const Failure &f) {
    std::fprintf(stderr, "cgc-run: error: %s\n", f.message.c_str());
    return f.code;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "cgc-run: error: %s\n", e.what());
    return kFailure;
  } catch (...) {
    std::fprintf(stderr, "cgc-run: error: an unknown exception\n");
    return kFailure;
  }
}
