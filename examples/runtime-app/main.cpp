//===- main.cpp - Run a compiled model with the installed cgc runtime ------===//
//
//   cgc-runtime-app MODEL.cgc [RUNS]
//
// Loads the model (its partitions compile in parallel, its constants are
// mapped from the file), fills every input with a fixed pattern, runs it
// RUNS times (the command list is recorded once and replayed) and prints
// each output's checksum and the timings. Inputs live in application memory
// bound in place, so no input or output byte is copied by the runtime.
//
//===----------------------------------------------------------------------===//

#include <cgc/runtime.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.cgc [RUNS]\n", argv[0]);
    return 2;
  }
  int runs = argc > 2 ? std::atoi(argv[2]) : 3;
  try {
    cgc::Device device;
    auto start = std::chrono::steady_clock::now();
    cgc::Model model(device, argv[1]);
    double loadMs = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start).count();
    cgc::Context context(model);
    std::printf("cgc runtime %s: %s loaded in %.1f ms, %zu input(s), %zu output(s)\n",
                cgc_runtime_version(), argv[1], loadMs, model.inputCount(), model.outputCount());

    // Application-owned memory, bound in place.
    std::vector<std::vector<uint8_t>> inputs, outputs;
    std::vector<cgc::Tensor> tensors;
    for (size_t i = 0; i < model.inputCount(); ++i) {
      cgc::TensorInfo info = model.input(i);
      inputs.emplace_back(info.bytes);
      for (size_t b = 0; b < info.bytes; ++b)
        inputs.back()[b] = uint8_t((b * 7 + i) % 64); // a fixed pattern
      if (info.dtype == CGC_DTYPE_BOOL)
        for (auto &v : inputs.back())
          v &= 1;
      tensors.push_back(cgc::Tensor::wrap(device, info.dtype, info.shape, inputs.back().data(),
                                          inputs.back().size()));
      context.bindInput(i, tensors.back());
      std::printf("input %zu '%s': %s, %" PRIu64 " bytes\n", i, info.name.c_str(),
                  cgc_dtype_name(info.dtype), info.bytes);
    }
    for (size_t i = 0; i < model.outputCount(); ++i) {
      cgc::TensorInfo info = model.output(i);
      outputs.emplace_back(info.bytes);
      tensors.push_back(cgc::Tensor::wrap(device, info.dtype, info.shape, outputs.back().data(),
                                          outputs.back().size()));
      context.bindOutput(i, tensors.back());
    }

    double best = 1e30;
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      context.run();
      best = std::min(best, std::chrono::duration<double, std::milli>(
                                std::chrono::steady_clock::now() - t0).count());
    }
    for (size_t i = 0; i < model.outputCount(); ++i) {
      uint64_t checksum = 1469598103934665603ull; // FNV-1a
      for (uint8_t b : outputs[i])
        checksum = (checksum ^ b) * 1099511628211ull;
      std::printf("output %zu '%s': %zu bytes, checksum %016" PRIx64 "\n", i,
                  model.output(i).name.c_str(), outputs[i].size(), checksum);
    }
    cgc_context_stats_t stats = context.stats();
    std::printf("%" PRIu64 " runs, %" PRIu64 " recording(s), %" PRIu64
                " bytes copied, best run %.3f ms\n",
                stats.runs, stats.recordings, stats.bytes_copied, best);
  } catch (const cgc::Error &e) {
    std::fprintf(stderr, "error: %s (%s)\n", e.what(), cgc_status_code_name(e.code()));
    return 1;
  }
  return 0;
}
