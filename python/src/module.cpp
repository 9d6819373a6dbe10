//===- module.cpp - cgc._cgc: the Python extension over the runtime's C API -===//
//
// A thin layer: every call goes to cgc/runtime.h, every failure becomes a
// cgc.Error carrying the runtime's message and status code. The Python
// package (python/cgc) shapes the API users see. The GIL is released while
// the runtime compiles, loads or runs.
//
// Zero copy: an input array that is C-contiguous, of the model's dtype and
// shape and 64-byte aligned is bound in place (cgc_tensor_wrap_host); any
// other array is copied once into the context's own buffer. Outputs are
// fresh 64-byte aligned numpy arrays the run writes in place and that are
// returned as they are.
//
//===----------------------------------------------------------------------===//

#include "cgc/runtime.h"
#include "cgc/runtime.hpp"
#include "fence.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

py::object gErrorType; // cgc.Error, set by the package

/// Raises cgc.Error(message, code name).
[[noreturn]] void raiseError(cgc_status_code_t code, const std::string &message) {
  std::string name = cgc_status_code_name(code);
  if (gErrorType) {
    PyErr_SetObject(gErrorType.ptr(), py::make_tuple(message, name).ptr());
    throw py::error_already_set();
  }
  throw std::runtime_error(name + ": " + message);
}

void check(cgc_status_t status) {
  if (!status)
    return;
  cgc_status_code_t code = cgc_status_code(status);
  std::string message = cgc_status_message(status);
  cgc_status_free(status);
  raiseError(code, message);
}

py::dtype toNumpy(cgc_dtype_t dtype) {
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: return py::dtype("float32");
  case CGC_DTYPE_FLOAT64: return py::dtype("float64");
  case CGC_DTYPE_FLOAT16: return py::dtype("float16");
  case CGC_DTYPE_INT8: return py::dtype("int8");
  case CGC_DTYPE_UINT8: return py::dtype("uint8");
  case CGC_DTYPE_INT16: return py::dtype("int16");
  case CGC_DTYPE_UINT16: return py::dtype("uint16");
  case CGC_DTYPE_INT32: return py::dtype("int32");
  case CGC_DTYPE_UINT32: return py::dtype("uint32");
  case CGC_DTYPE_INT64: return py::dtype("int64");
  case CGC_DTYPE_UINT64: return py::dtype("uint64");
  case CGC_DTYPE_BOOL: return py::dtype("bool");
  default: {
    const char *name = cgc_dtype_name(dtype);
    throw py::type_error(std::string("the tensor's dtype ") + (name ? name : "?") +
                         " has no numpy equivalent");
  }
  }
}

struct Device {
  cgc_device_t *device = nullptr;
  explicit Device(std::optional<std::string> driver, bool debugLayer, uint32_t threads,
                  std::optional<std::string> driverOptions) {
    cgc_device_options_t options;
    cgc_device_options_init(&options);
    options.driver = driver ? driver->c_str() : nullptr;
    options.debug_layer = debugLayer;
    options.device_threads = threads;
    options.driver_options = driverOptions ? driverOptions->c_str() : nullptr;
    cgc_status_t status;
    {
      py::gil_scoped_release release;
      status = cgc_device_create(&options, &device);
    }
    check(status);
  }
  ~Device() { cgc_device_release(device); }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
};

/// Compiles an ONNX model (bytes or a path) for `device`; returns the
/// compiled model's bytes and the compiler's messages.
py::tuple compileOnnx(std::shared_ptr<Device> device, py::object model, const std::string &name,
                      std::vector<std::string> targets, std::vector<std::string> inputShapes,
                      std::vector<std::string> freezeInputs, bool noDevicePatterns,
                      int64_t maxLoopIterations) {
  cgc::CompileOptions options;
  options.targets = std::move(targets);
  options.inputShapes = std::move(inputShapes);
  options.freezeInputs = std::move(freezeInputs);
  options.noDevicePatterns = noDevicePatterns;
  // Outputs with data-dependent rows are returned at their size.
  options.dataDependentRows = true;
  options.maxLoopIterations = maxLoopIterations;
  cgc::Compiled compiled;
  try {
    if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model) ||
        py::isinstance<py::memoryview>(model)) {
      py::buffer_info bytes = py::buffer(model).request();
      py::gil_scoped_release release;
      compiled = cgc::compileOnnx(device->device, bytes.ptr,
                                  size_t(bytes.size * bytes.itemsize), name, options);
    } else {
      std::string path = py::str(model);
      py::gil_scoped_release release;
      compiled = cgc::compileOnnxFile(device->device, path, options);
    }
  } catch (const cgc::Error &e) {
    raiseError(e.code(), e.what());
  }
  py::bytes result(reinterpret_cast<const char *>(compiled.bytes.data()), compiled.bytes.size());
  return py::make_tuple(result, compiled.messages);
}

struct TensorInfo {
  std::string name;
  py::dtype dtype;
  std::vector<int64_t> shape;
  uint64_t bytes;
  /// Outputs: the output holding this one's valid rows, or -1
  /// (cgc_model_output_rows_from).
  int64_t rowsFrom = -1;
};

struct Model {
  std::shared_ptr<Device> device; // the model keeps its device
  cgc_model_t *model = nullptr;
  Model(std::shared_ptr<Device> d, py::bytes data) : device(std::move(d)) {
    std::string_view view = data;
    cgc_status_t status;
    {
      py::gil_scoped_release release;
      status = cgc_model_load_memory(device->device, view.data(), view.size(), nullptr, &model);
    }
    check(status);
  }
  Model(std::shared_ptr<Device> d, const std::string &path) : device(std::move(d)) {
    cgc_status_t status;
    {
      py::gil_scoped_release release;
      status = cgc_model_load_file(device->device, path.c_str(), nullptr, &model);
    }
    check(status);
  }
  ~Model() { cgc_model_release(model); }
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  std::vector<TensorInfo> infos(bool outputs) const {
    size_t n = outputs ? cgc_model_output_count(model) : cgc_model_input_count(model);
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < n; ++i) {
      cgc_tensor_info_t info;
      check(outputs ? cgc_model_output_info(model, i, &info) : cgc_model_input_info(model, i, &info));
      out.push_back({info.name, toNumpy(info.dtype),
                     std::vector<int64_t>(info.shape, info.shape + info.rank), info.bytes});
      if (outputs)
        check(cgc_model_output_rows_from(model, i, &out.back().rowsFrom));
    }
    return out;
  }
};

/// A 64-byte aligned, C-contiguous array of `dtype` and `shape`.
py::array alignedArray(const py::dtype &dtype, const std::vector<int64_t> &shape) {
  size_t bytes = size_t(dtype.itemsize());
  for (int64_t d : shape)
    bytes *= size_t(d);
  void *p = nullptr;
  if (posix_memalign(&p, 64, std::max<size_t>(bytes, 64)) != 0)
    throw std::bad_alloc();
  py::capsule owner(p, [](void *q) { std::free(q); });
  return py::array(dtype, std::vector<py::ssize_t>(shape.begin(), shape.end()), p, owner);
}

cgc_dtype_t dtypeFromNumpy(const py::dtype &dtype) {
  static const std::pair<const char *, cgc_dtype_t> table[] = {
      {"float32", CGC_DTYPE_FLOAT32}, {"float64", CGC_DTYPE_FLOAT64},
      {"float16", CGC_DTYPE_FLOAT16}, {"int8", CGC_DTYPE_INT8},
      {"uint8", CGC_DTYPE_UINT8},     {"int16", CGC_DTYPE_INT16},
      {"uint16", CGC_DTYPE_UINT16},   {"int32", CGC_DTYPE_INT32},
      {"uint32", CGC_DTYPE_UINT32},   {"int64", CGC_DTYPE_INT64},
      {"uint64", CGC_DTYPE_UINT64},   {"bool", CGC_DTYPE_BOOL}};
  for (auto &[name, value] : table)
    if (dtype.is(py::dtype(name)))
      return value;
  return CGC_DTYPE_INVALID;
}

struct Importer;

/// Memory another process or device shares as a file descriptor, mapped
/// here (no copy).
struct ExternalMemory {
  std::shared_ptr<Device> device;
  cgc_external_memory_t *memory = nullptr;
  ~ExternalMemory() { cgc_external_memory_release(memory); }
  uint64_t size() const { return cgc_external_memory_size(memory); }
  /// A numpy view of [offset, offset + bytes of dtype x shape).
  py::array array(py::object self, const py::dtype &dtype, std::vector<int64_t> shape,
                  uint64_t offset) {
    uint64_t bytes = uint64_t(dtype.itemsize());
    for (int64_t d : shape) {
      if (d < 0)
        throw py::value_error("shape dimensions must be non-negative");
      bytes *= uint64_t(d);
    }
    if (offset > size() || bytes > size() - offset)
      throw py::value_error("a view of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " does not fit the imported " +
                            std::to_string(size()) + " bytes");
    auto *base = static_cast<uint8_t *>(cgc_external_memory_data(memory));
    return py::array(dtype, std::vector<py::ssize_t>(shape.begin(), shape.end()), base + offset,
                     self);
  }
};

struct ExternalSemaphore {
  std::shared_ptr<Device> device;
  cgc_external_semaphore_t *semaphore = nullptr;
  ~ExternalSemaphore() { cgc_external_semaphore_release(semaphore); }
  uint64_t value() const { return cgc_external_semaphore_value(semaphore); }
};

struct Importer {
  std::shared_ptr<Device> device;
  cgc_importer_t *importer = nullptr;
  explicit Importer(std::shared_ptr<Device> d) : device(std::move(d)) {
    check(cgc_importer_create(device->device, &importer));
  }
  ~Importer() { cgc_importer_release(importer); }
  Importer(const Importer &) = delete;
  Importer &operator=(const Importer &) = delete;

  std::shared_ptr<ExternalMemory> importMemory(int fd, uint64_t size, uint64_t offset,
                                               const std::string &access, bool dmaBuf) {
    cgc_external_memory_descriptor_t desc = {};
    desc.version = CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION;
    desc.handle_type = dmaBuf ? CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF
                              : CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD;
    desc.fd = fd;
    desc.size_bytes = size;
    desc.offset_bytes = offset;
    if (access == "read_write")
      desc.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE;
    else if (access == "read_only")
      desc.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY;
    else if (access == "write_only")
      desc.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_WRITE_ONLY;
    else
      throw py::value_error("access must be 'read_write', 'read_only' or 'write_only', got '" +
                            access + "'");
    auto memory = std::make_shared<ExternalMemory>();
    memory->device = device;
    check(cgc_importer_import_memory(importer, &desc, &memory->memory));
    return memory;
  }

  std::shared_ptr<ExternalSemaphore> importSemaphore(int fd) {
    cgc_external_semaphore_descriptor_t desc = {};
    desc.version = CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION;
    desc.type = CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE;
    desc.native_handle = cgc::python::handleFromFd(fd);
    auto semaphore = std::make_shared<ExternalSemaphore>();
    semaphore->device = device;
    check(cgc_importer_import_semaphore(importer, &desc, &semaphore->semaphore));
    return semaphore;
  }

  /// A tensor over imported memory for binding.
  cgc_tensor_t *tensor(ExternalMemory &memory, const TensorInfo &info, uint64_t offset) {
    cgc_external_tensor_descriptor_t desc = {};
    desc.version = CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION;
    desc.dtype = dtypeFromNumpy(info.dtype);
    desc.shape = info.shape.data();
    desc.rank = info.shape.size();
    desc.offset_bytes = offset;
    cgc_tensor_t *t = nullptr;
    check(cgc_importer_create_tensor(importer, memory.memory, &desc, &t));
    return t;
  }
};

struct Context {
  std::shared_ptr<Model> model;
  cgc_context_t *context = nullptr;
  std::vector<TensorInfo> inputs, outputs;
  bool closed = false;

  explicit Context(std::shared_ptr<Model> m) : model(std::move(m)) {
    check(cgc_context_create(model->model, nullptr, &context));
    inputs = model->infos(false);
    outputs = model->infos(true);
  }
  ~Context() { close(); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  void close() {
    if (!closed) {
      py::gil_scoped_release release;
      cgc_context_release(context);
      context = nullptr;
      closed = true;
    }
  }

  void requireOpen() const {
    if (closed)
      throw py::value_error("the session is closed");
  }
  /// Binds input (or output) `index` to imported memory at `offset`: runs
  /// read (write) it in place until it is bound again.
  void bindExternal(Importer &importer, bool output, size_t index, ExternalMemory &memory,
                    uint64_t offset) {
    requireOpen();
    const std::vector<TensorInfo> &infos = output ? outputs : inputs;
    if (index >= infos.size())
      throw py::index_error("no " + std::string(output ? "output" : "input") + " #" +
                            std::to_string(index));
    cgc_tensor_t *t = importer.tensor(memory, infos[index], offset);
    cgc_status_t status = output ? cgc_context_bind_output(context, index, t)
                                 : cgc_context_bind_input(context, index, t);
    cgc_tensor_release(t); // the context keeps its own reference
    check(status);
  }
  void submit() {
    requireOpen();
    check(cgc_context_submit(context));
  }
  void wait(uint32_t timeoutMs) {
    requireOpen();
    cgc_status_t status;
    {
      py::gil_scoped_release release;
      status = cgc_context_wait(context, timeoutMs);
    }
    check(status);
  }
  void waitSemaphore(Importer &importer, ExternalSemaphore &semaphore, uint64_t value) {
    requireOpen();
    check(cgc_importer_wait_semaphore(importer.importer, semaphore.semaphore,
                                      cgc_context_stream(context), value));
  }
  void signalSemaphore(Importer &importer, ExternalSemaphore &semaphore, uint64_t value) {
    requireOpen();
    check(cgc_importer_signal_semaphore(importer.importer, semaphore.semaphore,
                                        cgc_context_stream(context), value));
  }

  /// Runs with `feeds` in input order; returns the outputs in order.
  std::vector<py::array> run(const std::vector<py::array> &feeds) {
    if (closed)
      throw py::value_error("the session is closed");
    if (feeds.size() != inputs.size())
      throw py::value_error("expected " + std::to_string(inputs.size()) + " inputs, got " +
                            std::to_string(feeds.size()));
    std::vector<cgc_tensor_t *> wrapped;
    auto releaseWrapped = [&] {
      for (cgc_tensor_t *t : wrapped)
        cgc_tensor_release(t);
    };
    try {
      for (size_t i = 0; i < feeds.size(); ++i) {
        const py::array &a = feeds[i];
        const TensorInfo &info = inputs[i];
        cgc_tensor_t *tensor = nullptr;
        bool inPlace = (a.flags() & py::array::c_style) &&
                       (reinterpret_cast<uintptr_t>(a.data()) % 64) == 0 &&
                       size_t(a.nbytes()) == info.bytes;
        if (inPlace) {
          cgc_tensor_desc_t desc = {dtypeFromNumpy(info.dtype), info.shape.size(),
                                    info.shape.data()};
          check(cgc_tensor_wrap_host(model->device->device, &desc, const_cast<void *>(a.data()),
                                     size_t(a.nbytes()), &tensor));
          wrapped.push_back(tensor);
        }
        check(cgc_context_bind_input(context, i, tensor));
        if (!inPlace)
          check(cgc_context_set_input_data(context, i, a.data(), size_t(a.nbytes())));
      }
      std::vector<py::array> results;
      for (size_t i = 0; i < outputs.size(); ++i) {
        const TensorInfo &info = outputs[i];
        py::array out = alignedArray(info.dtype, info.shape);
        cgc_tensor_desc_t desc = {dtypeFromNumpy(info.dtype), info.shape.size(), info.shape.data()};
        cgc_tensor_t *tensor = nullptr;
        check(cgc_tensor_wrap_host(model->device->device, &desc, out.mutable_data(),
                                   size_t(out.nbytes()), &tensor));
        wrapped.push_back(tensor);
        check(cgc_context_bind_output(context, i, tensor));
        results.push_back(std::move(out));
      }
      cgc_status_t status;
      {
        py::gil_scoped_release release;
        status = cgc_context_run(context);
      }
      check(status);
      releaseWrapped();
      // Data-dependent rows: the run's rows (a view of the bound).
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (outputs[i].rowsFrom < 0)
          continue;
        int64_t rows = 0;
        check(cgc_context_output_rows(context, i, &rows));
        results[i] = results[i][py::slice(0, py::ssize_t(rows), 1)].cast<py::array>();
      }
      return results;
    } catch (...) {
      releaseWrapped();
      throw;
    }
  }

};

py::dict deviceInfo(std::shared_ptr<Device> device) {
  cgc_device_info_t info;
  cgc_status_t status;
  {
    py::gil_scoped_release release;
    status = cgc_device_info(device->device, &info);
  }
  check(status);
  py::dict d;
  d["driver"] = std::string(info.driver);
  d["mlir_tier"] = std::string(info.mlir_tier);
  d["target"] = info.target ? py::object(py::str(info.target)) : py::object(py::none());
  py::list patterns;
  for (size_t i = 0; i < info.pattern_count; ++i)
    patterns.append(std::string(info.patterns[i]));
  d["patterns"] = patterns;
  d["unavailable"] = std::string(info.unavailable ? info.unavailable : "");
  return d;
}

} // namespace

PYBIND11_MODULE(_cgc, m) {
  m.doc() = "cgc's runtime (C API) for Python; use the cgc package, not this module";
  m.def("_set_error_type", [](py::object type) { gErrorType = type; });
  m.def("runtime_version", [] { return std::string(cgc_runtime_version()); });
  m.def("compiler_module_path", [] { return std::string(cgc_compiler_module_path()); });
  m.def("drivers", [] {
    std::vector<std::string> out;
    size_t count = cgc_driver_count();
    for (size_t i = 0; i < count; ++i)
      out.emplace_back(cgc_driver_path(i));
    return out;
  });

  py::class_<Device, std::shared_ptr<Device>>(m, "Device")
      .def(py::init<std::optional<std::string>, bool, uint32_t, std::optional<std::string>>(),
           py::arg("driver") = py::none(), py::arg("debug_layer") = false, py::arg("threads") = 0,
           py::arg("driver_options") = py::none())
      .def("info", &deviceInfo)
      .def("lost", [](const Device &device) { return cgc_device_lost(device.device); });
  m.def("compile_onnx", &compileOnnx, py::arg("device"), py::arg("model"), py::arg("name"),
        py::arg("targets"), py::arg("input_shapes"), py::arg("freeze_inputs"),
        py::arg("no_device_patterns"), py::arg("max_loop_iterations") = 0);

  py::class_<ExternalMemory, std::shared_ptr<ExternalMemory>>(m, "ExternalMemory")
      .def_property_readonly("size", &ExternalMemory::size)
      .def("array", [](py::object self, const py::dtype &dtype, std::vector<int64_t> shape,
                       uint64_t offset) {
        return self.cast<ExternalMemory &>().array(self, dtype, std::move(shape), offset);
      });
  py::class_<ExternalSemaphore, std::shared_ptr<ExternalSemaphore>>(m, "ExternalSemaphore")
      .def_property_readonly("value", &ExternalSemaphore::value);
  py::class_<Importer, std::shared_ptr<Importer>>(m, "Importer")
      .def(py::init<std::shared_ptr<Device>>())
      .def("import_memory", &Importer::importMemory)
      .def("import_semaphore", &Importer::importSemaphore);
  m.def("create_shared_fence", [](std::shared_ptr<Device> device, uint64_t initial) {
    std::string error;
    int fd = cgc::python::createSharedFence(cgc_device_d3d12(device->device), initial, error);
    if (fd < 0)
      throw std::runtime_error(error);
    return fd;
  });

  py::class_<TensorInfo>(m, "TensorInfo")
      .def_readonly("name", &TensorInfo::name)
      .def_readonly("dtype", &TensorInfo::dtype)
      .def_readonly("shape", &TensorInfo::shape)
      .def_readonly("bytes", &TensorInfo::bytes);
  py::class_<Model, std::shared_ptr<Model>>(m, "Model")
      .def(py::init<std::shared_ptr<Device>, py::bytes>())
      .def(py::init<std::shared_ptr<Device>, const std::string &>())
      .def_property_readonly("inputs", [](const Model &m) { return m.infos(false); })
      .def_property_readonly("outputs", [](const Model &m) { return m.infos(true); });
  py::class_<Context, std::shared_ptr<Context>>(m, "Context")
      .def(py::init<std::shared_ptr<Model>>())
      .def("run", &Context::run)
      .def("close", &Context::close)
      .def("bind_external", &Context::bindExternal)
      .def("submit", &Context::submit)
      .def("wait", &Context::wait)
      .def("wait_semaphore", &Context::waitSemaphore)
      .def("signal_semaphore", &Context::signalSemaphore)
      .def_property_readonly("closed", [](const Context &c) { return c.closed; })
      .def("stats", [](const Context &c) {
        cgc_context_stats_t s;
        cgc_context_stats(c.context, &s);
        py::dict d;
        d["runs"] = s.runs;
        d["recordings"] = s.recordings;
        d["bytes_copied"] = s.bytes_copied;
        return d;
      });
}
