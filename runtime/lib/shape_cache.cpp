//===- shape_cache.cpp - Models compiled per set of input shapes ----------===//
//
// An ONNX model whose inputs have symbolic dimensions is compiled for the
// shapes of each run: cgc_shape_cache_model compiles and loads it on the
// first request for a set of shapes and keeps the last `capacity` models,
// the least recently used evicted first (a model its caller still holds
// lives on with the caller's reference). One compilation at a time per
// cache; lookups of kept models do not wait for the compiler's work on
// other caches.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include <algorithm>

namespace cgc::rt {

Ref<cgc_model_s> loadModelMemory(cgc_device_s *device, const void *data, size_t size,
                                 const cgc_model_options_t *options);
cgc_blob_s *compileOnnxMemory(cgc_device_s *device, const void *data, size_t size,
                              const char *name, const cgc_compile_options_t *options);

namespace {

/// "NAME=D0xD1x...": its NAME, or empty when the text is not of that form
/// (dimensions are decimal digits separated by 'x'; none for a scalar).
std::string shapeOptionInput(const std::string &text) {
  size_t equals = text.rfind('=');
  if (equals == std::string::npos || equals == 0)
    return "";
  bool digit = false;
  for (char c : text.substr(equals + 1)) {
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c == 'x' && digit)
      digit = false;
    else
      return "";
  }
  if (equals + 1 < text.size() && !digit)
    return "";
  return text.substr(0, equals);
}

std::vector<std::string> copyStrings(const char *const *items, size_t count,
                                     const std::string &what) {
  if (count && !items)
    fail(CGC_STATUS_INVALID_ARGUMENT, what + " is null with a count of " + std::to_string(count));
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) {
    if (!items[i])
      fail(CGC_STATUS_INVALID_ARGUMENT, what + "[" + std::to_string(i) + "] is null");
    out.emplace_back(items[i]);
  }
  return out;
}

std::vector<const char *> pointersTo(const std::vector<std::string> &strings) {
  std::vector<const char *> out;
  for (const std::string &s : strings)
    out.push_back(s.c_str());
  return out;
}

struct BlobDeleter {
  void operator()(cgc_blob_t *blob) const { cgc_blob_release(blob); }
};

} // namespace

Ref<cgc_shape_cache_s> createShapeCache(cgc_device_s *device, const void *data, size_t size,
                                        const char *name, const cgc_compile_options_t *options,
                                        const cgc_model_options_t *modelOptions,
                                        size_t capacity) {
  if (!data || size == 0)
    fail(CGC_STATUS_INVALID_ARGUMENT, std::string("cgc_shape_cache_create: no ONNX model (") +
                                          (data ? "0 bytes" : "data is null") + ")");
  if (capacity > 1024)
    fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_shape_cache_create: capacity " +
                                          std::to_string(capacity) +
                                          " is more than 1024 models (0: the default, 8)");
  auto cache = Ref<cgc_shape_cache_s>::adopt(new cgc_shape_cache_s);
  cache->device = Ref<cgc_device_s>::share(device);
  cache->onnx.assign(static_cast<const uint8_t *>(data),
                     static_cast<const uint8_t *>(data) + size);
  cache->name = name ? name : "model.onnx";
  cgc_compile_options_init(&cache->compileOptions);
  if (options) {
    const std::string what = "cgc_shape_cache_create: options->";
    cache->compileOptions = *options;
    cache->baseShapes = copyStrings(options->input_shapes, options->input_shape_count,
                                    what + "input_shapes");
    cache->freezeInputs = copyStrings(options->freeze_inputs, options->freeze_input_count,
                                      what + "freeze_inputs");
    cache->targets = copyStrings(options->targets, options->target_count, what + "targets");
  }
  for (const std::string &shape : cache->baseShapes)
    if (shapeOptionInput(shape).empty())
      fail(CGC_STATUS_INVALID_ARGUMENT, "cgc_shape_cache_create: input shape '" + shape +
                                            "' is not NAME=D0xD1x...");
  cache->freezePointers = pointersTo(cache->freezeInputs);
  cache->targetPointers = pointersTo(cache->targets);
  cache->compileOptions.input_shapes = nullptr;
  cache->compileOptions.input_shape_count = 0;
  cache->compileOptions.freeze_inputs = cache->freezePointers.data();
  cache->compileOptions.freeze_input_count = cache->freezePointers.size();
  cache->compileOptions.targets = cache->targetPointers.data();
  cache->compileOptions.target_count = cache->targetPointers.size();
  if (modelOptions) {
    cache->modelOptions = *modelOptions;
    cache->hasModelOptions = true;
  }
  cache->capacity = capacity ? capacity : 8;
  return cache;
}

Ref<cgc_model_s> shapeCacheModel(cgc_shape_cache_s *cache, const char *const *shapes,
                                 size_t count) {
  std::vector<std::string> requested =
      copyStrings(shapes, count, "cgc_shape_cache_model: input_shapes");
  std::vector<std::string> named;
  for (const std::string &shape : requested) {
    std::string input = shapeOptionInput(shape);
    if (input.empty())
      fail(CGC_STATUS_INVALID_ARGUMENT,
           "cgc_shape_cache_model: '" + shape + "' is not NAME=D0xD1x...");
    if (std::find(named.begin(), named.end(), input) != named.end())
      fail(CGC_STATUS_INVALID_ARGUMENT,
           "cgc_shape_cache_model: input '" + input + "' is given two shapes");
    named.push_back(input);
  }
  // The request's shapes, then the cache's own for inputs it does not name.
  for (const std::string &shape : cache->baseShapes)
    if (std::find(named.begin(), named.end(), shapeOptionInput(shape)) == named.end())
      requested.push_back(shape);
  std::sort(requested.begin(), requested.end());
  std::string key;
  for (const std::string &shape : requested)
    key += shape + ";";

  std::lock_guard<std::mutex> lock(cache->mutex);
  auto &models = cache->models;
  for (auto it = models.begin(); it != models.end(); ++it)
    if (it->first == key) {
      models.splice(models.begin(), models, it);
      return models.front().second;
    }
  std::vector<const char *> pointers = pointersTo(requested);
  cgc_compile_options_t options = cache->compileOptions;
  options.input_shapes = pointers.data();
  options.input_shape_count = pointers.size();
  std::unique_ptr<cgc_blob_t, BlobDeleter> blob(compileOnnxMemory(
      cache->device.get(), cache->onnx.data(), cache->onnx.size(), cache->name.c_str(), &options));
  Ref<cgc_model_s> model =
      loadModelMemory(cache->device.get(), cgc_blob_data(blob.get()), cgc_blob_size(blob.get()),
                      cache->hasModelOptions ? &cache->modelOptions : nullptr);
  ++cache->compilations;
  models.emplace_front(key, model);
  while (models.size() > cache->capacity)
    models.pop_back();
  return model;
}

void shapeCacheStats(cgc_shape_cache_s *cache, size_t *compilations, size_t *held) {
  std::lock_guard<std::mutex> lock(cache->mutex);
  if (compilations)
    *compilations = cache->compilations;
  if (held)
    *held = cache->models.size();
}

} // namespace cgc::rt
