//===- compile.cpp - Compiling ONNX models for a device -------------------===//
//
// cgc_model_compile_onnx*: loads the compiler module (cgc/compiler_module.h)
// from this library's directory on first use and hands it the device.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "cgc/compiler_module.h"

#include <dlfcn.h>
#include <sys/stat.h>

using namespace cgc;
using namespace cgc::rt;

struct cgc_blob_s {
  std::vector<uint8_t> bytes;
};

namespace {

std::string runtimeDirectory() {
  Dl_info info = {};
  if (!dladdr(reinterpret_cast<void *>(&cgc_compiler_module_path), &info) || !info.dli_fname)
    return ".";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

const std::string &modulePath() {
  static const std::string path =
      runtimeDirectory() + "/" + compiler_module::kModuleFileName;
  return path;
}

const compiler_module::Interface &loadModule() {
  static std::mutex mutex;
  static const compiler_module::Interface *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return *loaded;
  const std::string &path = modulePath();
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    fail(CGC_STATUS_UNIMPLEMENTED,
         "cannot compile ONNX models: the compiler module " + path +
             " does not exist (a runtime-only build or installation); compile the model "
             "with cgc-compile and load the .cgc");
  void *module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!module) {
    const char *why = dlerror();
    fail(CGC_STATUS_UNIMPLEMENTED,
         "cannot load the compiler module " + path + ": " + (why ? why : "unknown error"));
  }
  auto open = reinterpret_cast<compiler_module::OpenFn>(
      dlsym(module, CGC_COMPILER_MODULE_OPEN_NAME));
  const compiler_module::Interface *table =
      open ? open(compiler_module::kVersion) : nullptr;
  if (!table || !table->compileOnnx || !table->describeDevice) {
    dlclose(module);
    fail(CGC_STATUS_INCOMPATIBLE, path + " is not a cgc compiler module of interface version " +
                                      std::to_string(compiler_module::kVersion));
  }
  loaded = table; // never unloaded: its code may be on other threads' stacks
  return *loaded;
}

std::vector<std::string> strings(const char *const *items, size_t count, const char *what) {
  if (count && !items)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string("cgc_compile_options_t: ") + what +
                                          " is null with a count of " + std::to_string(count));
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (!items[i])
      fail(CGC_STATUS_INVALID_ARGUMENT,
           std::string("cgc_compile_options_t: ") + what + "[" + std::to_string(i) + "] is null");
    out.emplace_back(items[i]);
  }
  return out;
}

cgc_blob_s *compile(cgc_device_s *device, compiler_module::Request request,
                    const cgc_compile_options_t *options) {
  cgc_compile_options_t defaults;
  cgc_compile_options_init(&defaults);
  const cgc_compile_options_t &o = options ? *options : defaults;
  request.inputShapes = strings(o.input_shapes, o.input_shape_count, "input_shapes");
  request.freezeInputs = strings(o.freeze_inputs, o.freeze_input_count, "freeze_inputs");
  request.targets = strings(o.targets, o.target_count, "targets");
  request.dataDependentRows = o.data_dependent_rows;
  if (o.max_loop_iterations < 0 || o.max_loop_iterations > 4096)
    fail(CGC_STATUS_INVALID_ARGUMENT,
         "cgc_compile_options_t: max_loop_iterations must be in [1, 4096] (0: the "
         "default), not " + std::to_string(o.max_loop_iterations));
  request.maxLoopIterations = o.max_loop_iterations;
  if (!o.no_device_patterns) {
    request.d3d12Device = device->d3d.Get();
    request.deviceLabel =
        device->driver == "default" ? "the default device" : "device '" + device->driver + "'";
  }
  void *user = o.message_user_data;
  if (auto fn = o.message)
    request.message = [fn, user](const std::string &text) { fn(user, text.c_str()); };
  if (auto fn = o.progress)
    request.progress = [fn, user](const std::string &stage) { fn(user, stage.c_str()); };
  if (auto fn = o.error_node)
    request.errorNode = [fn, user](const std::string &node) { fn(user, node.c_str()); };
  const compiler_module::Interface &module = loadModule();
  auto blob = std::make_unique<cgc_blob_s>();
  std::string error;
  if (!module.compileOnnx(request, blob->bytes, error))
    fail(CGC_STATUS_INVALID_ARGUMENT, request.path + ": " + error);
  return blob.release();
}

} // namespace

namespace cgc::rt {

cgc_blob_s *compileOnnxMemory(cgc_device_s *device, const void *data, size_t size,
                              const char *name, const cgc_compile_options_t *options) {
  if (!data || !size)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_model_compile_onnx: no model bytes (data is " +
                                          std::string(data ? "empty" : "null") + ")");
  compiler_module::Request request;
  request.onnx = data;
  request.onnxSize = size;
  request.path = name && *name ? name : "model.onnx";
  return compile(device, std::move(request), options);
}

cgc_blob_s *compileOnnxFile(cgc_device_s *device, const char *path,
                            const cgc_compile_options_t *options) {
  struct stat st;
  if (stat(path, &st) != 0)
    fail(CGC_STATUS_NOT_FOUND, std::string(path) + ": no such file");
  compiler_module::Request request;
  request.path = path;
  return compile(device, std::move(request), options);
}

struct DeviceInfo {
  compiler_module::DeviceDescription description;
  std::vector<const char *> patterns;
  cgc_device_info_t info = {};
};

void deviceInfo(cgc_device_s *device, cgc_device_info_t *out) {
  std::lock_guard<std::mutex> lock(device->infoMutex);
  if (!device->info) {
    const compiler_module::Interface &module = loadModule();
    auto info = std::make_shared<DeviceInfo>();
    std::string error;
    if (!module.describeDevice(device->d3d.Get(), info->description, error))
      fail(CGC_STATUS_INTERNAL, "device '" + device->driver + "': " + error);
    for (const std::string &p : info->description.patterns)
      info->patterns.push_back(p.c_str());
    info->info.driver = device->driver.c_str();
    info->info.mlir_tier = info->description.tier.c_str();
    info->info.target =
        info->description.target.empty() ? nullptr : info->description.target.c_str();
    info->info.pattern_count = info->patterns.size();
    info->info.patterns = info->patterns.data();
    info->info.unavailable = info->description.unavailable.c_str();
    device->info = info;
  }
  *out = static_cast<DeviceInfo *>(device->info.get())->info;
}

} // namespace cgc::rt

void cgc_compile_options_init(cgc_compile_options_t *options) {
  if (options)
    *options = cgc_compile_options_t{};
}

const void *cgc_blob_data(const cgc_blob_t *blob) {
  return blob && !blob->bytes.empty() ? blob->bytes.data() : nullptr;
}

size_t cgc_blob_size(const cgc_blob_t *blob) { return blob ? blob->bytes.size() : 0; }

void cgc_blob_release(cgc_blob_t *blob) { delete blob; }

const char *cgc_compiler_module_path(void) { return modulePath().c_str(); }
