//===- RuntimeTest.cpp - Loading, running, replaying, bad input -----------===//

#include <gtest/gtest.h>

#include "TestModel.h"

#include "cgc/runtime.hpp"

#include <atomic>
#include <cstring>
#include <fstream>
#include <thread>

namespace cgc::test {
namespace {

/// The status's code and message; frees it.
struct Status {
  cgc_status_code_t code;
  std::string message;
};
Status take(cgc_status_t status) {
  Status s{cgc_status_code(status), cgc_status_message(status)};
  cgc_status_free(status);
  return s;
}

std::vector<float> inputValues(float scale) {
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = scale * float(i % 5) - 1.0f;
  return x;
}

class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override { path = writeTemp(buildReluAddModel(), "relu-add.cgc"); }
  void TearDown() override { std::remove(path.c_str()); }
  std::string path;
};

TEST_F(RuntimeTest, LoadsAndRuns) {
  Device device;
  uint32_t progressCalls = 0;
  cgc_model_options_t options = {};
  options.progress = [](void *user, uint32_t done, uint32_t total, const char *name) {
    ++*static_cast<uint32_t *>(user);
    EXPECT_LE(done, total);
    EXPECT_NE(std::string(name).find("partition"), std::string::npos);
  };
  options.progress_user_data = &progressCalls;
  Model model(device, path, &options);
  EXPECT_EQ(progressCalls, 2u);
  ASSERT_EQ(model.inputCount(), 1u);
  ASSERT_EQ(model.outputCount(), 1u);
  TensorInfo in = model.input(0);
  EXPECT_EQ(in.name, "x");
  EXPECT_EQ(in.dtype, CGC_DTYPE_FLOAT32);
  EXPECT_EQ(in.shape, kShape);
  EXPECT_EQ(in.bytes, kBytes);
  EXPECT_EQ(model.findOutput("y"), 0u);
  cgc_model_stats_t stats = model.stats();
  EXPECT_EQ(stats.kernel_programs, 2u);
  EXPECT_EQ(stats.mlir_programs, 0u);
  EXPECT_EQ(stats.dispatches, 2u);
  EXPECT_EQ(stats.barriers, 1u);
  EXPECT_EQ(stats.scratch_bytes, kBytes);
  EXPECT_TRUE(stats.constants_in_place) << "the constants were copied";
  EXPECT_NE(stats.constants_address, 0u);

  Context context(model);
  std::vector<float> x = inputValues(1.5f), y(16, -7.0f);
  context.setInput(0, x.data(), kBytes);
  context.run();
  context.getOutput(0, y.data(), kBytes);
  std::vector<float> want = expected(x);
  for (int i = 0; i < 16; ++i)
    EXPECT_FLOAT_EQ(y[i], want[i]) << "element " << i;
  cgc_context_stats_t cs = context.stats();
  EXPECT_EQ(cs.runs, 1u);
  EXPECT_EQ(cs.recordings, 1u);
  EXPECT_EQ(cs.bytes_copied, 2 * kBytes); // set + get
}

TEST_F(RuntimeTest, RecordsOnceAndReplays) {
  Device device;
  Model model(device, path);
  Context context(model);
  for (int run = 0; run < 5; ++run) {
    std::vector<float> x = inputValues(float(run) + 0.25f), y(16);
    context.setInput(0, x.data(), kBytes);
    context.run();
    context.getOutput(0, y.data(), kBytes);
    EXPECT_EQ(y, expected(x)) << "run " << run;
  }
  EXPECT_EQ(context.stats().runs, 5u);
  EXPECT_EQ(context.stats().recordings, 1u) << "the command list was recorded again";

  // Binding new memory records again, once; binding the same does not.
  Tensor in = Tensor::allocate(device, CGC_DTYPE_FLOAT32, kShape);
  Tensor out = Tensor::allocate(device, CGC_DTYPE_FLOAT32, kShape);
  std::vector<float> x = inputValues(-2.0f);
  std::memcpy(in.data(), x.data(), kBytes);
  context.bindInput(0, in);
  context.bindOutput(0, out);
  context.run();
  context.run();
  context.bindInput(0, in);
  context.run();
  EXPECT_EQ(context.stats().recordings, 2u);
  std::vector<float> y(out.data<float>(), out.data<float>() + 16);
  EXPECT_EQ(y, expected(x));
  // Unbinding returns to the context's own buffers: one more recording.
  context.unbindInput(0);
  context.unbindOutput(0);
  context.run();
  EXPECT_EQ(context.stats().recordings, 3u);
}

TEST_F(RuntimeTest, HostMemoryIsBoundInPlace) {
  Device device;
  Model model(device, path);
  Context context(model);
  std::vector<float> x = inputValues(3.0f), y(16, 0.0f);
  Tensor in = Tensor::wrap(device, CGC_DTYPE_FLOAT32, kShape, x.data(), kBytes);
  Tensor out = Tensor::wrap(device, CGC_DTYPE_FLOAT32, kShape, y.data(), kBytes);
  // GPU virtual address = host address on the CPU device.
  EXPECT_EQ(in.gpuAddress(), reinterpret_cast<uint64_t>(x.data()));
  EXPECT_EQ(out.gpuAddress(), reinterpret_cast<uint64_t>(y.data()));
  context.bindInput(0, in);
  context.bindOutput(0, out);
  context.run();
  EXPECT_EQ(y, expected(x));
  EXPECT_EQ(context.stats().bytes_copied, 0u);
  // Too small a host buffer is an error.
  cgc_tensor_desc_t desc = {CGC_DTYPE_FLOAT32, kShape.size(), kShape.data()};
  cgc_tensor_t *t = nullptr;
  Status s = take(cgc_tensor_wrap_host(device.get(), &desc, x.data(), kBytes - 4, &t));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE);
  EXPECT_NE(s.message.find("needs 64 bytes"), std::string::npos) << s.message;
}

TEST_F(RuntimeTest, ConcurrentContextsAndModels) {
  Device device;
  Model a(device, path);
  Model b(device, path); // a second model on the same device
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Model &model = t % 2 ? b : a;
      Context context(model); // each concurrent run has its own scratch
      for (int run = 0; run < 20; ++run) {
        std::vector<float> x = inputValues(float(t * 100 + run) * 0.01f), y(16);
        context.setInput(0, x.data(), kBytes);
        context.submit();
        context.wait();
        context.getOutput(0, y.data(), kBytes);
        if (y != expected(x))
          ++failures;
      }
    });
  for (auto &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(RuntimeTest, SeveralRunsInFlightOnOneStream) {
  Device device;
  Model model(device, path);
  Stream stream(device);
  std::vector<std::unique_ptr<Context>> contexts;
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < 3; ++i) {
    contexts.push_back(std::make_unique<Context>(model, &stream));
    inputs.push_back(inputValues(float(i) + 0.5f));
    contexts.back()->setInput(0, inputs.back().data(), kBytes);
  }
  for (auto &c : contexts)
    c->submit(); // all three queued before any wait
  stream.synchronize();
  for (int i = 0; i < 3; ++i) {
    std::vector<float> y(16);
    contexts[i]->getOutput(0, y.data(), kBytes);
    EXPECT_EQ(y, expected(inputs[i])) << "context " << i;
  }
}

TEST_F(RuntimeTest, WrongInputsAreErrors) {
  Device device;
  Model model(device, path);
  Context context(model);
  cgc_context_t *c = context.get();

  std::vector<int64_t> wrongShape = {2, 4};
  cgc_tensor_desc_t desc = {CGC_DTYPE_FLOAT32, wrongShape.size(), wrongShape.data()};
  cgc_tensor_t *t = nullptr;
  ASSERT_EQ(cgc_tensor_allocate(device.get(), &desc, &t), nullptr);
  Status s = take(cgc_context_bind_input(c, 0, t));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("input 0 'x': expected shape float32[2,8], got float32[2,4]"),
            std::string::npos)
      << s.message;
  cgc_tensor_release(t);

  desc = {CGC_DTYPE_INT32, kShape.size(), kShape.data()};
  ASSERT_EQ(cgc_tensor_allocate(device.get(), &desc, &t), nullptr);
  s = take(cgc_context_bind_output(c, 0, t));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("output 0 'y': expected dtype float32[2,8], got int32[2,8]"),
            std::string::npos)
      << s.message;
  s = take(cgc_context_bind_input(c, 3, t));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE);
  EXPECT_NE(s.message.find("input index 3 is out of range: the model has 1"), std::string::npos)
      << s.message;
  cgc_tensor_release(t);

  std::vector<float> x(15);
  s = take(cgc_context_set_input_data(c, 0, x.data(), x.size() * 4));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("float32[2,8] = 64 bytes; got 60 bytes"), std::string::npos)
      << s.message;
  size_t index = 0;
  s = take(cgc_model_find_input(model.get(), "nope", &index));
  EXPECT_EQ(s.code, CGC_STATUS_NOT_FOUND);
  EXPECT_NE(s.message.find("no input named 'nope' (it has 'x')"), std::string::npos) << s.message;
  s = take(cgc_context_run(nullptr));
  EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT);
  cgc_tensor_info_t info;
  s = take(cgc_model_output_info(model.get(), 1, &info));
  EXPECT_EQ(s.code, CGC_STATUS_OUT_OF_RANGE);
  // The context still runs.
  EXPECT_NO_THROW(context.run());
}

Status loadStatus(cgc_device_t *device, const std::string &file) {
  cgc_model_t *model = nullptr;
  Status s = take(cgc_model_load_file(device, file.c_str(), nullptr, &model));
  EXPECT_EQ(model, nullptr);
  cgc_model_release(model);
  return s;
}

TEST_F(RuntimeTest, BadFilesAreErrors) {
  Device device;
  std::vector<uint8_t> good = buildReluAddModel();

  Status s = loadStatus(device.get(), path + ".missing");
  EXPECT_EQ(s.code, CGC_STATUS_NOT_FOUND) << s.message;
  EXPECT_NE(s.message.find(".missing"), std::string::npos) << s.message;

  // Truncated anywhere: never a crash, always DATA_LOSS.
  for (size_t size : {size_t(1), size_t(20), size_t(40), good.size() / 2, good.size() - 1}) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + long(size));
    std::string file = writeTemp(cut, "truncated.cgc");
    s = loadStatus(device.get(), file);
    EXPECT_EQ(s.code, CGC_STATUS_DATA_LOSS) << size << ": " << s.message;
    EXPECT_NE(s.message.find(file), std::string::npos) << s.message;
    std::remove(file.c_str());
  }
  // A flipped byte: the digest catches it.
  std::vector<uint8_t> flipped = good;
  flipped[flipped.size() / 2] ^= 0x40;
  std::string file = writeTemp(flipped, "flipped.cgc");
  s = loadStatus(device.get(), file);
  EXPECT_EQ(s.code, CGC_STATUS_DATA_LOSS) << s.message;
  EXPECT_NE(s.message.find("digest"), std::string::npos) << s.message;
  std::remove(file.c_str());

  // A newer major IR version.
  ModelOptions newer;
  newer.irVersion = "2.0.0";
  file = writeTemp(buildReluAddModel(newer), "newer-ir.cgc");
  s = loadStatus(device.get(), file);
  EXPECT_EQ(s.code, CGC_STATUS_INCOMPATIBLE) << s.message;
  EXPECT_NE(s.message.find("2.0.0"), std::string::npos) << s.message;
  std::remove(file.c_str());
  // A newer minor version loads.
  newer.irVersion = "1.7.0";
  file = writeTemp(buildReluAddModel(newer), "newer-minor.cgc");
  cgc_model_t *model = nullptr;
  EXPECT_EQ(cgc_model_load_file(device.get(), file.c_str(), nullptr, &model), nullptr);
  cgc_model_release(model);
  std::remove(file.c_str());

  // A container of a newer major version (header bytes 20..21), digest fixed.
  std::vector<uint8_t> major = good;
  major[20] = 2;
  md5(major.data() + 20, major.size() - 20, major.data() + 4);
  file = writeTemp(major, "newer-container.cgc");
  s = loadStatus(device.get(), file);
  EXPECT_EQ(s.code, CGC_STATUS_INCOMPATIBLE) << s.message;
  std::remove(file.c_str());

  // Not a container at all.
  file = writeTemp(std::vector<uint8_t>(100, 'x'), "garbage.cgc");
  s = loadStatus(device.get(), file);
  EXPECT_EQ(s.code, CGC_STATUS_DATA_LOSS) << s.message;
  std::remove(file.c_str());

  // From memory too.
  s = take(cgc_model_load_memory(device.get(), good.data(), 30, nullptr, &model));
  EXPECT_EQ(s.code, CGC_STATUS_DATA_LOSS) << s.message;
  EXPECT_EQ(cgc_model_load_memory(device.get(), good.data(), good.size(), nullptr, &model),
            nullptr);
  cgc_model_stats_t stats;
  cgc_model_stats(model, &stats);
  EXPECT_TRUE(stats.constants_in_place);
  cgc_model_release(model);
}

TEST_F(RuntimeTest, ReleaseInAnyOrder) {
  cgc_device_t *device = nullptr;
  ASSERT_EQ(cgc_device_create(nullptr, &device), nullptr);
  cgc_model_t *model = nullptr;
  ASSERT_EQ(cgc_model_load_file(device, path.c_str(), nullptr, &model), nullptr);
  cgc_context_t *context = nullptr;
  ASSERT_EQ(cgc_context_create(model, nullptr, &context), nullptr);
  cgc_device_release(device); // the model and context keep it alive
  cgc_model_release(model);
  std::vector<float> x = inputValues(1.0f), y(16);
  ASSERT_EQ(cgc_context_set_input_data(context, 0, x.data(), kBytes), nullptr);
  ASSERT_EQ(cgc_context_submit(context), nullptr);
  cgc_context_release(context); // waits for the run
  cgc_context_release(nullptr);
  cgc_status_free(nullptr);
  EXPECT_STREQ(cgc_status_message(nullptr), "");
  EXPECT_STREQ(cgc_status_code_name(CGC_STATUS_DATA_LOSS), "DATA_LOSS");
}

TEST_F(RuntimeTest, DebugLayerDevice) {
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.debug_layer = true;
  options.compile_threads = 1;
  options.device_threads = 2;
  Device device(options);
  Model model(device, path);
  Context context(model);
  std::vector<float> x = inputValues(0.75f), y(16);
  context.setInput(0, x.data(), kBytes);
  context.run();
  context.getOutput(0, y.data(), kBytes);
  EXPECT_EQ(y, expected(x));
}

TEST(RuntimeDebugLayer, IntermediatesAndHostMemoryPassItsChecks) {
  // Under the debug layer every binding must be a buffer with unordered
  // access and every barrier must cover a whole buffer: the runtime places a
  // buffer over each barriered scratch range (here past the first 64 KiB)
  // and wraps host memory in UAV buffers.
  std::string offsetPath = writeTemp(buildReluAddModel({"1.0.0", (64 << 10) + 128}),
                                     "relu-add-offset.cgc");
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.debug_layer = true;
  Device device(options);
  Model model(device, offsetPath);
  Context context(model);
  std::vector<float> x = inputValues(2.5f), y(16, 0.0f);
  Tensor in = Tensor::wrap(device, CGC_DTYPE_FLOAT32, kShape, x.data(), kBytes);
  Tensor out = Tensor::wrap(device, CGC_DTYPE_FLOAT32, kShape, y.data(), kBytes);
  context.bindInput(0, in);
  context.bindOutput(0, out);
  context.run();
  EXPECT_EQ(y, expected(x));
  std::remove(offsetPath.c_str());
}

TEST(RuntimeMlirProgram, SetProgramAndDispatchGraphOnTheTestDriver) {
  // THE TEST-DOUBLE DRIVER (test/unit/d3d12/test_driver.cpp): an MLIR
  // program copies bind point 0 into bind point 1. What is tested is the
  // runtime's MLIR-program path: CreateStateObject, GetProgramIdentifier,
  // SetProgram + DispatchGraph recorded once and replayed, under the debug
  // layer (which checks every binding against the bind points).
  std::string path = writeTemp(buildMlirCopyModel(), "mlir-copy.cgc");
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.driver = CGC_TEST_DRIVER_PATH;
  options.debug_layer = true;
  Device device(options);
  Model model(device, path);
  EXPECT_EQ(model.stats().mlir_programs, 1u);
  EXPECT_EQ(model.stats().kernel_programs, 0u);
  Context context(model);
  for (int run = 0; run < 3; ++run) {
    std::vector<float> x(16), y(16);
    for (int i = 0; i < 16; ++i)
      x[i] = float(run * 16 + i);
    context.setInput(0, x.data(), kBytes);
    context.run();
    context.getOutput(0, y.data(), kBytes);
    EXPECT_EQ(y, x) << "run " << run;
  }
  EXPECT_EQ(context.stats().recordings, 1u);
  std::remove(path.c_str());
}

TEST(RuntimeMlirProgram, DriverRefusalNamesTheProgram) {
  // The CPU driver compiles MLIR programs only with its JIT; whichever
  // way it answers, loading either works or fails naming the program.
  std::string path = writeTemp(buildMlirCopyModel(), "mlir-refused.cgc");
  Device device;
  cgc_model_t *model = nullptr;
  Status s = take(cgc_model_load_file(device.get(), path.c_str(), nullptr, &model));
  if (s.code != CGC_STATUS_OK) {
    EXPECT_TRUE(s.code == CGC_STATUS_INTERNAL || s.code == CGC_STATUS_UNIMPLEMENTED) << s.message;
    EXPECT_NE(s.message.find("program 0 'partition0' (target test): CreateStateObject failed"),
              std::string::npos)
        << s.message;
    EXPECT_EQ(model, nullptr);
  }
  cgc_model_release(model);
  std::remove(path.c_str());
}

TEST(RuntimeDevice, UnknownDriverIsAnError) {
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.driver = "no-such-driver";
  cgc_device_t *device = nullptr;
  Status s = take(cgc_device_create(&options, &device));
  EXPECT_EQ(s.code, CGC_STATUS_NOT_FOUND) << s.message;
  EXPECT_NE(s.message.find("no-such-driver"), std::string::npos) << s.message;
  EXPECT_EQ(device, nullptr);
}

TEST(RuntimeDevice, ThreadCountsAreBounded) {
  for (bool compile : {false, true}) {
    cgc_device_options_t options;
    cgc_device_options_init(&options);
    (compile ? options.compile_threads : options.device_threads) = 100000000;
    cgc_device_t *device = nullptr;
    Status s = take(cgc_device_create(&options, &device));
    EXPECT_EQ(s.code, CGC_STATUS_INVALID_ARGUMENT) << s.message;
    EXPECT_NE(s.message.find(std::string(compile ? "compile_threads" : "device_threads") +
                             " is 100000000; at most 1024 threads are allowed"),
              std::string::npos)
        << s.message;
    EXPECT_EQ(device, nullptr);
  }
  cgc_device_options_t options;
  cgc_device_options_init(&options);
  options.device_threads = 1024;
  options.compile_threads = 1024;
  cgc_device_t *device = nullptr;
  Status s = take(cgc_device_create(&options, &device));
  EXPECT_EQ(s.code, CGC_STATUS_OK) << s.message;
  cgc_device_release(device);
}

} // namespace
} // namespace cgc::test
