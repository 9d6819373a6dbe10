//===- CompileTest.cpp - Compiling ONNX models for a device ---------------===//
//
// cgc_model_compile_onnx: the runtime loads its compiler module and compiles
// an ONNX model held in memory for the caller's device (its driver's
// declared patterns through MLIR_EXCHANGE, the rest on the fallback target).
// Models come from ONNX's node tests (libonnx-testdata).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include "cgc/runtime.h"
#include "cgc/runtime.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

const char kNodeTests[] = "/usr/share/libonnx-testdata/data/node";

struct Status {
  cgc_status_code_t code;
  std::string message;
};
Status take(cgc_status_t status) {
  Status s{cgc_status_code(status), cgc_status_message(status)};
  cgc_status_free(status);
  return s;
}

std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

cgc_device_t *createDevice(const char *driver) {
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.driver = driver;
  cgc_device_t *device = nullptr;
  cgc_status_t status = cgc_device_create(&options, &device);
  EXPECT_EQ(status, nullptr) << cgc_status_message(status);
  return device;
}

/// Protocol buffer encoding, enough to write a small ONNX model by hand.
std::string varint(uint64_t v) {
  std::string out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    out.push_back(char(byte | (v ? 0x80 : 0)));
  } while (v);
  return out;
}
std::string field(int number, uint64_t value) { return varint(uint64_t(number) << 3) + varint(value); }
std::string field(int number, const std::string &bytes) {
  return varint(uint64_t(number) << 3 | 2) + varint(bytes.size()) + bytes;
}

/// y = relu(x) * 2 with x, y float32[n, 4], n symbolic (binary ONNX).
std::string symbolicModel() {
  auto tensorInfo = [](const std::string &name) {
    std::string shape = field(1, field(2, std::string("n"))) + field(1, field(1, uint64_t(4)));
    std::string tensor = field(1, uint64_t(1)) + field(2, shape);
    return field(1, name) + field(2, field(1, tensor));
  };
  std::string relu = field(1, std::string("x")) + field(2, std::string("r")) +
                     field(4, std::string("Relu"));
  std::string add = field(1, std::string("r")) + field(1, std::string("r")) +
                    field(2, std::string("y")) + field(4, std::string("Add"));
  std::string graph = field(1, relu) + field(1, add) + field(2, std::string("g")) +
                      field(11, tensorInfo("x")) + field(12, tensorInfo("y"));
  std::string opset = field(1, std::string("")) + field(2, uint64_t(17));
  return field(1, uint64_t(8)) + field(8, opset) + field(7, graph);
}

/// Collects the compiler's messages.
void collect(void *user, const char *text) {
  static_cast<std::string *>(user)->append(text).append("\n");
}

class CompileTest : public ::testing::Test {
protected:
  void SetUp() override {
    model = readFile(std::string(kNodeTests) + "/test_gemm_default_matrix_bias/model.onnx");
    if (model.empty())
      GTEST_SKIP() << "libonnx-testdata is not installed";
  }
  std::vector<char> model;
};

TEST_F(CompileTest, CompilesBytesForTheDeviceAndRuns) {
  cgc_device_t *device = createDevice(nullptr);
  ASSERT_NE(device, nullptr);
  std::string messages;
  cgc_compile_options_t options;
  cgc_compile_options_init(&options);
  options.message = collect;
  options.message_user_data = &messages;
  cgc_blob_t *compiled = nullptr;
  cgc_status_t status = cgc_model_compile_onnx(device, model.data(), model.size(),
                                               "gemm.onnx", &options, &compiled);
  ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  // The CPU driver's declaration came through the device; it declares
  // no lone product (docs/cpu-target.md), so the fallback target
  // claims it.
  EXPECT_NE(messages.find("compiling for the default device (MLIR programs tier 2.0): "
                          "target 'cpu'"),
            std::string::npos)
      << messages;
  EXPECT_NE(messages.find("targets claimed:\n  fallback: 1 subgraph, 1 layer"),
            std::string::npos)
      << messages;
  ASSERT_GT(cgc_blob_size(compiled), 0u);

  cgc_model_t *loaded = nullptr;
  status = cgc_model_load_memory(device, cgc_blob_data(compiled), cgc_blob_size(compiled),
                                 nullptr, &loaded);
  cgc_blob_release(compiled);
  ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  // y = a[MxK] . b[KxN] + c[MxN], checked against a product computed here.
  ASSERT_EQ(cgc_model_input_count(loaded), 3u);
  cgc_tensor_info_t info[3];
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(cgc_model_input_info(loaded, i, &info[i]), nullptr);
    ASSERT_EQ(info[i].rank, 2u);
  }
  const int64_t M = info[0].shape[0], K = info[0].shape[1], N = info[1].shape[1];
  std::vector<std::vector<float>> inputs(3);
  for (size_t i = 0; i < 3; ++i)
    for (uint64_t j = 0; j < info[i].bytes / sizeof(float); ++j)
      inputs[i].push_back(std::sin(float(7 * i + j)) * 2.0f);
  cgc_context_t *context = nullptr;
  ASSERT_EQ(cgc_context_create(loaded, nullptr, &context), nullptr);
  for (size_t i = 0; i < 3; ++i) {
    status = cgc_context_set_input_data(context, i, inputs[i].data(),
                                        inputs[i].size() * sizeof(float));
    ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  }
  status = cgc_context_run(context);
  ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  std::vector<float> y(size_t(M * N));
  ASSERT_EQ(cgc_context_get_output_data(context, 0, y.data(), y.size() * sizeof(float)), nullptr);
  double err = 0, norm = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double expected = inputs[2][m * N + n];
      for (int64_t k = 0; k < K; ++k)
        expected += double(inputs[0][m * K + k]) * inputs[1][k * N + n];
      err += (y[m * N + n] - expected) * (y[m * N + n] - expected);
      norm += expected * expected;
    }
  EXPECT_LT(std::sqrt(err / norm), 1e-6);
  cgc_context_release(context);
  cgc_model_release(loaded);
  cgc_device_release(device);
}

TEST_F(CompileTest, NoDevicePatternsMeansTheFallbackTargetAlone) {
  cgc_device_t *device = createDevice(nullptr);
  ASSERT_NE(device, nullptr);
  std::string messages;
  cgc_compile_options_t options;
  cgc_compile_options_init(&options);
  options.no_device_patterns = true;
  options.message = collect;
  options.message_user_data = &messages;
  cgc_blob_t *compiled = nullptr;
  ASSERT_EQ(cgc_model_compile_onnx(device, model.data(), model.size(), nullptr, &options,
                                   &compiled),
            nullptr);
  EXPECT_EQ(messages.find("compiling for"), std::string::npos) << messages;
  EXPECT_NE(messages.find("fallback: 1 subgraph, 1 layer"), std::string::npos) << messages;
  cgc_blob_release(compiled);
  cgc_device_release(device);
}

TEST_F(CompileTest, ADeviceWithoutTheSubgraphInterfacesGetsTheFallbackTarget) {
  // The test double driver supports the declaration and partition
  // interfaces but not specialization: the compiler cannot use its patterns
  // and says why.
  cgc_device_t *device = createDevice(CGC_TEST_DRIVER_PATH);
  ASSERT_NE(device, nullptr);
  std::string messages;
  cgc_compile_options_t options;
  cgc_compile_options_init(&options);
  options.message = collect;
  options.message_user_data = &messages;
  cgc_blob_t *compiled = nullptr;
  cgc_status_t status = cgc_model_compile_onnx(device, model.data(), model.size(), nullptr,
                                               &options, &compiled);
  ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  EXPECT_NE(messages.find("the fallback target only, because it does not support the MLIR "
                          "interfaces CGC_SUBGRAPH_SPECIALIZATION_REQUEST"),
            std::string::npos)
      << messages;
  cgc_blob_release(compiled);
  cgc_device_release(device);
}

TEST_F(CompileTest, BadInputIsAnError) {
  cgc_device_t *device = createDevice(nullptr);
  ASSERT_NE(device, nullptr);
  cgc_blob_t *compiled = nullptr;
  Status s = take(cgc_model_compile_onnx(device, nullptr, 10, "x.onnx", nullptr, &compiled));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("no model bytes"), std::string::npos) << s.message;

  std::vector<char> truncated(model.begin(), model.begin() + model.size() / 2);
  s = take(cgc_model_compile_onnx(device, truncated.data(), truncated.size(), "half.onnx",
                                  nullptr, &compiled));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("half.onnx"), std::string::npos) << s.message;
  EXPECT_NE(s.message.find("not a valid ONNX model"), std::string::npos) << s.message;
  EXPECT_EQ(compiled, nullptr);

  const char *bad[] = {"x=abc"};
  cgc_compile_options_t options;
  cgc_compile_options_init(&options);
  options.input_shapes = bad;
  options.input_shape_count = 1;
  s = take(cgc_model_compile_onnx(device, model.data(), model.size(), nullptr, &options,
                                  &compiled));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("--input-shape x=abc"), std::string::npos) << s.message;

  options.input_shapes = nullptr;
  s = take(cgc_model_compile_onnx(device, model.data(), model.size(), nullptr, &options,
                                  &compiled));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("input_shapes is null"), std::string::npos) << s.message;

  cgc_compile_options_init(&options);
  for (int64_t bound : {int64_t(-1), int64_t(4097)}) {
    options.max_loop_iterations = bound;
    s = take(cgc_model_compile_onnx(device, model.data(), model.size(), nullptr, &options,
                                    &compiled));
    EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(s.message.find("max_loop_iterations must be in [1, 4096] (0: the default), not " +
                             std::to_string(bound)),
              std::string::npos)
        << s.message;
  }
  cgc_device_release(device);
}

TEST_F(CompileTest, TheCppApiCompilesAndLoads) {
  cgc::Device device;
  cgc::Compiled compiled = cgc::compileOnnx(device.get(), model.data(), model.size());
  EXPECT_NE(compiled.messages.find("targets claimed:"), std::string::npos) << compiled.messages;
  cgc::Model loaded(device, compiled.bytes.data(), compiled.bytes.size());
  EXPECT_EQ(loaded.inputCount(), 3u);
  cgc::CompileOptions options;
  options.inputShapes = {"a=oops"};
  try {
    cgc::compileOnnx(device.get(), model.data(), model.size(), "gemm.onnx", options);
    ADD_FAILURE() << "a bad --input-shape compiled";
  } catch (const cgc::Error &e) {
    EXPECT_NE(std::string(e.what()).find("--input-shape a=oops"), std::string::npos) << e.what();
  }
}

TEST(ShapeCacheTest, CompilesOncePerShapeAndKeepsTheLastModels) {
  const std::string onnx = symbolicModel();
  cgc_device_t *device = createDevice(nullptr);
  ASSERT_NE(device, nullptr);
  cgc_shape_cache_t *cache = nullptr;
  cgc_status_t status = cgc_shape_cache_create(device, onnx.data(), onnx.size(), "relu.onnx",
                                               nullptr, nullptr, 2, &cache);
  ASSERT_EQ(status, nullptr) << cgc_status_message(status);
  // Runs the model for [rows, 4] and checks y = 2 relu(x).
  auto runRows = [&](int64_t rows) {
    std::string shape = "x=" + std::to_string(rows) + "x4";
    const char *shapes[] = {shape.c_str()};
    cgc_model_t *model = nullptr;
    cgc_status_t s = cgc_shape_cache_model(cache, shapes, 1, &model);
    EXPECT_EQ(s, nullptr) << cgc_status_message(s);
    if (!model)
      return model;
    cgc_tensor_info_t info;
    EXPECT_EQ(cgc_model_output_info(model, 0, &info), nullptr);
    EXPECT_EQ(info.shape[0], rows);
    std::vector<float> x(size_t(rows * 4)), y(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(float(i) + 0.5f);
    cgc_context_t *context = nullptr;
    EXPECT_EQ(cgc_context_create(model, nullptr, &context), nullptr);
    EXPECT_EQ(cgc_context_set_input_data(context, 0, x.data(), x.size() * 4), nullptr);
    EXPECT_EQ(cgc_context_run(context), nullptr);
    EXPECT_EQ(cgc_context_get_output_data(context, 0, y.data(), y.size() * 4), nullptr);
    for (size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(y[i], 2 * std::max(x[i], 0.0f)) << "row count " << rows << ", element " << i;
    cgc_context_release(context);
    return model;
  };
  size_t compilations = 0, held = 0;
  cgc_model_t *three = runRows(3);
  cgc_model_t *again = runRows(3);
  EXPECT_EQ(three, again); // the kept model
  cgc_shape_cache_stats(cache, &compilations, &held);
  EXPECT_EQ(compilations, 1u);
  cgc_model_t *five = runRows(5);
  cgc_model_t *seven = runRows(7); // evicts 3 (capacity 2)
  cgc_shape_cache_stats(cache, &compilations, &held);
  EXPECT_EQ(compilations, 3u);
  EXPECT_EQ(held, 2u);
  cgc_model_t *threeAgain = runRows(3); // compiled again
  cgc_shape_cache_stats(cache, &compilations, &held);
  EXPECT_EQ(compilations, 4u);
  // Bad requests are errors naming the entry.
  const char *bad[] = {"x=3xfour"};
  cgc_model_t *none = nullptr;
  Status s = take(cgc_shape_cache_model(cache, bad, 1, &none));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("'x=3xfour' is not NAME=D0xD1x..."), std::string::npos) << s.message;
  const char *twice[] = {"x=3x4", "x=5x4"};
  s = take(cgc_shape_cache_model(cache, twice, 2, &none));
  EXPECT_NE(s.message.find("input 'x' is given two shapes"), std::string::npos) << s.message;
  const char *wrong[] = {"x=3x5"};
  s = take(cgc_shape_cache_model(cache, wrong, 1, &none));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT) << s.message;
  EXPECT_EQ(none, nullptr);
  // The caller's references outlive the cache.
  cgc_shape_cache_release(cache);
  for (cgc_model_t *model : {three, again, five, threeAgain}) {
    cgc_tensor_info_t info;
    EXPECT_EQ(cgc_model_input_info(model, 0, &info), nullptr);
    cgc_model_release(model);
  }
  cgc_model_release(seven);
  s = take(cgc_shape_cache_create(device, onnx.data(), 0, "x.onnx", nullptr, nullptr, 0, &cache));
  EXPECT_NE(s.message.find("no ONNX model (0 bytes)"), std::string::npos) << s.message;
  cgc_device_release(device);
}

TEST(ShapeCacheTest, TheCppApiServesModelsPerShape) {
  const std::string onnx = symbolicModel();
  cgc::Device device;
  cgc::ShapeCache cache(device, onnx.data(), onnx.size(), "relu.onnx");
  cgc::Model two = cache.model({"x=2x4"});
  cgc::Model six = cache.model({"x=6x4"});
  EXPECT_EQ(two.input(0).shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(six.output(0).shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(cache.stats(), (std::pair<size_t, size_t>{2, 2}));
}

} // namespace
