//===- c_api.cpp - The C API: argument checks and statuses ----------------===//
//
// Every entry point catches what the library throws and returns it as a
// cgc_status_t; no exception crosses this file.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "cgc/version.h"

#include <cstring>
#include <new>

using namespace cgc;
using namespace cgc::rt;

struct cgc_status_s {
  cgc_status_code_t code;
  std::string message;
};

namespace cgc::rt {
Ref<cgc_model_s> loadModelFile(cgc_device_s *device, const char *path,
                               const cgc_model_options_t *options);
Ref<cgc_model_s> loadModelMemory(cgc_device_s *device, const void *data, size_t size,
                                 const cgc_model_options_t *options);
cgc_blob_s *compileOnnxMemory(cgc_device_s *device, const void *data, size_t size,
                              const char *name, const cgc_compile_options_t *options);
cgc_blob_s *compileOnnxFile(cgc_device_s *device, const char *path,
                            const cgc_compile_options_t *options);
void deviceInfo(cgc_device_s *device, cgc_device_info_t *out);
Ref<cgc_shape_cache_s> createShapeCache(cgc_device_s *device, const void *data, size_t size,
                                        const char *name, const cgc_compile_options_t *options,
                                        const cgc_model_options_t *modelOptions,
                                        size_t capacity);
Ref<cgc_model_s> shapeCacheModel(cgc_shape_cache_s *cache, const char *const *shapes,
                                 size_t count);
void shapeCacheStats(cgc_shape_cache_s *cache, size_t *compilations, size_t *held);
} // namespace cgc::rt

namespace {

/// CGCD3D12EnumerateDrivers, once.
const std::vector<std::string> &driverPaths() {
  static const std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    SIZE_T size = 0;
    UINT count = 0;
    if (FAILED(CGCD3D12EnumerateDrivers(nullptr, &size, &count)))
      return out;
    std::string buffer(size, '\0');
    if (FAILED(CGCD3D12EnumerateDrivers(buffer.data(), &size, &count)))
      return out;
    for (size_t start = 0; start < buffer.size();) {
      size_t end = buffer.find('\0', start);
      if (end == std::string::npos)
        end = buffer.size();
      if (end > start)
        out.push_back(buffer.substr(start, end - start));
      start = end + 1;
    }
    return out;
  }();
  return paths;
}

/// Returned when there is no memory for a status; never freed.
cgc_status_s *outOfMemoryStatus() {
  static cgc_status_s oom{CGC_STATUS_RESOURCE_EXHAUSTED, "out of memory"};
  return &oom;
}

cgc_status_t makeStatus(cgc_status_code_t code, std::string message) {
  try {
    return new cgc_status_s{code, std::move(message)};
  } catch (...) {
    return outOfMemoryStatus();
  }
}

template <class F> cgc_status_t guard(F &&body) {
  try {
    body();
    return nullptr;
  } catch (const Error &e) {
    return makeStatus(e.code, e.message);
  } catch (const std::bad_alloc &) {
    return makeStatus(CGC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception &e) {
    return makeStatus(CGC_STATUS_INTERNAL, e.what());
  } catch (...) {
    return makeStatus(CGC_STATUS_INTERNAL, "unknown error");
  }
}

template <class T> void need(T *p, const char *function, const char *name) {
  if (!p)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(function) + ": " + name + " is null");
}

template <class T> void releaseObject(T *object) {
  if (object)
    object->release();
}

const PlanTensor &ioTensor(const cgc_model_t *model, bool output, size_t index,
                           const char *function) {
  const auto &list = output ? model->plan().outputs : model->plan().inputs;
  if (index >= list.size())
    fail(CGC_STATUS_OUT_OF_RANGE, std::string(function) + ": " + (output ? "output" : "input") +
                                      " index " + std::to_string(index) +
                                      " is out of range: the model has " +
                                      std::to_string(list.size()));
  return list[index];
}

void fillInfo(const PlanTensor &t, cgc_tensor_info_t *out) {
  out->name = t.name.c_str();
  out->dtype = t.dtype;
  out->rank = t.shape.size();
  out->shape = t.shape.data();
  out->bytes = t.bytes;
}

size_t findByName(const cgc_model_t *model, bool output, const char *name,
                  const char *function) {
  need(name, function, "name");
  const auto &list = output ? model->plan().outputs : model->plan().inputs;
  std::string known;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name == name)
      return i;
    known += (i ? ", '" : "'") + list[i].name + "'";
  }
  fail(CGC_STATUS_NOT_FOUND, std::string(function) + ": the model has no " +
                                 (output ? "output" : "input") + " named '" + name +
                                 "' (it has " + (known.empty() ? "none" : known) + ")");
}

} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

cgc_status_code_t cgc_status_code(cgc_status_t status) {
  return status ? status->code : CGC_STATUS_OK;
}

const char *cgc_status_message(cgc_status_t status) {
  return status ? status->message.c_str() : "";
}

const char *cgc_status_code_name(cgc_status_code_t code) {
  switch (code) {
  case CGC_STATUS_OK: return "OK";
  case CGC_STATUS_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
  case CGC_STATUS_NOT_FOUND: return "NOT_FOUND";
  case CGC_STATUS_OUT_OF_RANGE: return "OUT_OF_RANGE";
  case CGC_STATUS_DATA_LOSS: return "DATA_LOSS";
  case CGC_STATUS_INCOMPATIBLE: return "INCOMPATIBLE";
  case CGC_STATUS_UNIMPLEMENTED: return "UNIMPLEMENTED";
  case CGC_STATUS_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
  case CGC_STATUS_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
  case CGC_STATUS_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
  case CGC_STATUS_DEVICE_LOST: return "DEVICE_LOST";
  case CGC_STATUS_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

void cgc_status_free(cgc_status_t status) {
  if (status != outOfMemoryStatus())
    delete status;
}

const char *cgc_runtime_version(void) { return CGC_PROJECT_VERSION_STRING; }

//===----------------------------------------------------------------------===//
// Devices and streams
//===----------------------------------------------------------------------===//

void cgc_device_options_init(cgc_device_options_t *options) {
  if (options)
    *options = cgc_device_options_t{};
}

cgc_status_t cgc_device_create(const cgc_device_options_t *options, cgc_device_t **out_device) {
  return guard([&] {
    need(out_device, "cgc_device_create", "out_device");
    *out_device = nullptr;
    cgc_device_options_t defaults = {};
    *out_device = createDevice(options ? *options : defaults).detach();
  });
}

void cgc_device_release(cgc_device_t *device) { releaseObject(device); }

cgc_status_t cgc_register_precompiled_databases(const char *state_object_database, size_t count,
                                                const char *const *precompiled_databases) {
  return guard([&] {
    need(state_object_database, "cgc_register_precompiled_databases", "state_object_database");
    need(precompiled_databases, "cgc_register_precompiled_databases", "precompiled_databases");
    if (!count || count > UINT32_MAX)
      fail(CGC_STATUS_INVALID_ARGUMENT,
           "cgc_register_precompiled_databases: count must be 1 .. 2^32-1, not " +
               std::to_string(count));
    if (FAILED(CGCD3D12RegisterPrecompiledDatabases(state_object_database, UINT(count),
                                                    precompiled_databases)))
      fail(CGC_STATUS_INVALID_ARGUMENT, CGCD3D12GetLastError());
  });
}

void *cgc_device_d3d12(cgc_device_t *device) { return device ? device->d3d.Get() : nullptr; }

bool cgc_device_lost(cgc_device_t *device) {
  return device && FAILED(device->d3d->GetDeviceRemovedReason());
}

cgc_status_t cgc_stream_create(cgc_device_t *device, cgc_stream_t **out_stream) {
  return guard([&] {
    need(device, "cgc_stream_create", "device");
    need(out_stream, "cgc_stream_create", "out_stream");
    *out_stream = nullptr;
    *out_stream = new cgc_stream_s(Ref<cgc_device_s>::share(device));
  });
}

void cgc_stream_release(cgc_stream_t *stream) { releaseObject(stream); }

cgc_status_t cgc_stream_synchronize(cgc_stream_t *stream, uint32_t timeout_ms) {
  return guard([&] {
    need(stream, "cgc_stream_synchronize", "stream");
    uint64_t value;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      value = stream->signalNextLocked();
    }
    stream->waitFor(value, timeout_ms, "cgc_stream_synchronize");
    stream->device->checkNotRemoved("cgc_stream_synchronize");
  });
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

cgc_status_t cgc_model_load_file(cgc_device_t *device, const char *path,
                                 const cgc_model_options_t *options, cgc_model_t **out_model) {
  return guard([&] {
    need(device, "cgc_model_load_file", "device");
    need(path, "cgc_model_load_file", "path");
    need(out_model, "cgc_model_load_file", "out_model");
    *out_model = nullptr;
    *out_model = loadModelFile(device, path, options).detach();
  });
}

cgc_status_t cgc_model_load_memory(cgc_device_t *device, const void *data, size_t size,
                                   const cgc_model_options_t *options, cgc_model_t **out_model) {
  return guard([&] {
    need(device, "cgc_model_load_memory", "device");
    need(out_model, "cgc_model_load_memory", "out_model");
    *out_model = nullptr;
    *out_model = loadModelMemory(device, data, size, options).detach();
  });
}

void cgc_model_release(cgc_model_t *model) { releaseObject(model); }

cgc_status_t cgc_model_compile_onnx(cgc_device_t *device, const void *data, size_t size,
                                    const char *name, const cgc_compile_options_t *options,
                                    cgc_blob_t **out_compiled) {
  return guard([&] {
    need(device, "cgc_model_compile_onnx", "device");
    need(out_compiled, "cgc_model_compile_onnx", "out_compiled");
    *out_compiled = nullptr;
    *out_compiled = compileOnnxMemory(device, data, size, name, options);
  });
}

cgc_status_t cgc_shape_cache_create(cgc_device_t *device, const void *data, size_t size,
                                    const char *name, const cgc_compile_options_t *options,
                                    const cgc_model_options_t *model_options, size_t capacity,
                                    cgc_shape_cache_t **out_cache) {
  return guard([&] {
    need(device, "cgc_shape_cache_create", "device");
    need(out_cache, "cgc_shape_cache_create", "out_cache");
    *out_cache = nullptr;
    *out_cache =
        createShapeCache(device, data, size, name, options, model_options, capacity).detach();
  });
}

void cgc_shape_cache_release(cgc_shape_cache_t *cache) { releaseObject(cache); }

cgc_status_t cgc_shape_cache_model(cgc_shape_cache_t *cache, const char *const *input_shapes,
                                   size_t count, cgc_model_t **out_model) {
  return guard([&] {
    need(cache, "cgc_shape_cache_model", "cache");
    need(out_model, "cgc_shape_cache_model", "out_model");
    *out_model = nullptr;
    *out_model = shapeCacheModel(cache, input_shapes, count).detach();
  });
}

void cgc_shape_cache_stats(cgc_shape_cache_t *cache, size_t *out_compilations,
                           size_t *out_held) {
  if (out_compilations)
    *out_compilations = 0;
  if (out_held)
    *out_held = 0;
  if (cache)
    shapeCacheStats(cache, out_compilations, out_held);
}

cgc_status_t cgc_device_info(cgc_device_t *device, cgc_device_info_t *out_info) {
  return guard([&] {
    need(device, "cgc_device_info", "device");
    need(out_info, "cgc_device_info", "out_info");
    deviceInfo(device, out_info);
  });
}

size_t cgc_driver_count(void) { return driverPaths().size(); }

const char *cgc_driver_path(size_t index) {
  const std::vector<std::string> &paths = driverPaths();
  return index < paths.size() ? paths[index].c_str() : nullptr;
}

cgc_status_t cgc_model_compile_onnx_file(cgc_device_t *device, const char *path,
                                         const cgc_compile_options_t *options,
                                         cgc_blob_t **out_compiled) {
  return guard([&] {
    need(device, "cgc_model_compile_onnx_file", "device");
    need(path, "cgc_model_compile_onnx_file", "path");
    need(out_compiled, "cgc_model_compile_onnx_file", "out_compiled");
    *out_compiled = nullptr;
    *out_compiled = compileOnnxFile(device, path, options);
  });
}

size_t cgc_model_input_count(const cgc_model_t *model) {
  return model ? model->plan().inputs.size() : 0;
}

size_t cgc_model_output_count(const cgc_model_t *model) {
  return model ? model->plan().outputs.size() : 0;
}

cgc_status_t cgc_model_input_info(const cgc_model_t *model, size_t index,
                                  cgc_tensor_info_t *out_info) {
  return guard([&] {
    need(model, "cgc_model_input_info", "model");
    need(out_info, "cgc_model_input_info", "out_info");
    fillInfo(ioTensor(model, false, index, "cgc_model_input_info"), out_info);
  });
}

cgc_status_t cgc_model_output_info(const cgc_model_t *model, size_t index,
                                   cgc_tensor_info_t *out_info) {
  return guard([&] {
    need(model, "cgc_model_output_info", "model");
    need(out_info, "cgc_model_output_info", "out_info");
    fillInfo(ioTensor(model, true, index, "cgc_model_output_info"), out_info);
  });
}

cgc_status_t cgc_model_find_input(const cgc_model_t *model, const char *name, size_t *out_index) {
  return guard([&] {
    need(model, "cgc_model_find_input", "model");
    need(out_index, "cgc_model_find_input", "out_index");
    *out_index = findByName(model, false, name, "cgc_model_find_input");
  });
}

cgc_status_t cgc_model_find_output(const cgc_model_t *model, const char *name,
                                   size_t *out_index) {
  return guard([&] {
    need(model, "cgc_model_find_output", "model");
    need(out_index, "cgc_model_find_output", "out_index");
    *out_index = findByName(model, true, name, "cgc_model_find_output");
  });
}

cgc_status_t cgc_model_output_rows_from(const cgc_model_t *model, size_t index,
                                        int64_t *out_output) {
  return guard([&] {
    need(model, "cgc_model_output_rows_from", "model");
    need(out_output, "cgc_model_output_rows_from", "out_output");
    *out_output = ioTensor(model, true, index, "cgc_model_output_rows_from").rowsFrom;
  });
}

void cgc_model_stats(const cgc_model_t *model, cgc_model_stats_t *out_stats) {
  if (model && out_stats)
    *out_stats = model->stats;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

cgc_status_t cgc_tensor_allocate(cgc_device_t *device, const cgc_tensor_desc_t *desc,
                                 cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(device, "cgc_tensor_allocate", "device");
    need(desc, "cgc_tensor_allocate", "desc");
    need(out_tensor, "cgc_tensor_allocate", "out_tensor");
    *out_tensor = nullptr;
    auto shape = checkDesc(desc->dtype, desc->rank, desc->shape, "cgc_tensor_allocate");
    *out_tensor = allocateTensor(device, desc->dtype, std::move(shape), "a tensor").detach();
  });
}

cgc_status_t cgc_tensor_wrap_host(cgc_device_t *device, const cgc_tensor_desc_t *desc,
                                  void *data, size_t size, cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(device, "cgc_tensor_wrap_host", "device");
    need(desc, "cgc_tensor_wrap_host", "desc");
    need(out_tensor, "cgc_tensor_wrap_host", "out_tensor");
    *out_tensor = nullptr;
    auto shape = checkDesc(desc->dtype, desc->rank, desc->shape, "cgc_tensor_wrap_host");
    *out_tensor = wrapHostTensor(device, desc->dtype, std::move(shape), data, size).detach();
  });
}

cgc_status_t cgc_tensor_wrap_d3d12_resource(cgc_device_t *device, const cgc_tensor_desc_t *desc,
                                            void *resource, uint64_t offset,
                                            cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(device, "cgc_tensor_wrap_d3d12_resource", "device");
    need(desc, "cgc_tensor_wrap_d3d12_resource", "desc");
    need(out_tensor, "cgc_tensor_wrap_d3d12_resource", "out_tensor");
    *out_tensor = nullptr;
    auto shape =
        checkDesc(desc->dtype, desc->rank, desc->shape, "cgc_tensor_wrap_d3d12_resource");
    *out_tensor = wrapResourceTensor(device, desc->dtype, std::move(shape),
                                     static_cast<ID3D12Resource *>(resource), offset)
                      .detach();
  });
}

void cgc_tensor_release(cgc_tensor_t *tensor) { releaseObject(tensor); }
cgc_dtype_t cgc_tensor_dtype(const cgc_tensor_t *t) { return t ? t->dtype : CGC_DTYPE_INVALID; }
size_t cgc_tensor_rank(const cgc_tensor_t *t) { return t ? t->shape.size() : 0; }
const int64_t *cgc_tensor_shape(const cgc_tensor_t *t) { return t ? t->shape.data() : nullptr; }
uint64_t cgc_tensor_bytes(const cgc_tensor_t *t) { return t ? t->bytes : 0; }
void *cgc_tensor_data(cgc_tensor_t *t) { return t ? t->cpu : nullptr; }
uint64_t cgc_tensor_gpu_address(const cgc_tensor_t *t) { return t ? t->gpu : 0; }

//===----------------------------------------------------------------------===//
// Contexts
//===----------------------------------------------------------------------===//

cgc_status_t cgc_context_create(cgc_model_t *model, cgc_stream_t *stream,
                                cgc_context_t **out_context) {
  return guard([&] {
    need(model, "cgc_context_create", "model");
    need(out_context, "cgc_context_create", "out_context");
    *out_context = nullptr;
    if (stream && stream->device.get() != model->device.get())
      fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_context_create: the stream belongs to another device");
    auto context = Ref<cgc_context_s>::adopt(new cgc_context_s());
    context->model = Ref<cgc_model_s>::share(model);
    context->stream = Ref<cgc_stream_s>::share(stream);
    context->create();
    *out_context = context.detach();
  });
}

void cgc_context_release(cgc_context_t *context) {
  if (!context)
    return;
  try {
    context->wait(UINT32_MAX);
  } catch (...) {
    // A failed run: nothing left to wait for.
  }
  context->release();
}

cgc_stream_t *cgc_context_stream(cgc_context_t *context) {
  return context ? context->stream.get() : nullptr;
}

cgc_status_t cgc_context_bind_input(cgc_context_t *context, size_t index, cgc_tensor_t *tensor) {
  return guard([&] {
    need(context, "cgc_context_bind_input", "context");
    context->bind(false, index, tensor);
  });
}

cgc_status_t cgc_context_bind_output(cgc_context_t *context, size_t index,
                                     cgc_tensor_t *tensor) {
  return guard([&] {
    need(context, "cgc_context_bind_output", "context");
    context->bind(true, index, tensor);
  });
}

cgc_status_t cgc_context_input(cgc_context_t *context, size_t index, cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(context, "cgc_context_input", "context");
    need(out_tensor, "cgc_context_input", "out_tensor");
    ioTensor(context->model.get(), false, index, "cgc_context_input");
    *out_tensor = context->inputs[index].get();
  });
}

cgc_status_t cgc_context_output(cgc_context_t *context, size_t index, cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(context, "cgc_context_output", "context");
    need(out_tensor, "cgc_context_output", "out_tensor");
    ioTensor(context->model.get(), true, index, "cgc_context_output");
    *out_tensor = context->outputs[index].get();
  });
}

/// `counted`: the application's tensor bytes (cgc_context_stats_t::
/// bytes_copied), not the runtime's own reads.
static void copyData(cgc_context_t *context, bool output, size_t index, void *data, size_t size,
                     const char *function, bool counted = true) {
  need(context, function, "context");
  const PlanTensor &t = ioTensor(context->model.get(), output, index, function);
  if (size && !data)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string(function) + ": data is null");
  if (size != t.bytes)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         std::string(function) + ": " + (output ? "output " : "input ") + std::to_string(index) +
             " '" + t.name + "' is " + describeTensor(t.dtype, t.shape) + " = " +
             std::to_string(t.bytes) + " bytes; got " + std::to_string(size) + " bytes");
  context->wait(UINT32_MAX);
  cgc_tensor_s *tensor = (output ? context->outputs : context->inputs)[index].get();
  if (!tensor->cpu)
    fail(CGC_STATUS_FAILED_PRECONDITION, std::string(function) + ": the tensor bound to " +
                                             t.name + " is not CPU-visible");
  if (size) {
    if (output)
      std::memcpy(data, tensor->cpu, size);
    else
      std::memcpy(tensor->cpu, data, size);
  }
  if (counted)
    context->stats.bytes_copied += size;
}

cgc_status_t cgc_context_set_input_data(cgc_context_t *context, size_t index, const void *data,
                                        size_t size) {
  return guard([&] {
    copyData(context, false, index, const_cast<void *>(data), size,
             "cgc_context_set_input_data");
  });
}

cgc_status_t cgc_context_get_output_data(cgc_context_t *context, size_t index, void *data,
                                         size_t size) {
  return guard(
      [&] { copyData(context, true, index, data, size, "cgc_context_get_output_data"); });
}

cgc_status_t cgc_context_output_rows(cgc_context_t *context, size_t index, int64_t *out_rows) {
  return guard([&] {
    const char *function = "cgc_context_output_rows";
    need(context, function, "context");
    need(out_rows, function, "out_rows");
    const ExecutionPlan &plan = context->model->plan();
    const PlanTensor &t = ioTensor(context->model.get(), true, index, function);
    const int64_t bound = t.shape.empty() ? 1 : t.shape[0];
    if (t.rowsFrom < 0) {
      *out_rows = bound;
      return;
    }
    int64_t rows = 0;
    copyData(context, true, size_t(t.rowsFrom), &rows, sizeof rows, function,
             /*counted=*/false);
    if (rows < 0 || rows > bound)
      fail(CGC_STATUS_DATA_LOSS, std::string(function) + ": output '" +
                                     plan.outputs[size_t(t.rowsFrom)].name + "' holds " +
                                     std::to_string(rows) + " rows for output '" + t.name +
                                     "', outside [0, " + std::to_string(bound) + "]");
    *out_rows = rows;
  });
}

cgc_status_t cgc_context_submit(cgc_context_t *context) {
  return guard([&] {
    need(context, "cgc_context_submit", "context");
    context->submit();
  });
}

cgc_status_t cgc_context_wait(cgc_context_t *context, uint32_t timeout_ms) {
  return guard([&] {
    need(context, "cgc_context_wait", "context");
    context->wait(timeout_ms);
  });
}

cgc_status_t cgc_context_run(cgc_context_t *context) {
  return guard([&] {
    need(context, "cgc_context_run", "context");
    context->submit();
    context->wait(UINT32_MAX);
  });
}

void cgc_context_stats(const cgc_context_t *context, cgc_context_stats_t *out_stats) {
  if (context && out_stats)
    *out_stats = context->stats;
}

//===----------------------------------------------------------------------===//
// External resources
//===----------------------------------------------------------------------===//

cgc_status_t cgc_importer_create(cgc_device_t *device, cgc_importer_t **out_importer) {
  return guard([&] {
    need(device, "cgc_importer_create", "device");
    need(out_importer, "cgc_importer_create", "out_importer");
    auto importer = Ref<cgc_importer_s>::adopt(new cgc_importer_s());
    importer->device = Ref<cgc_device_s>::share(device);
    *out_importer = importer.detach();
  });
}

void cgc_importer_release(cgc_importer_t *importer) { releaseObject(importer); }

cgc_status_t cgc_importer_can_import_memory(const cgc_importer_t *importer,
                                            cgc_external_memory_handle_type_t handle_type,
                                            bool *out_supported) {
  return guard([&] {
    need(importer, "cgc_importer_can_import_memory", "importer");
    need(out_supported, "cgc_importer_can_import_memory", "out_supported");
    *out_supported = canImportMemory(handle_type);
  });
}

cgc_status_t cgc_importer_import_memory(cgc_importer_t *importer,
                                        const cgc_external_memory_descriptor_t *desc,
                                        cgc_external_memory_t **out_memory) {
  return guard([&] {
    need(importer, "cgc_importer_import_memory", "importer");
    need(desc, "cgc_importer_import_memory", "desc");
    need(out_memory, "cgc_importer_import_memory", "out_memory");
    *out_memory = nullptr;
    *out_memory = importMemory(importer->device.get(), *desc).detach();
  });
}

void cgc_external_memory_release(cgc_external_memory_t *memory) { releaseObject(memory); }
uint64_t cgc_external_memory_size(const cgc_external_memory_t *m) { return m ? m->size : 0; }
void *cgc_external_memory_data(cgc_external_memory_t *m) { return m ? m->data : nullptr; }

cgc_status_t cgc_importer_create_tensor(cgc_importer_t *importer, cgc_external_memory_t *memory,
                                        const cgc_external_tensor_descriptor_t *desc,
                                        cgc_tensor_t **out_tensor) {
  return guard([&] {
    need(importer, "cgc_importer_create_tensor", "importer");
    need(memory, "cgc_importer_create_tensor", "memory");
    need(desc, "cgc_importer_create_tensor", "desc");
    need(out_tensor, "cgc_importer_create_tensor", "out_tensor");
    *out_tensor = nullptr;
    if (memory->device.get() != importer->device.get())
      fail(CGC_STATUS_INVALID_ARGUMENT,
           "cgc_importer_create_tensor: the memory was imported on another device");
    *out_tensor = tensorFromMemory(memory, *desc).detach();
  });
}

cgc_status_t cgc_importer_can_import_semaphore(const cgc_importer_t *importer,
                                               cgc_external_semaphore_type_t type,
                                               bool *out_supported) {
  return guard([&] {
    need(importer, "cgc_importer_can_import_semaphore", "importer");
    need(out_supported, "cgc_importer_can_import_semaphore", "out_supported");
    *out_supported = canImportSemaphore(type);
  });
}

cgc_status_t cgc_importer_import_semaphore(cgc_importer_t *importer,
                                           const cgc_external_semaphore_descriptor_t *desc,
                                           cgc_external_semaphore_t **out_semaphore) {
  return guard([&] {
    need(importer, "cgc_importer_import_semaphore", "importer");
    need(desc, "cgc_importer_import_semaphore", "desc");
    need(out_semaphore, "cgc_importer_import_semaphore", "out_semaphore");
    *out_semaphore = nullptr;
    *out_semaphore = importSemaphore(importer->device.get(), *desc).detach();
  });
}

void cgc_external_semaphore_release(cgc_external_semaphore_t *s) { releaseObject(s); }

static void queueSemaphore(cgc_importer_t *importer, cgc_external_semaphore_t *semaphore,
                           cgc_stream_t *stream, uint64_t value, bool signal) {
  const char *function =
      signal ? "cgc_importer_signal_semaphore" : "cgc_importer_wait_semaphore";
  need(importer, function, "importer");
  need(semaphore, function, "semaphore");
  need(stream, function, "stream");
  if (stream->device.get() != semaphore->device.get())
    fail(CGC_STATUS_INVALID_ARGUMENT,
         std::string(function) + ": the stream and the semaphore belong to different devices");
  std::lock_guard<std::mutex> lock(stream->mutex);
  HRESULT hr = signal ? stream->queue->Signal(semaphore->fence.Get(), value)
                      : stream->queue->Wait(semaphore->fence.Get(), value);
  if (FAILED(hr))
    fail(CGC_STATUS_INTERNAL, std::string(function) + ": " + hresultText(hr));
}

cgc_status_t cgc_importer_wait_semaphore(cgc_importer_t *importer,
                                         cgc_external_semaphore_t *semaphore,
                                         cgc_stream_t *stream, uint64_t value) {
  return guard([&] { queueSemaphore(importer, semaphore, stream, value, false); });
}

cgc_status_t cgc_importer_signal_semaphore(cgc_importer_t *importer,
                                           cgc_external_semaphore_t *semaphore,
                                           cgc_stream_t *stream, uint64_t value) {
  return guard([&] { queueSemaphore(importer, semaphore, stream, value, true); });
}

uint64_t cgc_external_semaphore_value(const cgc_external_semaphore_t *semaphore) {
  return semaphore ? semaphore->fence->GetCompletedValue() : 0;
}

} // extern "C"
