//===- cgc/runtime.hpp - The DXCGC runtime: C++ API -------------*- C++ -*-===//
//
// Header-only RAII wrappers over the C API (cgc/runtime.h): each class owns
// one reference to its C object and releases it in its destructor; failures
// throw cgc::Error (with the status code and message). Objects are movable,
// not copyable. Link libcgc_runtime (find_package(cgc): cgc::runtime).
//
//   cgc::Device device;                          // the CPU driver
//   cgc::Model model(device, "model.cgc");
//   cgc::Context context(model);
//   context.setInput(0, input.data(), input.size() * sizeof(float));
//   context.run();
//   context.getOutput(0, output.data(), output.size() * sizeof(float));
//
//===----------------------------------------------------------------------===//

#ifndef CGC_RUNTIME_HPP
#define CGC_RUNTIME_HPP

#include "cgc/runtime.h"

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace cgc {

/// A failed runtime call.
class Error : public std::runtime_error {
public:
  Error(cgc_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  cgc_status_code_t code() const { return code_; }

private:
  cgc_status_code_t code_;
};

/// Throws the status as cgc::Error (and frees it); does nothing for OK.
inline void check(cgc_status_t status) {
  if (!status)
    return;
  cgc_status_code_t code = cgc_status_code(status);
  std::string message = cgc_status_message(status);
  cgc_status_free(status);
  throw Error(code, message);
}

namespace detail {
/// Owns one reference to a C object.
template <class T, void (*Release)(T *)> class Handle {
public:
  Handle() = default;
  explicit Handle(T *p) : p_(p) {}
  Handle(Handle &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Handle &operator=(Handle &&o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Handle(const Handle &) = delete;
  Handle &operator=(const Handle &) = delete;
  ~Handle() { reset(); }
  void reset() {
    if (p_)
      Release(p_);
    p_ = nullptr;
  }
  T *get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

protected:
  T *p_ = nullptr;
};
} // namespace detail

struct TensorInfo {
  std::string name;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  uint64_t bytes = 0;
};

class Device : public detail::Handle<cgc_device_t, cgc_device_release> {
public:
  /// The default driver ($CGC_D3D12_DRIVER, else the CPU driver).
  Device() : Device(defaults()) {}
  explicit Device(const cgc_device_options_t &options) { check(cgc_device_create(&options, &p_)); }
  /// A D3D12 device pointer (ID3D12Device*), borrowed.
  void *d3d12() const { return cgc_device_d3d12(p_); }

private:
  static cgc_device_options_t defaults() {
    cgc_device_options_t o;
    cgc_device_options_init(&o);
    return o;
  }
};

class Stream : public detail::Handle<cgc_stream_t, cgc_stream_release> {
public:
  explicit Stream(Device &device) { check(cgc_stream_create(device.get(), &p_)); }
  void synchronize(uint32_t timeoutMs = UINT32_MAX) {
    check(cgc_stream_synchronize(p_, timeoutMs));
  }
};

class Model : public detail::Handle<cgc_model_t, cgc_model_release> {
public:
  Model(Device &device, const std::string &path, const cgc_model_options_t *options = nullptr) {
    check(cgc_model_load_file(device.get(), path.c_str(), options, &p_));
  }
  Model(Device &device, const void *data, size_t size,
        const cgc_model_options_t *options = nullptr) {
    check(cgc_model_load_memory(device.get(), data, size, options, &p_));
  }
  /// Takes over a reference to `model` (cgc_shape_cache_model's).
  static Model adopt(cgc_model_t *model) {
    Model m;
    m.p_ = model;
    return m;
  }
  size_t inputCount() const { return cgc_model_input_count(p_); }
  size_t outputCount() const { return cgc_model_output_count(p_); }
  TensorInfo input(size_t index) const {
    cgc_tensor_info_t info;
    check(cgc_model_input_info(p_, index, &info));
    return convert(info);
  }
  TensorInfo output(size_t index) const {
    cgc_tensor_info_t info;
    check(cgc_model_output_info(p_, index, &info));
    return convert(info);
  }
  size_t findInput(const std::string &name) const {
    size_t index = 0;
    check(cgc_model_find_input(p_, name.c_str(), &index));
    return index;
  }
  size_t findOutput(const std::string &name) const {
    size_t index = 0;
    check(cgc_model_find_output(p_, name.c_str(), &index));
    return index;
  }
  /// The output holding output `index`'s valid rows (data-dependent rows),
  /// or -1 when all its rows are valid.
  int64_t outputRowsFrom(size_t index) const {
    int64_t from = -1;
    check(cgc_model_output_rows_from(p_, index, &from));
    return from;
  }
  cgc_model_stats_t stats() const {
    cgc_model_stats_t s;
    cgc_model_stats(p_, &s);
    return s;
  }

private:
  static TensorInfo convert(const cgc_tensor_info_t &info) {
    return {info.name, info.dtype, std::vector<int64_t>(info.shape, info.shape + info.rank),
            info.bytes};
  }

private:
  Model() = default;
};

/// Options of compileOnnx (cgc-compile's flags).
struct CompileOptions {
  std::vector<std::string> inputShapes;  ///< NAME=D0xD1...
  std::vector<std::string> freezeInputs; ///< NAME=FILE.pb
  std::vector<std::string> targets;      ///< after the device's own target
  bool noDevicePatterns = false;         ///< `targets` and the fallback only
  /// cgc_compile_options_t::data_dependent_rows.
  bool dataDependentRows = false;
  /// cgc_compile_options_t::max_loop_iterations (0: the default).
  int64_t maxLoopIterations = 0;
  /// Called as the compiler speaks (each message is also in
  /// Compiled::messages) and as each stage starts ("importing", ...).
  std::function<void(const std::string &)> onMessage, onStage;
};

/// The result of compileOnnx: the compiled model's bytes (load them with
/// Model(device, bytes.data(), bytes.size())) and what the compiler said.
struct Compiled {
  std::vector<uint8_t> bytes;
  std::string messages;
};

namespace detail {
/// cgc_model_compile_onnx (`path` null) or cgc_model_compile_onnx_file.
inline Compiled compile(cgc_device_t *device, const void *data, size_t size, const char *name,
                        const char *path, const CompileOptions &options) {
  auto pointers = [](const std::vector<std::string> &v) {
    std::vector<const char *> out;
    for (const std::string &s : v)
      out.push_back(s.c_str());
    return out;
  };
  std::vector<const char *> shapes = pointers(options.inputShapes),
                            frozen = pointers(options.freezeInputs),
                            targets = pointers(options.targets);
  struct State {
    Compiled result;
    const CompileOptions *options;
  } state{{}, &options};
  cgc_compile_options_t o;
  cgc_compile_options_init(&o);
  o.input_shapes = shapes.data();
  o.input_shape_count = shapes.size();
  o.freeze_inputs = frozen.data();
  o.freeze_input_count = frozen.size();
  o.targets = targets.data();
  o.target_count = targets.size();
  o.no_device_patterns = options.noDevicePatterns;
  o.data_dependent_rows = options.dataDependentRows;
  o.max_loop_iterations = options.maxLoopIterations;
  o.message = [](void *user, const char *text) {
    auto *s = static_cast<State *>(user);
    std::string message = text;
    while (!message.empty() && message.back() == '\n')
      message.pop_back();
    s->result.messages.append(message).append("\n");
    if (s->options->onMessage)
      s->options->onMessage(message);
  };
  o.progress = [](void *user, const char *stage) {
    auto *s = static_cast<State *>(user);
    if (s->options->onStage)
      s->options->onStage(stage);
  };
  o.message_user_data = &state;
  cgc_blob_t *blob = nullptr;
  check(path ? cgc_model_compile_onnx_file(device, path, &o, &blob)
             : cgc_model_compile_onnx(device, data, size, name, &o, &blob));
  const auto *bytes = static_cast<const uint8_t *>(cgc_blob_data(blob));
  state.result.bytes.assign(bytes, bytes + cgc_blob_size(blob));
  cgc_blob_release(blob);
  return std::move(state.result);
}
} // namespace detail

/// Compiles an ONNX model held in memory (`name` labels it and gives the
/// directory of its external data) for `device`: its driver's declared
/// patterns first, the rest for the fallback target (cgc_model_compile_onnx).
/// Takes the C handle, so C and C++ callers share it (Device::get()).
inline Compiled compileOnnx(cgc_device_t *device, const void *data, size_t size,
                            const std::string &name = "model.onnx",
                            const CompileOptions &options = {}) {
  return detail::compile(device, data, size, name.c_str(), nullptr, options);
}

/// The same for a file (cgc_model_compile_onnx_file).
inline Compiled compileOnnxFile(cgc_device_t *device, const std::string &path,
                                const CompileOptions &options = {}) {
  return detail::compile(device, nullptr, 0, nullptr, path.c_str(), options);
}

/// An ONNX model compiled per set of input shapes (cgc_shape_cache_*).
class ShapeCache : public detail::Handle<cgc_shape_cache_t, cgc_shape_cache_release> {
public:
  ShapeCache(Device &device, const void *data, size_t size,
             const std::string &name = "model.onnx",
             const cgc_compile_options_t *options = nullptr,
             const cgc_model_options_t *modelOptions = nullptr, size_t capacity = 0) {
    check(cgc_shape_cache_create(device.get(), data, size, name.c_str(), options, modelOptions,
                                 capacity, &p_));
  }
  /// The model for `shapes` ("NAME=D0xD1x..."), compiled on first use.
  Model model(const std::vector<std::string> &shapes) {
    std::vector<const char *> pointers;
    for (const std::string &s : shapes)
      pointers.push_back(s.c_str());
    cgc_model_t *model = nullptr;
    check(cgc_shape_cache_model(p_, pointers.data(), pointers.size(), &model));
    return Model::adopt(model);
  }
  /// Models compiled so far, and held.
  std::pair<size_t, size_t> stats() const {
    size_t compilations = 0, held = 0;
    cgc_shape_cache_stats(p_, &compilations, &held);
    return {compilations, held};
  }
};

class Tensor : public detail::Handle<cgc_tensor_t, cgc_tensor_release> {
public:
  Tensor() = default;
  /// Adopts a tensor reference from the C API.
  explicit Tensor(cgc_tensor_t *adopted) : Handle(adopted) {}
  /// Zeroed device memory the CPU can access.
  static Tensor allocate(Device &device, cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
    cgc_tensor_desc_t desc = {dtype, shape.size(), shape.data()};
    cgc_tensor_t *t = nullptr;
    check(cgc_tensor_allocate(device.get(), &desc, &t));
    return Tensor(t);
  }
  /// A view of application memory (no copy).
  static Tensor wrap(Device &device, cgc_dtype_t dtype, const std::vector<int64_t> &shape,
                     void *data, size_t size) {
    cgc_tensor_desc_t desc = {dtype, shape.size(), shape.data()};
    cgc_tensor_t *t = nullptr;
    check(cgc_tensor_wrap_host(device.get(), &desc, data, size, &t));
    return Tensor(t);
  }
  cgc_dtype_t dtype() const { return cgc_tensor_dtype(p_); }
  std::vector<int64_t> shape() const {
    const int64_t *s = cgc_tensor_shape(p_);
    return std::vector<int64_t>(s, s + cgc_tensor_rank(p_));
  }
  uint64_t bytes() const { return cgc_tensor_bytes(p_); }
  void *data() { return cgc_tensor_data(p_); }
  template <class T> T *data() { return static_cast<T *>(cgc_tensor_data(p_)); }
  uint64_t gpuAddress() const { return cgc_tensor_gpu_address(p_); }
};

class Context : public detail::Handle<cgc_context_t, cgc_context_release> {
public:
  explicit Context(Model &model, Stream *stream = nullptr) {
    check(cgc_context_create(model.get(), stream ? stream->get() : nullptr, &p_));
  }
  /// The stream runs go to (borrowed: owned by the context or the caller).
  cgc_stream_t *stream() { return cgc_context_stream(p_); }
  void bindInput(size_t index, Tensor &tensor) {
    check(cgc_context_bind_input(p_, index, tensor.get()));
  }
  void bindOutput(size_t index, Tensor &tensor) {
    check(cgc_context_bind_output(p_, index, tensor.get()));
  }
  void unbindInput(size_t index) { check(cgc_context_bind_input(p_, index, nullptr)); }
  void unbindOutput(size_t index) { check(cgc_context_bind_output(p_, index, nullptr)); }
  /// The tensor bound to an input (borrowed: valid while bound).
  cgc_tensor_t *input(size_t index) {
    cgc_tensor_t *t = nullptr;
    check(cgc_context_input(p_, index, &t));
    return t;
  }
  cgc_tensor_t *output(size_t index) {
    cgc_tensor_t *t = nullptr;
    check(cgc_context_output(p_, index, &t));
    return t;
  }
  void setInput(size_t index, const void *data, size_t size) {
    check(cgc_context_set_input_data(p_, index, data, size));
  }
  void getOutput(size_t index, void *data, size_t size) {
    check(cgc_context_get_output_data(p_, index, data, size));
  }
  /// Output `index`'s valid rows after the runs (cgc_context_output_rows).
  int64_t outputRows(size_t index) {
    int64_t rows = 0;
    check(cgc_context_output_rows(p_, index, &rows));
    return rows;
  }
  void submit() { check(cgc_context_submit(p_)); }
  void wait(uint32_t timeoutMs = UINT32_MAX) { check(cgc_context_wait(p_, timeoutMs)); }
  void run() { check(cgc_context_run(p_)); }
  cgc_context_stats_t stats() const {
    cgc_context_stats_t s;
    cgc_context_stats(p_, &s);
    return s;
  }
};

class ExternalMemory
    : public detail::Handle<cgc_external_memory_t, cgc_external_memory_release> {
public:
  ExternalMemory() = default;
  explicit ExternalMemory(cgc_external_memory_t *adopted) : Handle(adopted) {}
  uint64_t size() const { return cgc_external_memory_size(p_); }
  void *data() { return cgc_external_memory_data(p_); }
};

class ExternalSemaphore
    : public detail::Handle<cgc_external_semaphore_t, cgc_external_semaphore_release> {
public:
  ExternalSemaphore() = default;
  explicit ExternalSemaphore(cgc_external_semaphore_t *adopted) : Handle(adopted) {}
  uint64_t value() const { return cgc_external_semaphore_value(p_); }
};

/// ONNX Runtime's OrtExternalResourceImporter, for cgc (docs/runtime.md).
class Importer : public detail::Handle<cgc_importer_t, cgc_importer_release> {
public:
  explicit Importer(Device &device) { check(cgc_importer_create(device.get(), &p_)); }
  bool canImportMemory(cgc_external_memory_handle_type_t type) const {
    bool supported = false;
    check(cgc_importer_can_import_memory(p_, type, &supported));
    return supported;
  }
  bool canImportSemaphore(cgc_external_semaphore_type_t type) const {
    bool supported = false;
    check(cgc_importer_can_import_semaphore(p_, type, &supported));
    return supported;
  }
  ExternalMemory importMemory(const cgc_external_memory_descriptor_t &desc) {
    cgc_external_memory_t *m = nullptr;
    check(cgc_importer_import_memory(p_, &desc, &m));
    return ExternalMemory(m);
  }
  Tensor createTensor(ExternalMemory &memory, cgc_dtype_t dtype,
                      const std::vector<int64_t> &shape, uint64_t offset = 0) {
    cgc_external_tensor_descriptor_t desc = {CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION, dtype,
                                             shape.data(), shape.size(), offset};
    cgc_tensor_t *t = nullptr;
    check(cgc_importer_create_tensor(p_, memory.get(), &desc, &t));
    return Tensor(t);
  }
  ExternalSemaphore importSemaphore(const cgc_external_semaphore_descriptor_t &desc) {
    cgc_external_semaphore_t *s = nullptr;
    check(cgc_importer_import_semaphore(p_, &desc, &s));
    return ExternalSemaphore(s);
  }
  void waitSemaphore(ExternalSemaphore &semaphore, cgc_stream_t *stream, uint64_t value) {
    check(cgc_importer_wait_semaphore(p_, semaphore.get(), stream, value));
  }
  void signalSemaphore(ExternalSemaphore &semaphore, cgc_stream_t *stream, uint64_t value) {
    check(cgc_importer_signal_semaphore(p_, semaphore.get(), stream, value));
  }
};

} // namespace cgc

#endif // CGC_RUNTIME_HPP
