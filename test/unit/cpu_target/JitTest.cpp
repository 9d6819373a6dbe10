//===- JitTest.cpp - The CPU driver's JIT (compilePartition) --------===//
//
// compilePartition as the driver calls it: Partition IR bytecode in, kernel
// program out. Programs are then run with the driver's own executor
// (runtime/drivers/cpu/program.cpp) and compared with naive
// computations written here.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/InitAll.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "jit.h"
#include "program.h"

#include "cgc/IR/CGCDialect.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

using namespace mlir;

namespace cgc::test {
namespace {

const cpu::JitInterface &jit() { return *cpu::getJitInterface(); }

/// MLIR text -> bytecode, optionally claiming `version` for the cgc dialects.
std::string toBytecode(const std::string &text,
                       std::optional<IRVersion> version = std::nullopt) {
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  ParserConfig config(&context);
  OwningOpRef<Operation *> module = parseSourceString(text, config);
  EXPECT_TRUE(module) << text;
  if (!module)
    return "";
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  BytecodeWriterConfig writerConfig;
  if (version)
    for (const char *dialect : {"cgc", "cgc_op"})
      writerConfig.setDialectVersion(dialect,
                                     std::make_unique<IRVersion>(*version));
  EXPECT_TRUE(succeeded(writeBytecodeToFile(module.get(), os, writerConfig)));
  return bytes;
}

bool compile(const std::string &bytecode, KernelProgram &program,
             std::string &error) {
  return jit().compilePartition(bytecode.data(), bytecode.size(), program,
                                error);
}

KernelOperand binding(uint32_t index, std::vector<int64_t> shape,
                      uint64_t offset = 0) {
  KernelOperand o =
      test::f32(KernelOperand::Storage::Binding, index, std::move(shape));
  o.offset = offset;
  return o;
}

//===----------------------------------------------------------------------===//
// Naive references
//===----------------------------------------------------------------------===//

/// NCHW convolution, 3x3 kernel, padding 1, stride 1, with bias.
std::vector<float> conv3x3(const std::vector<float> &x, const std::vector<float> &w,
                           const std::vector<float> &b, int c, int h, int wd) {
  std::vector<float> out(size_t(c) * h * wd);
  for (int o = 0; o < c; ++o)
    for (int y = 0; y < h; ++y)
      for (int xx = 0; xx < wd; ++xx) {
        double acc = b[o];
        for (int i = 0; i < c; ++i)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              int yy = y + dy, xs = xx + dx;
              if (yy < 0 || yy >= h || xs < 0 || xs >= wd)
                continue;
              acc += double(x[(i * h + yy) * wd + xs]) *
                     w[((o * c + i) * 3 + dy + 1) * 3 + dx + 1];
            }
        out[(o * h + y) * wd + xx] = float(acc);
      }
  return out;
}

/// Runs `program` with the driver's executor on `buffers` (one per binding).
void run(const KernelProgram &program, std::vector<std::vector<float>> &buffers) {
  std::string error;
  auto compiled = cpu::CompiledProgram::create(program, error);
  ASSERT_TRUE(compiled) << error;
  std::vector<uint8_t *> bindings;
  for (auto &b : buffers)
    bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
  cpu::ThreadPool pool(2);
  compiled->run(bindings, pool);
}

//===----------------------------------------------------------------------===//
// The spec's partition
//===----------------------------------------------------------------------===//

TEST(CpuJit, SpecPartitionLowersToTwoFusableConvReluAdds) {
  std::string bytecode = toBytecode(readSourceFile("examples/spec/partition-ir.mlir"));
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(bytecode, program, error)) << error;

  // Bindings: the partition's seven bind points, in order, each as large as
  // its memref.
  ASSERT_EQ(program.bindings.size(), 7u);
  const uint64_t bytes[] = {64, 36, 4, 36, 4, 64, 64};
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(program.bindings[i].name, "bp" + std::to_string(i));
    EXPECT_EQ(program.bindings[i].bytes, bytes[i]) << i;
    // Weights and biases are constant memrefs; the rest are not.
    EXPECT_EQ(program.bindings[i].constant, i >= 1 && i <= 4) << i;
  }
  // conv(in, w1, b1) -> relu -> add(., in) -> scratch, then the same from
  // scratch with w2, b2 into output.
  ASSERT_EQ(program.kernels.size(), 6u);
  const char *ops[] = {"cgc_op.convolution", "cgc_op.relu", "cgc_op.add"};
  for (size_t k = 0; k < 6; ++k)
    EXPECT_EQ(program.kernels[k].op, ops[k % 3]) << k;
  const KernelDesc &conv1 = program.kernels[0], &add1 = program.kernels[2];
  const KernelDesc &conv2 = program.kernels[3], &add2 = program.kernels[5];
  EXPECT_EQ(*conv1.inputs[0], binding(0, {1, 1, 4, 4}));
  EXPECT_EQ(*conv1.inputs[1], binding(1, {1, 1, 3, 3}));
  EXPECT_EQ(*conv1.inputs[2], binding(2, {1}));
  EXPECT_EQ(*add1.inputs[1], binding(0, {1, 1, 4, 4}));
  EXPECT_EQ(add1.outputs[0], binding(6, {1, 1, 4, 4}));
  EXPECT_EQ(*conv2.inputs[0], binding(6, {1, 1, 4, 4}));
  EXPECT_EQ(*conv2.inputs[1], binding(3, {1, 1, 3, 3}));
  EXPECT_EQ(add2.outputs[0], binding(5, {1, 1, 4, 4}));
  EXPECT_EQ(conv1.getInts("start_padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv1.getInt("groups", 0), 1);

  // Each convolution is an anchor whose relu and add the driver fuses.
  auto candidates = cpu_target::findFusionCandidates(program);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].chain, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(candidates[1].chain, (std::vector<size_t>{4, 5}));
}

TEST(CpuJit, SpecPartitionRunsFused) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "this build's kernel library has no kernels";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(readSourceFile("examples/spec/partition-ir.mlir")),
                      program, error))
      << error;
  cpu_target::KernelCheck check = cpu_target::checkKernelProgram(program);
  ASSERT_TRUE(check.ok) << check.reason;
  EXPECT_EQ(check.fusedKernels, 4u);
  auto compiled = cpu::CompiledProgram::create(program, error);
  ASSERT_TRUE(compiled) << error;
  EXPECT_EQ(compiled->fusedCount(), 4u);

  std::vector<std::vector<float>> buffers = {
      randomFloats(16, 1), randomFloats(9, 2), {0.25f}, randomFloats(9, 3),
      {-0.5f},             std::vector<float>(16), std::vector<float>(16)};
  std::vector<std::vector<float>> inputs = buffers;
  run(program, buffers);
  auto convReluAdd = [](const std::vector<float> &x, const std::vector<float> &w,
                        const std::vector<float> &b) {
    std::vector<float> c = conv3x3(x, w, b, 1, 4, 4);
    for (size_t i = 0; i < c.size(); ++i)
      c[i] = std::max(c[i], 0.0f) + x[i];
    return c;
  };
  std::vector<float> expected = convReluAdd(
      convReluAdd(inputs[0], inputs[1], inputs[2]), inputs[3], inputs[4]);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(buffers[5][i], expected[i], 1e-4) << i;
}

TEST(CpuJit, ConstantBindPointsArePreparedOnce) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "this build's kernel library has no kernels";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(readSourceFile("examples/spec/partition-ir.mlir")),
                      program, error))
      << error;
  // The driver tells the kernels which inputs are weights: both fused
  // convolutions prepare theirs once instead of on every run.
  auto compiled = cpu::CompiledProgram::create(program, error);
  ASSERT_TRUE(compiled) << error;
  ASSERT_EQ(compiled->steps().size(), 2u);
  for (const auto &step : compiled->steps())
    EXPECT_NE(step.kernel->describe().find("weights prepared once"), std::string::npos)
        << step.kernel->describe();
  // Without the flag they are read afresh on every run.
  KernelProgram unmarked = program;
  for (auto &b : unmarked.bindings)
    b.constant = false;
  auto plain = cpu::CompiledProgram::create(unmarked, error);
  ASSERT_TRUE(plain) << error;
  for (const auto &step : plain->steps())
    EXPECT_EQ(step.kernel->describe().find("weights prepared once"), std::string::npos)
        << step.kernel->describe();

  // Prepared weights give the same results, run after run.
  std::vector<std::vector<float>> buffers = {
      randomFloats(16, 4), randomFloats(9, 5), {0.5f}, randomFloats(9, 6),
      {-0.25f},            std::vector<float>(16), std::vector<float>(16)};
  std::vector<std::vector<float>> again = buffers;
  auto runOn = [&](const cpu::CompiledProgram &p, std::vector<std::vector<float>> &bufs) {
    std::vector<uint8_t *> bindings;
    for (auto &b : bufs)
      bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
    cpu::ThreadPool pool(2);
    p.run(bindings, pool);
  };
  runOn(*compiled, buffers);
  runOn(*plain, again);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(buffers[5][i], again[5][i], 1e-5) << i;
  std::vector<float> first = buffers[5];
  runOn(*compiled, buffers);
  EXPECT_EQ(buffers[5], first);
}

//===----------------------------------------------------------------------===//
// A partition of several subgraphs, with views into scratch
//===----------------------------------------------------------------------===//

constexpr const char *kMultiSubgraph = R"mlir(
cgc.module {
  cgc.subgraph @convReluAdd attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @convReluAddFunctional(%x: !cgc.tensor<1x2x5x5x!cgc.float32>, %w: !cgc.tensor<constant 2x2x3x3x!cgc.float32>, %b: !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>, !cgc.tensor<constant 2x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      %2 = cgc_op.add(%x, %1) : (!cgc.tensor<1x2x5x5x!cgc.float32>, !cgc.tensor<1x2x5x5x!cgc.float32>) -> !cgc.tensor<1x2x5x5x!cgc.float32>
      cgc.return %2 : !cgc.tensor<1x2x5x5x!cgc.float32>
    }
  }
  cgc.subgraph @transposeMatmulAddGelu attributes {origin = "cpu", pattern = "transposedMatMulB"} {
    cgc.functional_definition private @transposeMatmulAddGeluFunctional(%a: !cgc.tensor<2x3x4x!cgc.float32>, %k: !cgc.tensor<2x5x4x!cgc.float32>, %bias: !cgc.tensor<constant 5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32> {
      %t = cgc_op.transpose(%k) {perm = [0, 2, 1]} : (!cgc.tensor<2x5x4x!cgc.float32>) -> !cgc.tensor<2x4x5x!cgc.float32>
      %m = cgc_op.matmul(%a, %t) : (!cgc.tensor<2x3x4x!cgc.float32>, !cgc.tensor<2x4x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      %s = cgc_op.add(%m, %bias) : (!cgc.tensor<2x3x5x!cgc.float32>, !cgc.tensor<constant 5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      %g = cgc_op.gelu(%s) : (!cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      cgc.return %g : !cgc.tensor<2x3x5x!cgc.float32>
    }
  }
  cgc.subgraph @softmax attributes {origin = "fallback", pattern = "layer"} {
    cgc.functional_definition private @softmaxFunctional(%y: !cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32> {
      %0 = cgc_op.softmax(%y) {axis = 2 : i64} : (!cgc.tensor<2x3x5x!cgc.float32>) -> !cgc.tensor<2x3x5x!cgc.float32>
      cgc.return %0 : !cgc.tensor<2x3x5x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<1x2x5x5x!cgc.float32>,
                   %w: !cgc.memref<constant 2x2x3x3x!cgc.float32>,
                   %b: !cgc.memref<constant 2x!cgc.float32>,
                   %a: !cgc.memref<2x3x4x!cgc.float32>,
                   %k: !cgc.memref<2x5x4x!cgc.float32>,
                   %bias: !cgc.memref<constant 5x!cgc.float32>,
                   %out1: !cgc.memref<1x2x5x5x!cgc.float32>,
                   %out2: !cgc.memref<2x3x5x!cgc.float32>,
                   %scratch: !cgc.memref<256x!cgc.int8>) {
    %v = cgc.view_memref %scratch[64] : !cgc.memref<256x!cgc.int8> to !cgc.memref<2x3x5x!cgc.float32>
    cgc.invoke @convReluAdd(%x, %w, %b, %out1) : !cgc.memref<1x2x5x5x!cgc.float32>, !cgc.memref<constant 2x2x3x3x!cgc.float32>, !cgc.memref<constant 2x!cgc.float32>, !cgc.memref<1x2x5x5x!cgc.float32>
    cgc.invoke @transposeMatmulAddGelu(%a, %k, %bias, %v) : !cgc.memref<2x3x4x!cgc.float32>, !cgc.memref<2x5x4x!cgc.float32>, !cgc.memref<constant 5x!cgc.float32>, !cgc.memref<2x3x5x!cgc.float32>
    cgc.invoke @softmax(%v, %out2) : !cgc.memref<2x3x5x!cgc.float32>, !cgc.memref<2x3x5x!cgc.float32>
    cgc.return
  }
}
)mlir";

TEST(CpuJit, MultiSubgraphPartitionIsRewrittenForTheDriver) {
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(kMultiSubgraph), program, error)) << error;
  ASSERT_EQ(program.bindings.size(), 9u);
  EXPECT_EQ(program.bindings[8].bytes, 256u);

  // conv, relu, add | matmul (transpose folded), add, gelu | softmax.
  std::vector<std::string> ops;
  for (const KernelDesc &k : program.kernels)
    ops.push_back(k.op);
  EXPECT_EQ(ops, (std::vector<std::string>{
                     "cgc_op.convolution", "cgc_op.relu", "cgc_op.add",
                     "cgc_op.matmul", "cgc_op.add", "cgc_op.gelu",
                     "cgc_op.softmax"}));
  // The residual add's running value (relu's result) is now input 0.
  const KernelDesc &add = program.kernels[2];
  EXPECT_EQ(*add.inputs[0], program.kernels[1].outputs[0]);
  EXPECT_EQ(*add.inputs[1], binding(0, {1, 2, 5, 5}));
  // The matmul reads the transpose's input through transposed strides.
  KernelOperand kT = binding(4, {2, 4, 5});
  kT.strides = {20, 1, 4};
  EXPECT_EQ(*program.kernels[3].inputs[1], kT);
  // The gelu writes the scratch view at byte 64 and softmax reads it there.
  EXPECT_EQ(program.kernels[5].outputs[0], binding(8, {2, 3, 5}, 64));
  EXPECT_EQ(*program.kernels[6].inputs[0], binding(8, {2, 3, 5}, 64));
  // Temporaries: conv and relu results, matmul and add results; the
  // transpose's is gone.
  EXPECT_EQ(program.temporaries.size(), 4u);

  auto candidates = cpu_target::findFusionCandidates(program);
  ASSERT_EQ(candidates.size(), 2u);
  EXPECT_EQ(candidates[0].chain, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(candidates[1].chain, (std::vector<size_t>{4, 5}));
}

TEST(CpuJit, MultiSubgraphPartitionComputesWhatItSays) {
  if (!cpu_target::haveKernelLibrary())
    GTEST_SKIP() << "this build's kernel library has no kernels";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(kMultiSubgraph), program, error)) << error;
  cpu_target::KernelCheck check = cpu_target::checkKernelProgram(program);
  ASSERT_TRUE(check.ok) << check.reason;
  EXPECT_EQ(check.fusedKernels, 4u);

  std::vector<std::vector<float>> buffers = {
      randomFloats(50, 11), randomFloats(36, 12), randomFloats(2, 13),
      randomFloats(24, 14), randomFloats(40, 15), randomFloats(5, 16),
      std::vector<float>(50), std::vector<float>(30), std::vector<float>(64)};
  auto in = buffers;
  run(program, buffers);

  std::vector<float> conv = conv3x3(in[0], in[1], in[2], 2, 5, 5);
  for (size_t i = 0; i < 50; ++i)
    EXPECT_NEAR(buffers[6][i], in[0][i] + std::max(conv[i], 0.0f), 1e-4) << i;

  // softmax(gelu(a . k^T + bias)) over the last axis.
  for (int batch = 0; batch < 2; ++batch)
    for (int m = 0; m < 3; ++m) {
      double row[5], sum = 0, top = -1e30;
      for (int n = 0; n < 5; ++n) {
        double acc = in[5][n];
        for (int k = 0; k < 4; ++k)
          acc += double(in[3][(batch * 3 + m) * 4 + k]) *
                 in[4][(batch * 5 + n) * 4 + k];
        row[n] = 0.5 * acc * (1.0 + std::erf(acc / std::sqrt(2.0)));
        top = std::max(top, row[n]);
      }
      for (double &v : row)
        sum += (v = std::exp(v - top));
      for (int n = 0; n < 5; ++n)
        EXPECT_NEAR(buffers[7][(batch * 3 + m) * 5 + n], row[n] / sum, 1e-5)
            << batch << "," << m << "," << n;
    }
}

//===----------------------------------------------------------------------===//
// Channels-last intermediates
//===----------------------------------------------------------------------===//

/// conv3x3 + relu twice; the intermediate %t is `cgc.internal` when asked,
/// and also read by `extraReader` (a subgraph of one op on %t -> %extra).
std::string twoConvPartition(bool internal, const char *extraReader = nullptr) {
  std::string t = "!cgc.memref<1x3x5x6x!cgc.float32>";
  std::string text = R"mlir(
cgc.module {
  cgc.subgraph @convRelu attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @convReluFunctional(%x: !cgc.tensor<1x3x5x6x!cgc.float32>, %w: !cgc.tensor<constant 3x3x3x3x!cgc.float32>, %b: !cgc.tensor<constant 3x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x3x5x6x!cgc.float32>, !cgc.tensor<constant 3x3x3x3x!cgc.float32>, !cgc.tensor<constant 3x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x3x5x6x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32>
      cgc.return %1 : !cgc.tensor<1x3x5x6x!cgc.float32>
    }
  }
)mlir";
  if (extraReader)
    text += std::string(R"mlir(
  cgc.subgraph @extra attributes {origin = "fallback", pattern = "layer"} {
    cgc.functional_definition private @extraFunctional(%y: !cgc.tensor<1x3x5x6x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32> {
      %0 = )mlir") + extraReader + R"mlir( : (!cgc.tensor<1x3x5x6x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32>
      cgc.return %0 : !cgc.tensor<1x3x5x6x!cgc.float32>
    }
  }
)mlir";
  text += "  cgc.partition @p(%x: " + t + ", %w1: !cgc.memref<constant 3x3x3x3x!cgc.float32>, "
          "%b1: !cgc.memref<constant 3x!cgc.float32>, %w2: !cgc.memref<constant 3x3x3x3x!cgc.float32>, "
          "%b2: !cgc.memref<constant 3x!cgc.float32>, %out: " + t + ", %extra: " + t +
          ", %t: " + t + (internal ? " {cgc.internal}" : "") + ") {\n";
  text += "    cgc.invoke @convRelu(%x, %w1, %b1, %t) : " + t +
          ", !cgc.memref<constant 3x3x3x3x!cgc.float32>, !cgc.memref<constant 3x!cgc.float32>, " + t + "\n";
  if (extraReader)
    text += "    cgc.invoke @extra(%t, %extra) : " + t + ", " + t + "\n";
  text += "    cgc.invoke @convRelu(%t, %w2, %b2, %out) : " + t +
          ", !cgc.memref<constant 3x3x3x3x!cgc.float32>, !cgc.memref<constant 3x!cgc.float32>, " + t + "\n";
  text += "    cgc.return\n  }\n}\n";
  return text;
}

/// Strides of every operand of `program` on binding or temporary `index`.
std::vector<std::vector<int64_t>> stridesOn(const KernelProgram &program,
                                            KernelOperand::Storage storage, uint32_t index) {
  std::vector<std::vector<int64_t>> out;
  for (const KernelDesc &k : program.kernels) {
    for (const auto &in : k.inputs)
      if (in && in->storage == storage && in->index == index)
        out.push_back(in->strides);
    for (const auto &o : k.outputs)
      if (o.storage == storage && o.index == index)
        out.push_back(o.strides);
  }
  return out;
}

std::vector<std::vector<int64_t>> stridesOnBinding(const KernelProgram &program, uint32_t index) {
  return stridesOn(program, KernelOperand::Storage::Binding, index);
}

/// Where twoConvPartition's %t is after the JIT: the second convolution's
/// input, which must be a temporary of %t's size when %t is internal.
std::vector<std::vector<int64_t>> stridesOnInternalT(const KernelProgram &program) {
  unsigned convolutions = 0;
  for (const KernelDesc &k : program.kernels)
    if (k.op == "cgc_op.convolution" && ++convolutions == 2) {
      const KernelOperand &t = *k.inputs[0];
      EXPECT_EQ(t.storage, KernelOperand::Storage::Temporary);
      if (t.storage != KernelOperand::Storage::Temporary)
        return {};
      EXPECT_EQ(program.temporaries[t.index].bytes, 360u);
      return stridesOn(program, KernelOperand::Storage::Temporary, t.index);
    }
  ADD_FAILURE() << "no second convolution";
  return {};
}

/// twoConvPartition's bind points: x, w1, b1, w2, b2 drawn from seeds
/// `seed`.. `seed` + 4, then the three 90-float outputs (zeros).
std::vector<std::vector<float>> twoConvBuffers(unsigned seed) {
  return {randomFloats(90, seed),     randomFloats(81, seed + 1), randomFloats(3, seed + 2),
          randomFloats(81, seed + 3), randomFloats(3, seed + 4),  std::vector<float>(90),
          std::vector<float>(90),     std::vector<float>(90)};
}

/// conv3x3 (pad 1, bias) + relu, NCHW, `c` channels in and out.
std::vector<float> convRelu(const std::vector<float> &x, const std::vector<float> &w,
                            const std::vector<float> &b, int c, int h, int wd) {
  std::vector<float> out = conv3x3(x, w, b, c, h, wd);
  for (float &v : out)
    v = std::max(v, 0.0f);
  return out;
}

/// A compiled twoConvPartition run on twoConvBuffers(seed): the buffers
/// after the run, and the oracle's %t and output.
struct TwoConvRun {
  std::vector<std::vector<float>> buffers;
  std::vector<float> t, expected;
};
TwoConvRun runTwoConv(const KernelProgram &program, unsigned seed) {
  TwoConvRun r;
  r.buffers = twoConvBuffers(seed);
  const auto in = r.buffers;
  run(program, r.buffers);
  r.t = convRelu(in[0], in[1], in[2], 3, 5, 6);
  r.expected = convRelu(r.t, in[3], in[4], 3, 5, 6);
  return r;
}

TEST(CpuJit, InternalIntermediatesBetweenConvolutionsAreChannelsLast) {
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(twoConvPartition(true)), program, error)) << error;
  ASSERT_EQ(program.bindings.size(), 8u);
  EXPECT_TRUE(program.bindings[7].internal);
  for (size_t i = 0; i < 7; ++i)
    EXPECT_FALSE(program.bindings[i].internal) << i;
  // %t lives in a temporary that lives in bind point 7's bytes: no kernel
  // names bind point 7. Every access to %t is N, H, W, C; the partition's
  // own inputs and outputs keep their layout.
  EXPECT_TRUE(stridesOnBinding(program, 7).empty());
  const std::vector<int64_t> nhwc = {90, 1, 18, 3};
  auto onT = stridesOnInternalT(program);
  ASSERT_EQ(onT.size(), 2u);
  for (const auto &s : onT)
    EXPECT_EQ(s, nhwc);
  for (const auto &s : stridesOnBinding(program, 0))
    EXPECT_TRUE(s.empty());
  for (const auto &s : stridesOnBinding(program, 5))
    EXPECT_TRUE(s.empty());

  if (!cpu_target::haveKernelLibrary())
    return;
  size_t t = program.temporaries.size();
  for (size_t i = 0; i < program.temporaries.size(); ++i)
    if (program.temporaries[i].binding >= 0) {
      EXPECT_EQ(program.temporaries[i].binding, 7) << i;
      t = i;
    }
  ASSERT_LT(t, program.temporaries.size());
  std::vector<std::vector<float>> buffers = twoConvBuffers(21);
  auto in = buffers;
  run(program, buffers);
  std::vector<float> expected =
      convRelu(convRelu(in[0], in[1], in[2], 3, 5, 6), in[3], in[4], 3, 5, 6);
  for (size_t i = 0; i < 90; ++i)
    EXPECT_NEAR(buffers[5][i], expected[i], 1e-4) << i;
  std::string error2;
  auto compiled = cpu::CompiledProgram::create(program, error2);
  ASSERT_TRUE(compiled) << error2;
  EXPECT_EQ(compiled->memoryStats().untouchedInternalBindings, 0u);
  EXPECT_EQ(compiled->memoryStats().boundTemporaries, 1u);
  EXPECT_EQ(compiled->memoryStats().boundBytes, 360u);
  // Bound 64-byte aligned, %t lives in bind point 7's bytes; misaligned,
  // it moves to per-run memory.
  alignas(64) static uint8_t memory[8][512];
  std::vector<uint8_t *> addresses;
  for (auto &bytes : memory)
    addresses.push_back(bytes);
  auto layout = compiled->layoutFor(addresses);
  EXPECT_EQ(layout->offsets[t], cpu::CompiledProgram::kInBinding);
  EXPECT_EQ(layout->evicted, 0u);
  const uint64_t perRun = layout->perRunBytes;
  addresses[7] += 4;
  layout = compiled->layoutFor(addresses);
  EXPECT_NE(layout->offsets[t], cpu::CompiledProgram::kInBinding);
  EXPECT_EQ(layout->evicted, 1u);
  EXPECT_GE(layout->perRunBytes, perRun + 360u);
}

TEST(CpuJit, IntermediatesKeepTheirLayoutWhenOthersMaySeeThem) {
  const std::vector<int64_t> nhwc = {90, 1, 18, 3};
  // Not internal: another partition may read %t's bytes as written.
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(twoConvPartition(false)), program, error)) << error;
  for (const auto &s : stridesOnBinding(program, 7))
    EXPECT_TRUE(s.empty());
  // Internal, but also read by a kernel built for plain layouts (softmax):
  // it would pack the operand on every run.
  ASSERT_TRUE(compile(toBytecode(twoConvPartition(
                          true, "cgc_op.softmax(%y) {axis = 1 : i64}")),
                      program, error))
      << error;
  EXPECT_EQ(stridesOnInternalT(program).size(), 3u);
  for (const auto &s : stridesOnInternalT(program))
    EXPECT_TRUE(s.empty());
  // Internal, but an elementwise op reads it into a partition output, whose
  // layout is fixed: elementwise kernels (and fused post-ops, whose extra
  // operands must be in the result's layout) keep one layout across their
  // operands, so %t stays plain too.
  ASSERT_TRUE(compile(toBytecode(twoConvPartition(true, "cgc_op.sigmoid(%y)")), program, error))
      << error;
  auto onT = stridesOnInternalT(program);
  ASSERT_EQ(onT.size(), 3u);
  for (const auto &s : onT)
    EXPECT_TRUE(s.empty());
  for (const auto &s : stridesOnBinding(program, 6))
    EXPECT_TRUE(s.empty());
  // Nor do the temporaries between the convolutions and their relus: the
  // relu's result is %t.
  for (const KernelDesc &k : program.kernels)
    for (const auto &o : k.outputs)
      EXPECT_TRUE(o.strides.empty()) << k.op;
  if (!cpu_target::haveKernelLibrary())
    return;
  TwoConvRun r = runTwoConv(program, 31);
  for (size_t i = 0; i < 90; ++i) {
    EXPECT_NEAR(r.buffers[5][i], r.expected[i], 1e-4) << i;
    EXPECT_NEAR(r.buffers[6][i], 1.0 / (1.0 + std::exp(-double(r.t[i]))), 1e-5) << i;
  }
}

// Slices and transposes are strided copies (ShuffleNet's channel split and
// shuffle): an internal intermediate they read still turns channels-last,
// and they write their own result in its layout (here a partition output,
// plain).
TEST(CpuJit, SlicesAndTransposesReadChannelsLastIntermediates) {
  const std::vector<int64_t> nhwc = {90, 1, 18, 3};
  for (const char *reader :
       {"cgc_op.slice(%y) {starts = [0, 0, 0, 0], ends = [1, 3, 5, 6], steps = [1, 1, 1, 1]}",
        "cgc_op.transpose(%y) {perm = [0, 1, 2, 3]}"}) {
    KernelProgram program;
    std::string error;
    ASSERT_TRUE(compile(toBytecode(twoConvPartition(true, reader)), program, error)) << error;
    auto onT = stridesOnInternalT(program);
    ASSERT_FALSE(onT.empty()) << reader;
    for (const auto &s : onT)
      EXPECT_EQ(s, nhwc) << reader;
    for (const auto &s : stridesOnBinding(program, 6))
      EXPECT_TRUE(s.empty()) << reader;
    if (!cpu_target::haveKernelLibrary())
      continue;
    TwoConvRun r = runTwoConv(program, 41);
    for (size_t i = 0; i < 90; ++i) {
      EXPECT_NEAR(r.buffers[5][i], r.expected[i], 1e-4) << reader << " " << i;
      EXPECT_NEAR(r.buffers[6][i], r.t[i], 1e-6) << reader << " " << i;
    }
  }
}

TEST(CpuJit, AGlobalPoolDoesNotPinItsInputsLayout) {
  // conv -> relu -> %t (internal) -> {global_avg_pool -> %p, conv -> %out}:
  // the pool's 1x1 result is no activation, so %t is still channels-last
  // (the pool reduces over any layout) while %p keeps the plan's layout.
  std::string t = "!cgc.memref<1x3x5x6x!cgc.float32>", p = "!cgc.memref<1x3x1x1x!cgc.float32>";
  std::string text = twoConvPartition(true);
  // Add the pool subgraph and its invoke, and %p as a partition output.
  text.replace(text.find("  cgc.partition"), 0, R"mlir(  cgc.subgraph @pool attributes {origin = "cpu", pattern = "pooling"} {
    cgc.functional_definition private @poolFunctional(%y: !cgc.tensor<1x3x5x6x!cgc.float32>) -> !cgc.tensor<1x3x1x1x!cgc.float32> {
      %0 = cgc_op.global_avg_pool(%y) : (!cgc.tensor<1x3x5x6x!cgc.float32>) -> !cgc.tensor<1x3x1x1x!cgc.float32>
      cgc.return %0 : !cgc.tensor<1x3x1x1x!cgc.float32>
    }
  }
)mlir");
  text.replace(text.find("%extra: " + t), ("%extra: " + t).size(), "%extra: " + p);
  std::string secondConv = "    cgc.invoke @convRelu(%t, %w2";
  text.replace(text.find(secondConv), 0, "    cgc.invoke @pool(%t, %extra) : " + t + ", " + p + "\n");
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(text), program, error)) << error;
  const std::vector<int64_t> nhwc = {90, 1, 18, 3};
  EXPECT_TRUE(stridesOnBinding(program, 7).empty());
  auto onT = stridesOnInternalT(program);
  ASSERT_EQ(onT.size(), 3u);
  for (const auto &s : onT)
    EXPECT_EQ(s, nhwc);
  for (const auto &s : stridesOnBinding(program, 6))
    EXPECT_TRUE(s.empty());
  if (!cpu_target::haveKernelLibrary())
    return;
  std::vector<std::vector<float>> buffers = {
      randomFloats(90, 51), randomFloats(81, 52), randomFloats(3, 53), randomFloats(81, 54),
      randomFloats(3, 55),  std::vector<float>(90), std::vector<float>(3), std::vector<float>(90)};
  auto in = buffers;
  run(program, buffers);
  std::vector<float> mid = convRelu(in[0], in[1], in[2], 3, 5, 6);
  std::vector<float> expected = convRelu(mid, in[3], in[4], 3, 5, 6);
  for (size_t i = 0; i < 90; ++i)
    EXPECT_NEAR(buffers[5][i], expected[i], 1e-4) << i;
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int i = 0; i < 30; ++i)
      sum += mid[c * 30 + i];
    EXPECT_NEAR(buffers[6][c], sum / 30, 1e-5) << c;
  }
}

//===----------------------------------------------------------------------===//
// SiLU: sigmoid + mul folded into one swish
//===----------------------------------------------------------------------===//

/// conv3x3 -> y; sigmoid(y) -> s; `mul` of y and s (in the order given).
std::string convSiluPartition(bool sigmoidFirst) {
  std::string t = "!cgc.tensor<1x3x5x6x!cgc.float32>";
  std::string m = "!cgc.memref<1x3x5x6x!cgc.float32>";
  std::string text = R"mlir(
cgc.module {
  cgc.subgraph @convSilu attributes {origin = "cpu", pattern = "anchorSwish"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<1x3x5x6x!cgc.float32>, %w: !cgc.tensor<constant 3x3x3x3x!cgc.float32>, %b: !cgc.tensor<constant 3x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x3x5x6x!cgc.float32>, !cgc.tensor<constant 3x3x3x3x!cgc.float32>, !cgc.tensor<constant 3x!cgc.float32>) -> !cgc.tensor<1x3x5x6x!cgc.float32>
      %1 = cgc_op.sigmoid(%0) : ()mlir" + t + ") -> " + t + R"mlir(
      %2 = cgc_op.mul()mlir" + std::string(sigmoidFirst ? "%1, %0" : "%0, %1") + ") : (" + t + ", " + t + ") -> " + t + R"mlir(
      cgc.return %2 : !cgc.tensor<1x3x5x6x!cgc.float32>
    }
  }
)mlir";
  text += "  cgc.partition @p(%x: " + m + ", %w: !cgc.memref<constant 3x3x3x3x!cgc.float32>, "
          "%b: !cgc.memref<constant 3x!cgc.float32>, %out: " + m + ") {\n";
  text += "    cgc.invoke @convSilu(%x, %w, %b, %out) : " + m +
          ", !cgc.memref<constant 3x3x3x3x!cgc.float32>, !cgc.memref<constant 3x!cgc.float32>, " + m + "\n";
  text += "    cgc.return\n  }\n}\n";
  return text;
}

TEST(CpuJit, SigmoidTimesItsInputBecomesOneFusedSwish) {
  for (bool sigmoidFirst : {false, true}) {
    KernelProgram program;
    std::string error;
    ASSERT_TRUE(compile(toBytecode(convSiluPartition(sigmoidFirst)), program, error)) << error;
    ASSERT_EQ(program.kernels.size(), 2u);
    EXPECT_EQ(program.kernels[0].op, "cgc_op.convolution");
    EXPECT_EQ(program.kernels[1].op, "cgc_op.swish");
    EXPECT_EQ(*program.kernels[1].inputs[0], program.kernels[0].outputs[0]);
    EXPECT_EQ(program.kernels[1].outputs[0], binding(3, {1, 3, 5, 6}));
    EXPECT_TRUE(program.temporaries.size() == 1u);
    if (!cpu_target::haveKernelLibrary())
      continue;
    auto compiled = cpu::CompiledProgram::create(program, error);
    ASSERT_TRUE(compiled) << error;
    EXPECT_EQ(compiled->fusedCount(), 1u);
    std::vector<std::vector<float>> buffers = {randomFloats(90, 41), randomFloats(81, 42),
                                               randomFloats(3, 43), std::vector<float>(90)};
    auto in = buffers;
    run(program, buffers);
    // conv3x3 with 3 channels, then x * sigmoid(x).
    for (int o = 0; o < 3; ++o)
      for (int y = 0; y < 5; ++y)
        for (int xx = 0; xx < 6; ++xx) {
          double acc = in[2][o];
          for (int i = 0; i < 3; ++i)
            for (int dy = -1; dy <= 1; ++dy)
              for (int dx = -1; dx <= 1; ++dx) {
                int yy = y + dy, xs = xx + dx;
                if (yy >= 0 && yy < 5 && xs >= 0 && xs < 6)
                  acc += double(in[0][(i * 5 + yy) * 6 + xs]) *
                         in[1][((o * 3 + i) * 3 + dy + 1) * 3 + dx + 1];
              }
          double expected = acc / (1 + std::exp(-acc));
          EXPECT_NEAR(buffers[3][(o * 5 + y) * 6 + xx], expected, 1e-4) << o << "," << y << "," << xx;
        }
  }
}

TEST(CpuJit, SigmoidReadTwiceIsNotFolded) {
  // The sigmoid is also returned: it must be written, so nothing is folded.
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "cpu", pattern = "x"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) {
      %0 = cgc_op.sigmoid(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      %1 = cgc_op.mul(%x, %0) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %1, %0 : !cgc.tensor<4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<4x!cgc.float32>, %y: !cgc.memref<4x!cgc.float32>, %s: !cgc.memref<4x!cgc.float32>) {
    cgc.invoke @s(%x, %y, %s) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(text), program, error)) << error;
  ASSERT_EQ(program.kernels.size(), 2u);
  EXPECT_EQ(program.kernels[0].op, "cgc_op.sigmoid");
  EXPECT_EQ(program.kernels[1].op, "cgc_op.mul");
}

//===----------------------------------------------------------------------===//
// What the rewrites must leave alone
//===----------------------------------------------------------------------===//

TEST(CpuJit, TransposeWithASecondReaderStays) {
  // The transposed tensor is also returned: it must be written.
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "cpu", pattern = "x"} {
    cgc.functional_definition private @f(%a: !cgc.tensor<3x4x!cgc.float32>, %k: !cgc.tensor<5x4x!cgc.float32>) -> (!cgc.tensor<3x5x!cgc.float32>, !cgc.tensor<4x5x!cgc.float32>) {
      %t = cgc_op.transpose(%k) {perm = [1, 0]} : (!cgc.tensor<5x4x!cgc.float32>) -> !cgc.tensor<4x5x!cgc.float32>
      %m = cgc_op.matmul(%a, %t) : (!cgc.tensor<3x4x!cgc.float32>, !cgc.tensor<4x5x!cgc.float32>) -> !cgc.tensor<3x5x!cgc.float32>
      %n = cgc_op.neg(%t) : (!cgc.tensor<4x5x!cgc.float32>) -> !cgc.tensor<4x5x!cgc.float32>
      cgc.return %m, %n : !cgc.tensor<3x5x!cgc.float32>, !cgc.tensor<4x5x!cgc.float32>
    }
  }
  cgc.partition @p(%a: !cgc.memref<3x4x!cgc.float32>, %k: !cgc.memref<5x4x!cgc.float32>, %m: !cgc.memref<3x5x!cgc.float32>, %n: !cgc.memref<4x5x!cgc.float32>) {
    cgc.invoke @s(%a, %k, %m, %n) : !cgc.memref<3x4x!cgc.float32>, !cgc.memref<5x4x!cgc.float32>, !cgc.memref<3x5x!cgc.float32>, !cgc.memref<4x5x!cgc.float32>
    cgc.return
  }
}
)mlir";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(text), program, error)) << error;
  ASSERT_EQ(program.kernels.size(), 3u);
  EXPECT_EQ(program.kernels[0].op, "cgc_op.transpose");
  EXPECT_TRUE(program.kernels[1].inputs[1]->isContiguous());
}

TEST(CpuJit, SubtractionKeepsItsOperandOrder) {
  // sub(residual, relu(conv)) is not commutative: no swap, so the driver
  // fuses conv + relu and runs the subtraction after.
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "cpu", pattern = "x"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<1x1x4x4x!cgc.float32>, %w: !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
      %2 = cgc_op.sub(%x, %1) : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
      cgc.return %2 : !cgc.tensor<1x1x4x4x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<1x1x4x4x!cgc.float32>, %w: !cgc.memref<constant 1x1x3x3x!cgc.float32>, %o: !cgc.memref<1x1x4x4x!cgc.float32>) {
    cgc.invoke @s(%x, %w, %o) : !cgc.memref<1x1x4x4x!cgc.float32>, !cgc.memref<constant 1x1x3x3x!cgc.float32>, !cgc.memref<1x1x4x4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  KernelProgram program;
  std::string error;
  ASSERT_TRUE(compile(toBytecode(text), program, error)) << error;
  ASSERT_EQ(program.kernels.size(), 3u);
  EXPECT_EQ(*program.kernels[2].inputs[0], binding(0, {1, 1, 4, 4}));
  auto candidates = cpu_target::findFusionCandidates(program);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].chain, (std::vector<size_t>{1}));
  if (!cpu_target::haveKernelLibrary())
    return;
  cpu_target::KernelCheck check = cpu_target::checkKernelProgram(program);
  ASSERT_TRUE(check.ok) << check.reason;
  EXPECT_EQ(check.fusedKernels, 1u);
  std::vector<std::vector<float>> buffers = {randomFloats(16, 5), randomFloats(9, 6),
                                             std::vector<float>(16)};
  auto in = buffers;
  run(program, buffers);
  std::vector<float> conv = conv3x3(in[0], in[1], {0.0f}, 1, 4, 4);
  for (size_t i = 0; i < 16; ++i)
    EXPECT_NEAR(buffers[2][i], in[0][i] - std::max(conv[i], 0.0f), 1e-4) << i;
}

//===----------------------------------------------------------------------===//
// Bad input: an error that says what is wrong, never a crash
//===----------------------------------------------------------------------===//

void expectError(const std::string &bytes, const std::string &needle) {
  KernelProgram program;
  program.bindings.push_back({"untouched", 1});
  std::string error;
  EXPECT_FALSE(compile(bytes, program, error));
  EXPECT_NE(error.find(needle), std::string::npos) << error;
  // The program is left as it was.
  ASSERT_EQ(program.bindings.size(), 1u);
  EXPECT_EQ(program.bindings[0].name, "untouched");
}

TEST(CpuJit, RejectsWhatIsNotPartitionIRBytecode) {
  KernelProgram program;
  std::string error;
  EXPECT_FALSE(jit().compilePartition(nullptr, 0, program, error));
  EXPECT_NE(error.find("empty"), std::string::npos) << error;
  expectError(readSourceFile("examples/spec/partition-ir.mlir"),
              "not MLIR bytecode");
  expectError(std::string("\x7f" "ELF\x02\x01\x01", 7), "not MLIR bytecode");
  expectError(std::string("ML\xefR", 4), "cannot read the Partition IR bytecode");
}

TEST(CpuJit, RejectsTruncatedAndCorruptedBytecode) {
  // MLIR 22's bytecode reader corrupts the heap, aborts or loops forever on
  // some of these (UntrustedBytecode.h): every one must come back as an error
  // or a valid program.
  for (const std::string &good :
       {toBytecode(readSourceFile("examples/spec/partition-ir.mlir")),
        toBytecode(kMultiSubgraph)}) {
    ASSERT_GT(good.size(), 64u);
    KernelProgram program;
    std::string error;
    // Every truncation fails with a message.
    for (size_t size = 0; size < good.size(); ++size) {
      error.clear();
      EXPECT_FALSE(compile(good.substr(0, size), program, error)) << size;
      EXPECT_FALSE(error.empty()) << size;
    }
    // Every byte flipped with each mask (low bit, high bit, all bits and a
    // mix) fails or compiles to a valid program; nothing crashes or hangs.
    // (0x5a at byte 301 of the second made an attribute refer to itself.)
    const uint8_t masks[] = {0x01, 0x80, 0xff, 0x5a};
    for (size_t i = 4; i < good.size(); ++i)
      for (uint8_t mask : masks) {
        std::string bad = good;
        bad[i] = char(bad[i] ^ mask);
        KernelProgram p;
        error.clear();
        if (compile(bad, p, error)) {
          EXPECT_TRUE(p.validate(error)) << i << " ^ " << int(mask) << ": "
                                         << error;
        } else {
          EXPECT_FALSE(error.empty()) << i << " ^ " << int(mask);
        }
      }
  }
}

TEST(CpuJit, RejectsANewerIRVersion) {
  std::string bytes = toBytecode(readSourceFile("examples/spec/partition-ir.mlir"),
                                 IRVersion(IRVersion::current().major + 1, 0, 0));
  expectError(bytes, "newer");
}

TEST(CpuJit, RejectsModulesThatAreNotOnePartition) {
  const char *twoPartitions = R"mlir(
cgc.module {
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
  cgc.partition @q(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
}
)mlir";
  expectError(toBytecode(twoPartitions), "exactly one cgc.partition, found 2");

  const char *noPartition = R"mlir(
cgc.module {
  cgc.subgraph @relu attributes {origin = "cpu"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
}
)mlir";
  expectError(toBytecode(noPartition), "exactly one cgc.partition, found 0");

  const char *entryPoint = R"mlir(
cgc.module {
  cgc.entry_point @main(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}
)mlir";
  expectError(toBytecode(entryPoint), "holds a 'cgc.entry_point'");

  const char *unreached = R"mlir(
cgc.module {
  cgc.subgraph @relu attributes {origin = "cpu"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>) { cgc.return }
}
)mlir";
  expectError(toBytecode(unreached),
              "subgraph '@relu', which partition '@p' does not invoke");
}

TEST(CpuJit, NamesTheOpThatCannotBeLowered) {
  // A constant inside a functional definition has no binding.
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "cpu"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %w = cgc.constant("w") : !cgc.tensor<constant 4x!cgc.float32>
      %0 = cgc_op.add(%x, %w) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%a: !cgc.memref<4x!cgc.float32>, %b: !cgc.memref<4x!cgc.float32>) {
    cgc.invoke @s(%a, %b) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  expectError(toBytecode(text), "'cgc.constant' op cannot be lowered");
}

//===----------------------------------------------------------------------===//
// Concurrency: the runtime compiles partitions in parallel
//===----------------------------------------------------------------------===//

TEST(CpuJit, CompilesConcurrently) {
  std::string spec = toBytecode(readSourceFile("examples/spec/partition-ir.mlir"));
  std::string multi = toBytecode(kMultiSubgraph);
  KernelProgram specProgram, multiProgram;
  std::string error;
  ASSERT_TRUE(compile(spec, specProgram, error)) << error;
  ASSERT_TRUE(compile(multi, multiProgram, error)) << error;
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        KernelProgram p;
        std::string e;
        const std::string &bytes = (t + i) % 2 ? spec : multi;
        if (!compile(bytes, p, e) ||
            !(p == ((t + i) % 2 ? specProgram : multiProgram)))
          ++mismatches;
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

} // namespace
} // namespace cgc::test
