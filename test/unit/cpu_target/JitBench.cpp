//===- JitBench.cpp - How long does the CPU JIT take on a model? ----===//
//
// Reads a compiled model (cgc-compile model.onnx --target=cpu -o
// model.cgc), and for every Partition IR it holds ('MLIR' parts tagged
// CGC_SUBGRAPH_PARTITION) times the driver's JIT (compilePartition) and then
// the driver's kernel creation (CompiledProgram::create), first one partition
// after the other, then the JIT on `threads` threads as the runtime compiles
// partitions in parallel.
//
// It also reports the memory of a run: the model's scratch buffer (the
// plan's), the bind points the compiler marked internal (the JIT moves them
// into the driver's per-run memory, so the driver never touches their bytes
// in the scratch buffer), and the driver's per-run memory of every program
// (MLIR programs and the fallback's kernel programs), planned by lifetime,
// against its lower bound and the temporaries laid one after another.
//
//   ninja -C <build> cpu-jit-bench
//   <build>/bin/cpu-jit-bench model.cgc [threads]
//
//===----------------------------------------------------------------------===//

#include "jit.h"
#include "program.h"

#include "cgc/compiled_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {
double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpu-jit-bench model.cgc [threads]\n");
    return 1;
  }
  int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::ifstream file(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  cgc::ContainerReader reader;
  std::string error;
  if (!reader.open(bytes.data(), bytes.size(), error)) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.c_str());
    return 1;
  }
  std::vector<cgc::ByteView> partitions;
  for (const auto *part : reader.find(cgc::parts::kMLIR)) {
    cgc::Guid iface;
    cgc::ByteView bytecode;
    if (cgc::ContainerReader::splitMLIRPart(*part, iface, bytecode, error) &&
        iface == cgc::interfaces::kSubgraphPartition)
      partitions.push_back(bytecode);
  }
  const cgc::cpu::JitInterface *jit = cgc::cpu::getJitInterface();
  double jitTotal = 0, createTotal = 0;
  size_t kernels = 0, fused = 0;
  // Per-run memory: programs share the blocks (RunMemory), so a model whose
  // dispatches run one after another needs the largest program's.
  uint64_t perRunMax = 0, perRunSum = 0, boundMax = 0, unplannedSum = 0;
  size_t internalBindings = 0;
  uint64_t internalBytes = 0, untouchedBytes = 0;
  auto account = [&](const cgc::cpu::CompiledProgram &compiled) {
    const auto &m = compiled.memoryStats();
    perRunMax = std::max(perRunMax, m.perRunBytes);
    perRunSum += m.perRunBytes;
    boundMax = std::max(boundMax, m.lowerBound);
    unplannedSum += m.unplannedBytes;
    untouchedBytes += m.untouchedInternalBytes;
    for (const auto &b : compiled.program().bindings)
      if (b.internal) {
        ++internalBindings;
        internalBytes += b.bytes;
      }
  };
  auto kib = [](uint64_t bytes) { return double(bytes) / 1024; };
  for (size_t i = 0; i < partitions.size(); ++i) {
    cgc::KernelProgram program;
    auto start = std::chrono::steady_clock::now();
    if (!jit->compilePartition(partitions[i].data, partitions[i].size, program, error)) {
      std::fprintf(stderr, "partition %zu: %s\n", i, error.c_str());
      return 1;
    }
    double jitMs = msSince(start);
    size_t n = program.kernels.size();
    start = std::chrono::steady_clock::now();
    auto compiled = cgc::cpu::CompiledProgram::create(std::move(program), error);
    double createMs = msSince(start);
    if (!compiled) {
      std::fprintf(stderr, "partition %zu: %s\n", i, error.c_str());
      return 1;
    }
    const auto &m = compiled->memoryStats();
    std::printf("partition %2zu: %6zu bytes, %3zu kernels (%zu fused): JIT %7.2f ms, "
                "kernel creation %8.2f ms; per-run memory %.1f KiB (lower bound %.1f, "
                "without reuse %.1f), %zu internal bind points untouched (%.1f KiB)\n",
                i, partitions[i].size, n, compiled->fusedCount(), jitMs, createMs,
                kib(m.perRunBytes), kib(m.lowerBound), kib(m.unplannedBytes),
                m.untouchedInternalBindings, kib(m.untouchedInternalBytes));
    account(*compiled);
    jitTotal += jitMs;
    createTotal += createMs;
    kernels += n;
    fused += compiled->fusedCount();
  }
  std::printf("%zu partitions, %zu kernels (%zu fused): JIT %.1f ms, kernel creation %.1f ms "
              "(one after the other)\n",
              partitions.size(), kernels, fused, jitTotal, createTotal);

  // The fallback target's kernel programs (compute pipelines) and the plan.
  cgc::CompiledModel model;
  if (!model.open(bytes.data(), bytes.size(), error)) {
    std::fprintf(stderr, "%s: %s\n", argv[1], error.c_str());
    return 1;
  }
  const cgc::ExecutionPlan &plan = model.getPlan();
  size_t kernelPrograms = 0;
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    if (plan.programs[i].kind != cgc::PlanProgram::Kind::Kernel)
      continue;
    auto compiled = cgc::cpu::CompiledProgram::create(model.getKernelProgram(i), error);
    if (!compiled) {
      std::fprintf(stderr, "kernel program %zu: %s\n", i, error.c_str());
      return 1;
    }
    account(*compiled);
    ++kernelPrograms;
  }
  std::printf("memory: scratch buffer %.1f KiB (plan); %zu internal bind points, %.1f KiB of it, "
              "%.1f KiB never touched by the driver; per-run memory of %zu programs (%zu kernel "
              "programs): largest %.1f KiB (lower bound %.1f; the shared block when they run "
              "one after another), sum %.1f KiB (without reuse %.1f KiB)\n",
              kib(plan.scratchBytes), internalBindings, kib(internalBytes), kib(untouchedBytes),
              partitions.size() + kernelPrograms, kernelPrograms, kib(perRunMax), kib(boundMax),
              kib(perRunSum), kib(unplannedSum));

  std::atomic<size_t> next{0};
  std::atomic<bool> ok{true};
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < partitions.size();) {
        cgc::KernelProgram program;
        std::string e;
        if (!jit->compilePartition(partitions[i].data, partitions[i].size, program, e))
          ok = false;
      }
    });
  for (auto &t : pool)
    t.join();
  std::printf("JIT of all partitions on %d threads: %.1f ms%s\n", threads, msSince(start),
              ok ? "" : " (FAILED)");
  return ok ? 0 : 1;
}
