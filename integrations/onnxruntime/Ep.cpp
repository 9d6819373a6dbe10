//===- Ep.cpp - The cgc execution provider --------------------------------===//
//
// GetCapability claims the largest groups of nodes cgc compiles for the
// device: it exports the groups as ONNX models, compiles them, and leaves
// the nodes the compiler names in its errors to other EPs, until every group
// compiles. Compile reuses those compilations (or loads the compiled model
// of an EPContext node); Compute binds ONNX Runtime's tensors to the
// compiled model by address and runs it on the EP's stream.
//
//===----------------------------------------------------------------------===//

#include "Ep.h"

#include "Factory.h"
#include "GraphExport.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <functional>
#include <list>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

namespace cgc::ort_ep {
namespace {

struct ModelDeleter {
  void operator()(cgc_model_t *m) const { cgc_model_release(m); }
};
using ModelPtr = std::unique_ptr<cgc_model_t, ModelDeleter>;

struct BlobDeleter {
  void operator()(cgc_blob_t *b) const { cgc_blob_release(b); }
};
using BlobPtr = std::unique_ptr<cgc_blob_t, BlobDeleter>;

std::string shapeText(const std::vector<int64_t> &dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s.empty() ? "scalar" : s;
}

std::string joined(const std::vector<std::string> &texts) {
  std::string s;
  for (const std::string &t : texts)
    s += t + ";";
  return s;
}

/// cgc_compile_options_t binding symbolic input dimensions ("NAME=AxB"),
/// with the strings it points at.
struct ShapeOptions {
  ShapeOptions(std::vector<std::string> shapes, int64_t maxLoopIterations)
      : shapes(std::move(shapes)) {
    for (const std::string &text : this->shapes)
      pointers.push_back(text.c_str());
    cgc_compile_options_init(&options);
    options.input_shapes = pointers.data();
    options.input_shape_count = pointers.size();
    // Outputs with data-dependent rows (NonMaxSuppression and what follows
    // it row by row): Compute gives ONNX Runtime each run's rows.
    options.data_dependent_rows = true;
    options.max_loop_iterations = maxLoopIterations;
  }
  ShapeOptions(const ShapeOptions &) = delete;
  ShapeOptions &operator=(const ShapeOptions &) = delete;

  std::vector<std::string> shapes;
  std::vector<const char *> pointers;
  cgc_compile_options_t options;
};

/// A key for compiled ONNX bytes: two 64-bit hashes and the size.
std::string bytesKey(const std::string &bytes) {
  uint64_t fnv = 1469598103934665603ull;
  for (unsigned char c : bytes)
    fnv = (fnv ^ c) * 1099511628211ull;
  return std::to_string(fnv) + ":" + std::to_string(std::hash<std::string>()(bytes)) + ":" +
         std::to_string(bytes.size());
}

//===----------------------------------------------------------------------===//
// A compiled model and its contexts (one per stream)
//===----------------------------------------------------------------------===//

struct Binding {
  void *data = nullptr;
  size_t bytes = 0;
  cgc_tensor_t *tensor = nullptr;
};

struct Context {
  cgc_context_t *context = nullptr;
  cgc_stream_t *stream = nullptr; // the key; the context keeps it alive
  std::mutex busy;
  std::vector<Binding> inputs, outputs;
  /// An output with data-dependent rows, read whole before its run's rows
  /// are copied into ONNX Runtime's output.
  std::vector<uint8_t> rowsBuffer;
  ~Context() {
    for (auto *list : {&inputs, &outputs})
      for (Binding &b : *list)
        cgc_tensor_release(b.tensor);
    cgc_context_release(context);
  }
};

struct Loaded {
  Loaded(DevicePtr device, ModelPtr model, const std::vector<std::string> &inputNames,
         const std::vector<std::string> &outputNames, const std::string &label)
      : device(std::move(device)), model(std::move(model)) {
    size_t ins = cgc_model_input_count(this->model.get());
    size_t outs = cgc_model_output_count(this->model.get());
    inputInfo.resize(ins);
    outputInfo.resize(outs);
    for (size_t i = 0; i < ins; ++i)
      check(cgc_model_input_info(this->model.get(), i, &inputInfo[i]), "input info");
    for (size_t i = 0; i < outs; ++i)
      check(cgc_model_output_info(this->model.get(), i, &outputInfo[i]), "output info");
    // ONNX Runtime's inputs and outputs of the fused node, by name.
    std::vector<bool> inputBound(ins, false);
    for (const std::string &name : inputNames) {
      size_t index = 0;
      cgc_status_t s = cgc_model_find_input(this->model.get(), name.c_str(), &index);
      if (s) { // a constant the compiled model holds
        cgc_status_free(s);
        inputSlot.push_back(-1);
        continue;
      }
      inputSlot.push_back(int(index));
      inputBound[index] = true;
    }
    for (size_t i = 0; i < ins; ++i)
      if (!inputBound[i])
        fail(ORT_INVALID_GRAPH, label + ": the compiled model's input '" +
                                    std::string(inputInfo[i].name) +
                                    "' is not an input of the fused node");
    for (const std::string &name : outputNames) {
      size_t index = 0;
      check(cgc_model_find_output(this->model.get(), name.c_str(), &index),
            (label + ": output '" + name + "'").c_str());
      outputSlot.push_back(int(index));
    }
    rowsFrom.resize(outs, -1);
    for (size_t i = 0; i < outs; ++i)
      check(cgc_model_output_rows_from(this->model.get(), i, &rowsFrom[i]), "output rows");
  }

  Context &acquire(cgc_stream_t *stream, std::unique_lock<std::mutex> &lock) {
    std::lock_guard<std::mutex> guard(mutex);
    for (auto &c : contexts)
      if (c->stream == stream)
        if (std::unique_lock<std::mutex> l(c->busy, std::try_to_lock); l.owns_lock()) {
          lock = std::move(l);
          return *c;
        }
    auto c = std::make_unique<Context>();
    check(cgc_context_create(model.get(), stream, &c->context), "cgc_context_create");
    c->stream = stream;
    c->inputs.resize(inputInfo.size());
    c->outputs.resize(outputInfo.size());
    lock = std::unique_lock<std::mutex>(c->busy);
    contexts.push_back(std::move(c));
    return *contexts.back();
  }

  DevicePtr device;
  ModelPtr model;
  std::vector<cgc_tensor_info_t> inputInfo, outputInfo;
  std::vector<int> inputSlot, outputSlot;
  /// Per compiled-model output: the output holding its run's rows, or -1.
  std::vector<int64_t> rowsFrom;
  std::mutex mutex;
  std::vector<std::unique_ptr<Context>> contexts;
};

/// Binds `data` to a model input or output of `c` unless it is bound there.
void bind(Context &c, Loaded &m, bool input, size_t slot, void *data, size_t bytes) {
  Binding &b = (input ? c.inputs : c.outputs)[slot];
  if (b.tensor && b.data == data && b.bytes == bytes)
    return;
  const cgc_tensor_info_t &info = (input ? m.inputInfo : m.outputInfo)[slot];
  if (bytes != info.bytes)
    fail(ORT_INVALID_ARGUMENT,
         std::string(input ? "input" : "output") + " '" + info.name + "' has " +
             std::to_string(bytes) + " bytes; the compiled model's has " +
             std::to_string(info.bytes));
  cgc_tensor_desc_t desc = {info.dtype, info.rank, info.shape};
  cgc_tensor_t *tensor = nullptr;
  check(cgc_tensor_wrap_host(m.device.get(), &desc, data, bytes, &tensor),
        (std::string("binding '") + info.name + "'").c_str());
  cgc_status_t s = input ? cgc_context_bind_input(c.context, slot, tensor)
                         : cgc_context_bind_output(c.context, slot, tensor);
  if (s) {
    cgc_tensor_release(tensor);
    check(s, (std::string("binding '") + info.name + "'").c_str());
  }
  cgc_tensor_release(b.tensor);
  b = {data, bytes, tensor};
}

/// Loads compiled-model bytes (copied by the runtime) on `device`.
cgc_model_t *loadCompiled(const DevicePtr &device, const void *data, size_t size,
                          const std::string &name) {
  cgc_model_t *model = nullptr;
  check(cgc_model_load_memory(device.get(), data, size, nullptr, &model),
        ("loading " + name).c_str());
  return model;
}

//===----------------------------------------------------------------------===//
// Partitions: what one fused node runs
//===----------------------------------------------------------------------===//

struct Ep;

struct Partition {
  std::string name;
  DevicePtr device;
  std::vector<std::string> inputNames, outputNames; // the fused node's
  std::shared_ptr<Loaded> fixed;                    // static shapes
  // Compiled per run's inputs: symbolic dimensions take the inputs' shapes,
  // and the inputs in `freeze` (values the compiler needs at compile time:
  // a Reshape's shape, a Slice's starts) are compiled in as constants.
  bool perRun = false;
  int64_t maxLoopIterations = 0; // the EP option; 0: the compiler's default
  ExportedModel exported;
  std::set<std::string> freeze;
  /// Compiled by GetCapability for these input shapes ("NAME=AxB;...").
  std::map<std::string, std::vector<uint8_t>> seeded;
  std::mutex runMutex;
  std::list<std::pair<std::string, std::shared_ptr<Loaded>>> compiled; // most recent first
  static constexpr size_t kCacheSize = 8;

  void compute(OrtKernelContext *kernel);
  std::shared_ptr<Loaded> forInputs(const std::vector<const OrtValue *> &values);
};

/// The names the compiler asks to freeze in `error` ("--freeze-input
/// NAME=FILE.pb"); empty when some error is not such a request.
std::set<std::string> freezeRequests(const std::string &error) {
  std::set<std::string> names;
  size_t errors = 0, requests = 0;
  for (size_t at = error.find("error:"); at != std::string::npos;
       at = error.find("error:", at + 1))
    ++errors;
  const std::string marker = "--freeze-input ";
  for (size_t at = error.find(marker); at != std::string::npos;
       at = error.find(marker, at + 1)) {
    size_t start = at + marker.size(), eq = error.find("=FILE.pb", start);
    if (eq == std::string::npos)
      continue;
    ++requests;
    names.insert(error.substr(start, eq - start));
  }
  if (!errors || requests < errors)
    return {};
  return names;
}

std::shared_ptr<Loaded> Partition::forInputs(const std::vector<const OrtValue *> &values) {
  struct Input {
    std::vector<int64_t> dims;
    ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    const void *data = nullptr;
    size_t bytes = 0;
  };
  std::map<std::string, Input> inputs;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i])
      continue;
    Input in;
    OrtTensorTypeAndShapeInfo *info = nullptr;
    check(ort->GetTensorTypeAndShape(values[i], &info), "GetTensorTypeAndShape");
    size_t rank = 0;
    OrtStatus *s = ort->GetTensorElementType(info, &in.type);
    if (!s)
      s = ort->GetDimensionsCount(info, &rank);
    in.dims.resize(rank);
    if (!s && rank)
      s = ort->GetDimensions(info, in.dims.data(), rank);
    ort->ReleaseTensorTypeAndShapeInfo(info);
    check(s, "input shape");
    check(ort->GetTensorData(values[i], &in.data), "GetTensorData");
    check(ort->GetTensorSizeInBytes(values[i], &in.bytes), "GetTensorSizeInBytes");
    inputs[inputNames[i]] = std::move(in);
  }

  std::lock_guard<std::mutex> lock(runMutex);
  for (int attempt = 0;; ++attempt) {
    // The key: every input's shape, and the frozen inputs' bytes.
    std::string key;
    for (const ExportedValue &v : exported.inputs) {
      auto it = inputs.find(v.name);
      if (it == inputs.end())
        fail(ORT_INVALID_ARGUMENT, name + ": input '" + v.name + "' is missing");
      key += v.name + ":" + shapeText(it->second.dims) + ";";
      if (freeze.count(v.name))
        key.append(static_cast<const char *>(it->second.data), it->second.bytes).append(";");
    }
    for (auto it = compiled.begin(); it != compiled.end(); ++it)
      if (it->first == key) {
        compiled.splice(compiled.begin(), compiled, it);
        return compiled.front().second;
      }
    auto remember = [&](cgc_model_t *model) {
      auto loaded =
          std::make_shared<Loaded>(device, ModelPtr(model), inputNames, outputNames, name);
      compiled.emplace_front(key, loaded);
      if (compiled.size() > kCacheSize)
        compiled.pop_back();
      return loaded;
    };

    std::vector<std::string> texts;
    for (const ExportedValue &v : exported.inputs)
      if (!v.isStatic() && !freeze.count(v.name))
        texts.push_back(v.name + "=" + shapeText(inputs[v.name].dims));
    if (auto seed = seeded.find(joined(texts)); seed != seeded.end() && freeze.empty()) {
      std::vector<uint8_t> bytes = std::move(seed->second);
      seeded.erase(seed);
      return remember(loadCompiled(device, bytes.data(), bytes.size(), name));
    }
    std::map<std::string, std::string> frozen;
    for (const std::string &n : freeze) {
      const Input &in = inputs[n];
      frozen[n] = tensorProto(n, in.type, in.dims, in.data, in.bytes);
    }
    ShapeOptions options(std::move(texts), maxLoopIterations);
    std::string onnx = exported.assemble(frozen);
    cgc_blob_t *blob = nullptr;
    cgc_status_t status = cgc_model_compile_onnx(device.get(), onnx.data(), onnx.size(),
                                                 name.c_str(), &options.options, &blob);
    counters().compiles++;
    if (status) {
      std::string error = cgc_status_message(status);
      cgc_status_free(status);
      bool more = false;
      for (const std::string &n : freezeRequests(error))
        more |= inputs.count(n) && freeze.insert(n).second;
      if (more && attempt <= int(exported.inputs.size()))
        continue; // compile again with that input's value
      fail(ORT_FAIL, "compiling " + name + " for its inputs: " + error);
    }
    BlobPtr owned(blob);
    return remember(loadCompiled(device, cgc_blob_data(blob), cgc_blob_size(blob), name));
  }
}

void Partition::compute(OrtKernelContext *kernel) {
  counters().runs++;
  size_t ins = 0, outs = 0;
  check(ort->KernelContext_GetInputCount(kernel, &ins), "KernelContext_GetInputCount");
  check(ort->KernelContext_GetOutputCount(kernel, &outs), "KernelContext_GetOutputCount");
  if (ins != inputNames.size() || outs != outputNames.size())
    fail(ORT_INVALID_ARGUMENT, name + ": " + std::to_string(ins) + " inputs and " +
                                   std::to_string(outs) + " outputs given, " +
                                   std::to_string(inputNames.size()) + " and " +
                                   std::to_string(outputNames.size()) + " compiled");
  std::vector<const OrtValue *> values(ins, nullptr);
  for (size_t i = 0; i < ins; ++i)
    check(ort->KernelContext_GetInput(kernel, i, &values[i]), "KernelContext_GetInput");

  std::shared_ptr<Loaded> loaded = fixed ? fixed : forInputs(values);
  Loaded &m = *loaded;

  OrtSyncStream *ortStream = nullptr;
  check(ort->KernelContext_GetSyncStream(kernel, &ortStream), "KernelContext_GetSyncStream");
  Stream *stream = ownStream(ortStream);
  cgc_stream_t *onStream = nullptr;
  if (stream && stream->device == device)
    onStream = stream->stream;
  else if (stream) // a stream of another cgc device: what it queued comes first
    check(cgc_stream_synchronize(stream->stream, UINT32_MAX), "synchronizing the stream");

  std::unique_lock<std::mutex> lock;
  Context &c = m.acquire(onStream, lock);
  for (size_t i = 0; i < ins; ++i) {
    int slot = m.inputSlot[i];
    if (slot < 0)
      continue;
    if (!values[i])
      fail(ORT_INVALID_ARGUMENT, name + ": input '" + inputNames[i] + "' is missing");
    size_t bytes = 0;
    const void *data = nullptr;
    check(ort->GetTensorSizeInBytes(values[i], &bytes), "GetTensorSizeInBytes");
    check(ort->GetTensorData(values[i], &data), "GetTensorData");
    // Inputs are read-only for the run: the compiled model writes outputs
    // and its own scratch memory only.
    bind(c, m, true, size_t(slot), const_cast<void *>(data), bytes);
  }
  for (size_t j = 0; j < outs; ++j) {
    const cgc_tensor_info_t &info = m.outputInfo[size_t(m.outputSlot[j])];
    if (m.rowsFrom[size_t(m.outputSlot[j])] >= 0)
      continue; // its shape is known after the run (below)
    OrtValue *value = nullptr;
    check(ort->KernelContext_GetOutput(kernel, j, info.shape, info.rank, &value),
          "KernelContext_GetOutput");
    void *data = nullptr;
    size_t bytes = 0;
    check(ort->GetTensorMutableData(value, &data), "GetTensorMutableData");
    check(ort->GetTensorSizeInBytes(value, &bytes), "GetTensorSizeInBytes");
    bind(c, m, false, size_t(m.outputSlot[j]), data, bytes);
  }
  // Submitted on the ORT stream (after the semaphore waits queued there),
  // and waited for: ORT reads outputs on the host after Compute.
  auto start = std::chrono::steady_clock::now();
  check(cgc_context_run(c.context), name.c_str());
  counters().runNs += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now() - start)
                                   .count());
  // Outputs with data-dependent rows stay in the context's own memory (at
  // their bound of rows); ONNX Runtime's output is allocated at the run's
  // rows and receives them (a copy: their size is known only now).
  for (size_t j = 0; j < outs; ++j) {
    size_t slot = size_t(m.outputSlot[j]);
    if (m.rowsFrom[slot] < 0)
      continue;
    const cgc_tensor_info_t &info = m.outputInfo[slot];
    int64_t rows = 0;
    check(cgc_context_output_rows(c.context, slot, &rows), name.c_str());
    std::vector<int64_t> shape(info.shape, info.shape + info.rank);
    size_t rowBytes = shape[0] ? info.bytes / size_t(shape[0]) : 0;
    shape[0] = rows;
    OrtValue *value = nullptr;
    check(ort->KernelContext_GetOutput(kernel, j, shape.data(), shape.size(), &value),
          "KernelContext_GetOutput");
    void *data = nullptr;
    check(ort->GetTensorMutableData(value, &data), "GetTensorMutableData");
    c.rowsBuffer.resize(info.bytes);
    check(cgc_context_get_output_data(c.context, slot, c.rowsBuffer.data(), info.bytes),
          name.c_str());
    if (rows)
      std::memcpy(data, c.rowsBuffer.data(), size_t(rows) * rowBytes);
  }
}

//===----------------------------------------------------------------------===//
// The EP
//===----------------------------------------------------------------------===//

struct ComputeInfo : OrtNodeComputeInfo {
  explicit ComputeInfo(std::shared_ptr<Partition> partition) : partition(std::move(partition)) {
    ort_version_supported = ORT_API_VERSION;
    CreateState = [](OrtNodeComputeInfo *self, OrtNodeComputeContext *,
                     void **state) noexcept -> OrtStatus * {
      *state = static_cast<ComputeInfo *>(self)->partition.get();
      return nullptr;
    };
    Compute = [](OrtNodeComputeInfo *, void *state, OrtKernelContext *kernel) noexcept -> OrtStatus * {
      return guard([&] { static_cast<Partition *>(state)->compute(kernel); });
    };
    ReleaseState = [](OrtNodeComputeInfo *, void *) noexcept {};
  }
  std::shared_ptr<Partition> partition;
};

struct Ep : OrtEp {
  Ep(Factory &factory, DriverDevice &driver, const OrtSessionOptions *options,
     const OrtLogger *logger);

  void getCapability(const OrtGraph *graph, OrtEpGraphSupportInfo *info);
  void compile(const OrtGraph **graphs, const OrtNode **fused, size_t count,
               OrtNodeComputeInfo **infos, OrtNode **contextNodes);
  std::shared_ptr<Partition> fromContextNode(const OrtGraph *graph, const OrtNode *node,
                                             const OrtNode *fused);
  /// The EPContext node holding `blob`, the compiled model of `p`.
  OrtNode *makeContextNode(const Partition &p, const std::vector<uint8_t> &blob,
                           const OrtNode *fused);
  /// Compiles `model` (static shapes; 1 for the others when `trial`).
  BlobPtr compileModel(const ExportedModel &model, const std::string &label, bool trial,
                       std::vector<std::string> *errorNodes, std::string &error);

  std::string config(const OrtSessionOptions *options, const char *key,
                     const std::string &fallback);

  Factory &factory;
  DriverDevice &driver;
  const OrtLogger *logger;
  DevicePtr device;
  bool requireAll = false;
  bool contextEnabled = false;
  bool contextEmbed = false;
  std::string contextPath;
  std::mutex cacheMutex;
  std::map<std::string, std::vector<uint8_t>> compiledByKey; // from GetCapability
  std::map<std::string, std::set<std::string>> specializedByKey; // inputs to freeze
  bool valueSpecialization = true;
  int64_t maxLoopIterations = 0; // EP option max_loop_iterations; 0: the default
  std::string requireAllError; // set by GetCapability, reported by Compile
};

Ep *self(OrtEp *ep) { return static_cast<Ep *>(ep); }

std::string Ep::config(const OrtSessionOptions *options, const char *key,
                       const std::string &fallback) {
  int has = 0;
  check(ort->HasSessionConfigEntry(options, key, &has), "HasSessionConfigEntry");
  if (!has)
    return fallback;
  size_t size = 0;
  if (OrtStatus *s = ort->GetSessionConfigEntry(options, key, nullptr, &size))
    ort->ReleaseStatus(s);
  std::string value(size, '\0');
  check(ort->GetSessionConfigEntry(options, key, value.data(), &size), "GetSessionConfigEntry");
  value.resize(std::strlen(value.c_str()));
  return value;
}

Ep::Ep(Factory &factory, DriverDevice &driver, const OrtSessionOptions *options,
       const OrtLogger *logger)
    : factory(factory), driver(driver), logger(logger) {
  std::string prefix = std::string("ep.") + CGC_ORT_EP_NAME + ".";
  std::string threadsText = config(options, (prefix + CGC_ORT_EP_OPTION_THREADS).c_str(), "0");
  char *end = nullptr;
  unsigned long threads = std::strtoul(threadsText.c_str(), &end, 10);
  if (threadsText.empty() || *end || threads > 1024)
    fail(ORT_INVALID_ARGUMENT, "EP option threads='" + threadsText +
                                   "': expected a number of threads from 0 to 1024");
  std::string driverOptions =
      config(options, (prefix + CGC_ORT_EP_OPTION_DRIVER_OPTIONS).c_str(), "");
  std::string all = config(options, (prefix + CGC_ORT_EP_OPTION_REQUIRE_ALL).c_str(), "0");
  if (all != "0" && all != "1")
    fail(ORT_INVALID_ARGUMENT, "EP option require_all='" + all + "': expected 0 or 1");
  requireAll = all == "1";
  std::string values =
      config(options, (prefix + CGC_ORT_EP_OPTION_VALUE_SPECIALIZATION).c_str(), "1");
  if (values != "0" && values != "1")
    fail(ORT_INVALID_ARGUMENT, "EP option value_specialization='" + values +
                                   "': expected 0 or 1");
  valueSpecialization = values == "1";
  std::string loops = config(options, (prefix + CGC_ORT_EP_OPTION_MAX_LOOP_ITERATIONS).c_str(), "0");
  unsigned long bound = std::strtoul(loops.c_str(), &end, 10);
  if (loops.empty() || *end || bound > 4096)
    fail(ORT_INVALID_ARGUMENT, "EP option max_loop_iterations='" + loops +
                                   "': expected a number of iterations from 1 to 4096 (0: "
                                   "the default, 64)");
  maxLoopIterations = int64_t(bound);
  device = driver.withOptions(uint32_t(threads), driverOptions);
  contextEnabled = config(options, "ep.context_enable", "0") == "1";
  contextEmbed = config(options, "ep.context_embed_mode", "0") == "1";
  contextPath = config(options, "ep.context_file_path", "");

  ort_version_supported = ORT_API_VERSION;
  GetName = [](const OrtEp *) noexcept { return CGC_ORT_EP_NAME; };
  GetCapability = [](OrtEp *ep, const OrtGraph *graph,
                     OrtEpGraphSupportInfo *info) noexcept -> OrtStatus * {
    return guard([&] { self(ep)->getCapability(graph, info); });
  };
  Compile = [](OrtEp *ep, const OrtGraph **graphs, const OrtNode **fused, size_t count,
               OrtNodeComputeInfo **infos, OrtNode **contextNodes) noexcept -> OrtStatus * {
    return guard([&] { self(ep)->compile(graphs, fused, count, infos, contextNodes); });
  };
  ReleaseNodeComputeInfos = [](OrtEp *, OrtNodeComputeInfo **infos, size_t count) noexcept {
    for (size_t i = 0; i < count; ++i)
      delete static_cast<ComputeInfo *>(infos[i]);
  };
  GetPreferredDataLayout = [](OrtEp *, OrtEpDataLayout *layout) noexcept -> OrtStatus * {
    *layout = OrtEpDataLayout_NCHW; // ONNX's own: cgc's importer takes models as they are
    return nullptr;
  };
  ShouldConvertDataLayoutForOp = [](OrtEp *, const char *, const char *, OrtEpDataLayout,
                                    int *convert) noexcept -> OrtStatus * {
    *convert = 0;
    return nullptr;
  };
  SetDynamicOptions = [](OrtEp *, const char *const *keys, const char *const *,
                         size_t count) noexcept -> OrtStatus * {
    if (!count)
      return nullptr;
    return ort->CreateStatus(ORT_INVALID_ARGUMENT,
                             (std::string("cgc: no dynamic option is supported (got '") +
                              keys[0] + "'); set EP options when creating the session")
                                 .c_str());
  };
  OnRunStart = [](OrtEp *, const OrtRunOptions *) noexcept -> OrtStatus * { return nullptr; };
  OnRunEnd = [](OrtEp *, const OrtRunOptions *, bool) noexcept -> OrtStatus * {
    return nullptr; // Compute waits for its run
  };
  // Documented optional: ORT then uses the factory's allocators (an EP-level
  // allocator returned as null crashes ONNX Runtime 1.30).
  CreateAllocator = nullptr;
  CreateSyncStreamForDevice = [](OrtEp *ep, const OrtMemoryDevice *memoryDevice,
                                 OrtSyncStreamImpl **out) noexcept -> OrtStatus * {
    return guard([&] {
      *out = nullptr;
      DriverDevice *d = self(ep)->factory.driverFor(memoryDevice);
      if (!d)
        fail(ORT_INVALID_ARGUMENT, "CreateSyncStreamForDevice: not a cgc device's memory");
      *out = new Stream(d == &self(ep)->driver ? self(ep)->device : d->shared());
    });
  };
  GetCompiledModelCompatibilityInfo = [](OrtEp *, const OrtGraph *) noexcept -> const char * {
    static const std::string info = std::string("cgc/") + cgc_runtime_version();
    return info.c_str();
  };
  GetKernelRegistry = [](OrtEp *, const OrtKernelRegistry **out) noexcept -> OrtStatus * {
    *out = nullptr; // a compiling EP: no per-op kernels
    return nullptr;
  };
  IsConcurrentRunSupported = [](OrtEp *, bool *supported) noexcept -> OrtStatus * {
    *supported = true; // a context per stream, created on demand
    return nullptr;
  };
  Sync = [](OrtEp *) noexcept -> OrtStatus * { return nullptr; }; // runs are waited for in Compute
  CreateProfiler = [](OrtEp *, OrtEpProfilerImpl **out) noexcept -> OrtStatus * {
    *out = nullptr;
    return nullptr;
  };
  IsGraphCaptureEnabled = [](const OrtEp *) noexcept { return false; };
  IsGraphCaptured = [](const OrtEp *, int) noexcept { return false; };
  ReplayGraph = [](OrtEp *, int) noexcept -> OrtStatus * {
    return ort->CreateStatus(ORT_NOT_IMPLEMENTED,
                             "cgc: graph capture is not needed: the command list is recorded "
                             "once and replayed by every run");
  };
  GetGraphCaptureNodeAssignmentPolicy = [](const OrtEp *) noexcept {
    return OrtGraphCaptureNodeAssignmentPolicy_ALL_NODES_ON_EP;
  };
  GetAvailableResource = nullptr; // documented: NULL when the EP does not report it
  OnSessionInitializationEnd = [](OrtEp *) noexcept -> OrtStatus * { return nullptr; };
  GetDefaultMemoryDevice = [](const OrtEp *ep, const OrtMemoryDevice **out) noexcept -> OrtStatus * {
    *out = epApi->MemoryInfo_GetMemoryDevice(static_cast<const Ep *>(ep)->driver.memoryInfo);
    return nullptr;
  };
  ReleaseCapturedGraph = [](OrtEp *, int) noexcept -> OrtStatus * { return nullptr; };
  GetWeightlessSupport = [](const OrtEp *, OrtWeightlessSupport *support) noexcept -> OrtStatus * {
    *support = OrtWeightlessSupport_NONE; // constants are compiled into the model
    return nullptr;
  };
}

/// The input shapes a trial compilation binds symbolic dimensions to (1).
std::vector<std::string> trialShapes(const ExportedModel &model) {
  std::vector<std::string> texts;
  for (const ExportedValue &v : model.inputs)
    if (!v.isStatic()) {
      std::vector<int64_t> dims = v.dims;
      for (int64_t &d : dims)
        if (d < 0)
          d = 1;
      texts.push_back(v.name + "=" + shapeText(dims));
    }
  return texts;
}

BlobPtr Ep::compileModel(const ExportedModel &model, const std::string &label, bool trial,
                         std::vector<std::string> *errorNodes, std::string &error) {
  ShapeOptions shapes(trialShapes(model), maxLoopIterations);
  if (!shapes.shapes.empty() && !trial)
    fail(ORT_FAIL, "internal error: compiling " + label + " with symbolic dimensions");
  cgc_compile_options_t &options = shapes.options;
  options.message_user_data = errorNodes;
  if (errorNodes)
    options.error_node = [](void *user, const char *node) noexcept {
      static_cast<std::vector<std::string> *>(user)->push_back(node);
    };
  // CGC_ORT_EP_DUMP_DIR: write every ONNX model the EP compiles there (to
  // reproduce a compilation with cgc-compile).
  if (const char *dir = std::getenv("CGC_ORT_EP_DUMP_DIR"); dir && *dir) {
    std::string file = std::string(dir) + "/" + bytesKey(model.bytes).substr(0, 12) + ".onnx";
    std::ofstream(file, std::ios::binary).write(model.bytes.data(),
                                                std::streamsize(model.bytes.size()));
    log(logger, ORT_LOGGING_LEVEL_WARNING, "cgc: " + label + " written to " + file);
  }
  cgc_blob_t *blob = nullptr;
  cgc_status_t status = cgc_model_compile_onnx(device.get(), model.bytes.data(),
                                               model.bytes.size(), label.c_str(), &options, &blob);
  (trial ? counters().capabilityCompiles : counters().compiles)++;
  if (status) {
    error = cgc_status_message(status);
    cgc_status_free(status);
    return nullptr;
  }
  return BlobPtr(blob);
}

bool isContextNode(const OrtNode *node, std::string *source = nullptr) {
  if (nodeOpType(node) != "EPContext" || nodeDomain(node) != "com.microsoft")
    return false;
  std::string s;
  stringAttribute(node, "source", s);
  if (source)
    *source = s;
  return true;
}

void Ep::getCapability(const OrtGraph *graph, OrtEpGraphSupportInfo *info) {
  // cgc compiles control flow whole, bodies included: nodes inside the body
  // of an If, Loop or Scan stay with it (claiming them first would leave the
  // parent node a body of fused nodes no compiler can read).
  const OrtNode *parent = nullptr;
  check(ort->Graph_GetParentNode(graph, &parent), "Graph_GetParentNode");
  if (parent)
    return;
  std::vector<const OrtNode *> nodes = graphNodes(graph); // topological order
  size_t n = nodes.size();
  std::vector<bool> supported(n, true);
  std::map<const OrtNode *, std::string> why;

  // EPContext nodes this EP made are claimed as they are; others' are not
  // ours to run.
  std::vector<const OrtNode *> contextNodes;
  for (size_t i = 0; i < n; ++i) {
    std::string source;
    if (isContextNode(nodes[i], &source)) {
      supported[i] = false;
      if (source == CGC_ORT_EP_NAME)
        contextNodes.push_back(nodes[i]);
      else
        why[nodes[i]] = "an EPContext node of EP '" + source + "'";
      continue;
    }
    const char *ep = nullptr;
    check(ort->Node_GetEpName(nodes[i], &ep), "Node_GetEpName");
    if (ep && *ep) { // assigned already (this EP's own fused nodes too)
      supported[i] = false;
      if (std::strcmp(ep, CGC_ORT_EP_NAME) != 0)
        why[nodes[i]] = std::string("assigned to EP ") + ep;
    }
  }
  for (const OrtNode *node : contextNodes)
    check(epApi->EpGraphSupportInfo_AddNodesToFuse(info, &node, 1, nullptr),
          "EpGraphSupportInfo_AddNodesToFuse");

  // Edges and consumers.
  std::map<std::string, size_t> producer;
  std::map<std::string, std::vector<size_t>> consumers;
  std::vector<std::vector<size_t>> preds(n);
  for (size_t i = 0; i < n; ++i)
    for (const OrtValueInfo *v : nodeOutputs(nodes[i]))
      if (v)
        producer[valueName(v)] = i;
  for (size_t i = 0; i < n; ++i) {
    std::vector<const OrtValueInfo *> reads = nodeInputs(nodes[i]);
    for (const OrtValueInfo *v : nodeImplicitInputs(nodes[i]))
      reads.push_back(v);
    for (const OrtValueInfo *v : reads) {
      std::string name = valueName(v);
      if (name.empty())
        continue;
      consumers[name].push_back(i);
      auto it = producer.find(name);
      if (it != producer.end())
        preds[i].push_back(it->second);
    }
  }
  std::set<std::string> outputsOfGraph;
  for (const OrtValueInfo *v : graphOutputs(graph))
    outputsOfGraph.insert(valueName(v));

  // Groups: a node's stage counts the unsupported nodes on paths into it;
  // supported nodes of one stage connected by edges form a group. No path
  // between two nodes of a group leaves it (stages never decrease along an
  // edge and grow past an unsupported node), so each group fuses into one
  // node without a cycle.
  auto groupsOf = [&]() noexcept {
    std::vector<size_t> stage(n, 0), parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    std::function<size_t(size_t)> find = [&](size_t x) {
      return parent[x] == x ? x : parent[x] = find(parent[x]);
    };
    for (size_t i = 0; i < n; ++i)
      for (size_t p : preds[i])
        stage[i] = std::max(stage[i], stage[p] + (supported[p] ? 0 : 1));
    for (size_t i = 0; i < n; ++i)
      if (supported[i])
        for (size_t p : preds[i])
          if (supported[p] && stage[p] == stage[i])
            parent[find(i)] = find(p);
    std::map<size_t, std::vector<size_t>> groups;
    for (size_t i = 0; i < n; ++i)
      if (supported[i])
        groups[find(i)].push_back(i);
    std::vector<std::vector<size_t>> out;
    for (auto &[root, members] : groups)
      out.push_back(std::move(members));
    return out;
  };

  std::set<std::string> compiled; // group keys known to compile
  std::vector<std::vector<size_t>> groups;
  for (int round = 0;; ++round) {
    groups = groupsOf();
    bool changed = false;
    for (const std::vector<size_t> &group : groups) {
      std::vector<const OrtNode *> members;
      std::set<size_t> inGroup(group.begin(), group.end());
      std::vector<std::string> outputs;
      for (size_t i : group) {
        members.push_back(nodes[i]);
        for (const OrtValueInfo *v : nodeOutputs(nodes[i])) {
          std::string name = valueName(v);
          if (name.empty())
            continue;
          bool outside = outputsOfGraph.count(name) > 0;
          for (size_t c : consumers[name])
            outside |= !inGroup.count(c);
          if (outside)
            outputs.push_back(name);
        }
      }
      ExportedModel model;
      try {
        model = exportNodes(graph, members, outputs);
      } catch (const Unexportable &u) {
        const OrtNode *bad = u.node ? u.node : members.front();
        for (size_t i : group)
          if (nodes[i] == bad)
            supported[i] = false;
        why[bad] = u.reason;
        changed = true;
        continue;
      }
      std::string key = bytesKey(model.bytes);
      if (compiled.count(key))
        continue;
      std::vector<std::string> errorNodes;
      std::string error;
      std::string label = "onnxruntime subgraph of " + std::to_string(group.size()) +
                          " node" + (group.size() == 1 ? "" : "s");
      BlobPtr blob = compileModel(model, label, true, &errorNodes, error);
      if (blob) {
        compiled.insert(key);
        // Kept for Compile; with symbolic dimensions, for the first run
        // whose shapes are the trial's.
        const auto *data = static_cast<const uint8_t *>(cgc_blob_data(blob.get()));
        std::lock_guard<std::mutex> lock(cacheMutex);
        compiledByKey[model.isStatic() ? key : key + "|" + joined(trialShapes(model))].assign(
            data, data + cgc_blob_size(blob.get()));
        continue;
      }
      // The compiler needs the values of some of the group's inputs (a
      // Reshape's shape given at run time): the group compiles per value
      // when it runs, and is claimed.
      if (valueSpecialization) {
        std::set<std::string> requests = freezeRequests(error);
        bool allInputs = !requests.empty();
        for (const std::string &r : requests)
          allInputs &= std::any_of(model.inputs.begin(), model.inputs.end(),
                                   [&](const ExportedValue &v) { return v.name == r; });
        if (allInputs) {
          compiled.insert(key);
          std::lock_guard<std::mutex> lock(cacheMutex);
          specializedByKey[key] = requests;
          continue;
        }
      }
      changed = true;
      bool named = false;
      for (const std::string &name : errorNodes) {
        auto it = model.nodeNames.find(name);
        if (it == model.nodeNames.end())
          continue;
        for (size_t i : group)
          if (nodes[i] == it->second && supported[i]) {
            supported[i] = false;
            why[nodes[i]] = error;
            named = true;
          }
      }
      if (!named) // the compiler named no node of the group: leave all of it
        for (size_t i : group) {
          supported[i] = false;
          why[nodes[i]] = error;
        }
    }
    if (!changed)
      break;
    if (round > int(n) + 1)
      fail(ORT_FAIL, "internal error: GetCapability did not settle");
  }

  for (const auto &[node, reason] : why)
    log(logger, ORT_LOGGING_LEVEL_WARNING,
        "cgc leaves " + describeNode(node) + " to other execution providers: " + reason);
  if (requireAll && !why.empty()) {
    // ONNX Runtime reads a GetCapability error as "nothing claimed" and goes
    // on without this EP; an error of Compile fails the session. So the
    // whole graph is claimed, and Compile reports why it cannot be.
    const auto &[node, reason] = *why.begin();
    requireAllError = "require_all=1 and cgc cannot compile " + describeNode(node) + " (" +
                      std::to_string(why.size()) + " node" + (why.size() == 1 ? "" : "s") +
                      " in all): " + reason;
    std::vector<const OrtNode *> all;
    for (size_t i = 0; i < n; ++i)
      if (!isContextNode(nodes[i]))
        all.push_back(nodes[i]);
    check(epApi->EpGraphSupportInfo_AddNodesToFuse(info, all.data(), all.size(), nullptr),
          "EpGraphSupportInfo_AddNodesToFuse");
    return;
  }
  OrtNodeFusionOptions fusion = {};
  fusion.ort_version_supported = ORT_API_VERSION;
  fusion.drop_constant_initializers = true; // compiled into the model
  for (const std::vector<size_t> &group : groups) {
    std::vector<const OrtNode *> members;
    for (size_t i : group)
      members.push_back(nodes[i]);
    check(epApi->EpGraphSupportInfo_AddNodesToFuse(info, members.data(), members.size(),
                                                   &fusion),
          "EpGraphSupportInfo_AddNodesToFuse");
  }
}

std::shared_ptr<Partition> Ep::fromContextNode(const OrtGraph *graph, const OrtNode *node,
                                               const OrtNode *fused) {
  auto p = std::make_shared<Partition>();
  p->maxLoopIterations = maxLoopIterations;
  p->name = describeNode(node);
  p->device = device;
  for (const OrtValueInfo *v : nodeInputs(fused))
    p->inputNames.push_back(valueName(v));
  for (const OrtValueInfo *v : nodeOutputs(fused))
    p->outputNames.push_back(valueName(v));
  int64_t embed = 1;
  intAttribute(node, "embed_mode", embed);
  std::string context;
  if (!stringAttribute(node, "ep_cache_context", context) || context.empty())
    fail(ORT_INVALID_GRAPH, p->name + " has no ep_cache_context");
  cgc_model_t *model = nullptr;
  if (embed == 1) {
    check(cgc_model_load_memory(device.get(), context.data(), context.size(), nullptr, &model),
          ("loading the compiled model of " + p->name).c_str());
  } else if (embed == 0) {
    if (context.find("..") != std::string::npos || context.front() == '/')
      fail(ORT_INVALID_GRAPH, p->name + ": ep_cache_context '" + context +
                                  "' must be a file name beside the model");
    const ORTCHAR_T *modelPath = nullptr;
    check(ort->Graph_GetModelPath(graph, &modelPath), "Graph_GetModelPath");
    std::string dir = modelPath ? modelPath : "";
    size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? "." : dir.substr(0, slash);
    std::string path = dir + "/" + context;
    check(cgc_model_load_file(device.get(), path.c_str(), nullptr, &model),
          ("loading the compiled model of " + p->name).c_str());
  } else {
    fail(ORT_INVALID_GRAPH, p->name + ": embed_mode " + std::to_string(embed) +
                                " (expected 0 or 1)");
  }
  counters().contextLoads++;
  p->fixed = std::make_shared<Loaded>(device, ModelPtr(model), p->inputNames, p->outputNames,
                                      p->name);
  return p;
}

OrtNode *Ep::makeContextNode(const Partition &p, const std::vector<uint8_t> &blob,
                             const OrtNode *fused) {
  if (!editorApi)
    fail(ORT_NOT_IMPLEMENTED, "EPContext: this ONNX Runtime has no model editor API");
  if (p.perRun)
    fail(ORT_NOT_IMPLEMENTED,
         p.name + ": cannot store an EPContext node for a partition compiled when it runs "
                  "(symbolic input dimensions, or inputs whose values the compiler needs); "
                  "give the inputs static shapes and constant values");
  std::string fusedName = nodeName(fused);
  std::string payload;
  int64_t embed = contextEmbed ? 1 : 0;
  if (contextEmbed) {
    if (blob.size() > size_t(INT_MAX))
      fail(ORT_INVALID_ARGUMENT, p.name + ": the compiled model (" +
                                     std::to_string(blob.size()) +
                                     " bytes) is too large to embed; use ep.context_embed_mode=0");
    payload.assign(blob.begin(), blob.end());
  } else {
    if (contextPath.empty())
      fail(ORT_INVALID_ARGUMENT,
           "EPContext with ep.context_embed_mode=0 needs ep.context_file_path (the compiled "
           "models are written beside it)");
    std::string dir = contextPath, stem = contextPath;
    size_t slash = contextPath.rfind('/');
    dir = slash == std::string::npos ? "." : contextPath.substr(0, slash);
    stem = slash == std::string::npos ? contextPath : contextPath.substr(slash + 1);
    if (size_t dot = stem.rfind('.'); dot != std::string::npos)
      stem.resize(dot);
    std::string file = stem + "_" + fusedName + ".cgc";
    for (char &c : file)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
        c = '_';
    std::ofstream out(dir + "/" + file, std::ios::binary);
    out.write(reinterpret_cast<const char *>(blob.data()), std::streamsize(blob.size()));
    if (!out)
      fail(ORT_FAIL, "EPContext: cannot write " + dir + "/" + file);
    payload = file;
  }
  std::vector<const char *> inputs, outputs;
  for (const std::string &s : p.inputNames)
    inputs.push_back(s.c_str());
  for (const std::string &s : p.outputNames)
    outputs.push_back(s.c_str());
  std::vector<OrtOpAttr *> attrs;
  auto addString = [&](const char *name, const std::string &value) noexcept {
    OrtOpAttr *a = nullptr;
    check(ort->CreateOpAttr(name, value.data(), int(value.size()), ORT_OP_ATTR_STRING, &a),
          "CreateOpAttr");
    attrs.push_back(a);
  };
  auto addInt = [&](const char *name, int64_t value) noexcept {
    OrtOpAttr *a = nullptr;
    check(ort->CreateOpAttr(name, &value, 1, ORT_OP_ATTR_INT, &a), "CreateOpAttr");
    attrs.push_back(a);
  };
  OrtNode *node = nullptr;
  OrtStatus *status = nullptr;
  try {
    addString("ep_cache_context", payload);
    addInt("embed_mode", embed);
    addInt("main_context", 1);
    addString("source", CGC_ORT_EP_NAME);
    addString("partition_name", fusedName);
    addString("ep_sdk_version", cgc_runtime_version());
    status = editorApi->CreateNode("EPContext", "com.microsoft", fusedName.c_str(),
                                   inputs.data(), inputs.size(), outputs.data(), outputs.size(),
                                   attrs.data(), attrs.size(), &node);
  } catch (...) {
    for (OrtOpAttr *a : attrs)
      ort->ReleaseOpAttr(a);
    throw;
  }
  for (OrtOpAttr *a : attrs)
    ort->ReleaseOpAttr(a);
  check(status, "CreateNode(EPContext)");
  return node;
}

void Ep::compile(const OrtGraph **graphs, const OrtNode **fused, size_t count,
                 OrtNodeComputeInfo **infos, OrtNode **contextNodes) {
  if (!requireAllError.empty())
    fail(ORT_NOT_IMPLEMENTED, requireAllError);
  std::vector<std::unique_ptr<ComputeInfo>> made;
  for (size_t i = 0; i < count; ++i) {
    std::vector<const OrtNode *> nodes = graphNodes(graphs[i]);
    std::shared_ptr<Partition> p;
    if (nodes.size() == 1 && isContextNode(nodes[0])) {
      p = fromContextNode(graphs[i], nodes[0], fused[i]);
    } else {
      p = std::make_shared<Partition>();
      p->maxLoopIterations = maxLoopIterations;
      p->name = describeNode(fused[i]);
      p->device = device;
      for (const OrtValueInfo *v : nodeInputs(fused[i]))
        p->inputNames.push_back(valueName(v));
      for (const OrtValueInfo *v : nodeOutputs(fused[i]))
        p->outputNames.push_back(valueName(v));
      ExportedModel model;
      try {
        model = exportNodes(graphs[i], nodes, p->outputNames);
      } catch (const Unexportable &u) {
        fail(ORT_FAIL, p->name + ": " + (u.node ? describeNode(u.node) + ": " : "") + u.reason);
      }
      std::string key = bytesKey(model.bytes);
      std::set<std::string> freeze;
      bool specialized = false;
      {
        std::lock_guard<std::mutex> lock(cacheMutex);
        auto it = specializedByKey.find(key);
        if (it != specializedByKey.end()) {
          freeze = it->second;
          specialized = true;
        }
      }
      std::vector<uint8_t> blob; // the compiled model, for an EPContext node
      if (model.isStatic() && !specialized) {
        {
          std::lock_guard<std::mutex> lock(cacheMutex);
          auto it = compiledByKey.find(key);
          if (it != compiledByKey.end()) {
            blob = std::move(it->second);
            compiledByKey.erase(it);
          }
        }
        if (blob.empty()) {
          std::string error;
          BlobPtr compiled = compileModel(model, p->name, false, nullptr, error);
          if (!compiled)
            fail(ORT_FAIL, error);
          const auto *data = static_cast<const uint8_t *>(cgc_blob_data(compiled.get()));
          blob.assign(data, data + cgc_blob_size(compiled.get()));
        }
        p->fixed = std::make_shared<Loaded>(
            device, ModelPtr(loadCompiled(device, blob.data(), blob.size(), p->name)),
            p->inputNames, p->outputNames, p->name);
      } else {
        // Compiled when it runs, per input shapes and frozen values.
        if (!specialized) {
          std::lock_guard<std::mutex> lock(cacheMutex);
          auto it = compiledByKey.find(key + "|" + joined(trialShapes(model)));
          if (it != compiledByKey.end()) {
            p->seeded[joined(trialShapes(model))] = std::move(it->second);
            compiledByKey.erase(it);
          }
        }
        p->perRun = true;
        p->freeze = std::move(freeze);
        p->exported = std::move(model);
      }
      // ORT passes the array in every session; it wants nodes when
      // ep.context_enable=1.
      if (contextNodes && contextEnabled)
        contextNodes[i] = makeContextNode(*p, blob, fused[i]);
    }
    made.push_back(std::make_unique<ComputeInfo>(p));
  }
  for (size_t i = 0; i < count; ++i)
    infos[i] = made[i].release();
  // What GetCapability compiled for groups that were regrouped later is not
  // needed any more.
  std::lock_guard<std::mutex> lock(cacheMutex);
  compiledByKey.clear();
  specializedByKey.clear();
}

} // namespace

OrtEp *createEp(Factory &factory, DriverDevice &driver, const OrtSessionOptions *options,
                const OrtLogger *logger) {
  return new Ep(factory, driver, options, logger);
}

void releaseEp(OrtEp *ep) { delete static_cast<Ep *>(ep); }

} // namespace cgc::ort_ep
