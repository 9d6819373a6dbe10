//===- TestModel.h - Small compiled models built by hand --------*- C++ -*-===//
//
// Writes compiled-model containers (cgc/compiled_model.h layout) whose
// programs are fallback kernel programs, so the runtime's tests run on the
// CPU driver without the compiler. The ONNX conformance and model-zoo
// suites (test/onnx, test/models) cover models the compiler produced.
//
//   y = relu(x + c)   x: input float32[2,8], c: constant, y: output
//   program 0 (add):  x, c -> scratch t        barrier on t
//   program 1 (relu): t -> y
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_RUNTIME_LIB_TESTMODEL_H
#define CGC_TEST_RUNTIME_LIB_TESTMODEL_H

#include "cgc/compiled_model.h"
#include "cgc/container.h"
#include "cgc/kernel_program.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace cgc::test {

inline const std::vector<int64_t> kShape = {2, 8};
constexpr uint64_t kBytes = 2 * 8 * 4;

/// The constant c: 0.5 * i - 3.
inline std::vector<float> constantValues() {
  std::vector<float> c(16);
  for (int i = 0; i < 16; ++i)
    c[i] = 0.5f * float(i) - 3.0f;
  return c;
}

/// What the model computes, for checking.
inline std::vector<float> expected(const std::vector<float> &x) {
  std::vector<float> c = constantValues(), y(16);
  for (int i = 0; i < 16; ++i)
    y[i] = std::max(0.0f, x[i] + c[i]);
  return y;
}

struct ModelOptions {
  std::string irVersion = "1.0.0";
  /// Where the intermediate t lives in the scratch memory.
  uint64_t scratchOffset = 0;
};

inline KernelOperand operand(uint32_t binding) {
  KernelOperand o;
  o.dtype = CGC_DTYPE_FLOAT32;
  o.shape = kShape;
  o.storage = KernelOperand::Storage::Binding;
  o.index = binding;
  return o;
}

inline BindPoint point(std::string name, BindPointKind kind) {
  BindPoint bp;
  bp.name = std::move(name);
  bp.kind = kind;
  bp.bytes = kBytes;
  bp.alignment = 4;
  bp.dtype = CGC_DTYPE_FLOAT32;
  bp.shape = kShape;
  return bp;
}

inline std::vector<uint8_t> buildReluAddModel(const ModelOptions &options = {}) {
  // Program 0: t = x + c.
  KernelProgram add;
  add.bindings = {{"x", kBytes}, {"c", kBytes}, {"t", kBytes}};
  KernelDesc addKernel;
  addKernel.op = "cgc_op.add";
  addKernel.inputs = {operand(0), operand(1)};
  addKernel.outputs = {operand(2)};
  add.kernels = {addKernel};
  std::vector<BindPoint> addPoints = {point("x", BindPointKind::Argument),
                                      point("c", BindPointKind::Constant),
                                      point("t", BindPointKind::Scratch)};
  // Program 1: y = relu(t).
  KernelProgram relu;
  relu.bindings = {{"t", kBytes}, {"y", kBytes}};
  KernelDesc reluKernel;
  reluKernel.op = "cgc_op.relu";
  reluKernel.inputs = {operand(0)};
  reluKernel.outputs = {operand(1)};
  relu.kernels = {reluKernel};
  std::vector<BindPoint> reluPoints = {point("t", BindPointKind::Scratch),
                                       point("y", BindPointKind::Output)};

  ExecutionPlan plan;
  plan.inputs = {{"x", CGC_DTYPE_FLOAT32, kShape, kBytes}};
  plan.outputs = {{"y", CGC_DTYPE_FLOAT32, kShape, kBytes}};
  const uint64_t t = options.scratchOffset;
  plan.scratchBytes = t + kBytes;
  plan.scratchAlignment = 64;
  plan.constantsBytes = kBytes;
  plan.constantsAlignment = 64;
  plan.constantsPart = 9;
  plan.constants = {{"c", 0, kBytes, CGC_DTYPE_FLOAT32, kShape}};
  PlanProgram p0;
  p0.name = "partition0";
  p0.target = "fallback";
  p0.kind = PlanProgram::Kind::Kernel;
  p0.part = 2;
  p0.bindPointsPart = 3;
  p0.kernelPart = 4;
  PlanProgram p1 = p0;
  p1.name = "partition1";
  p1.part = 5;
  p1.bindPointsPart = 6;
  p1.kernelPart = 7;
  plan.programs = {p0, p1};
  PlanCommand d0;
  d0.kind = PlanCommand::Kind::Dispatch;
  d0.program = 0;
  d0.ranges = {{PlanBuffer::Input, 0, 0, kBytes},
               {PlanBuffer::Constants, 0, 0, kBytes},
               {PlanBuffer::Scratch, 0, t, kBytes}};
  PlanCommand barrier;
  barrier.kind = PlanCommand::Kind::Barrier;
  barrier.ranges = {{PlanBuffer::Scratch, 0, t, kBytes}};
  PlanCommand d1;
  d1.kind = PlanCommand::Kind::Dispatch;
  d1.program = 1;
  d1.ranges = {{PlanBuffer::Scratch, 0, t, kBytes}, {PlanBuffer::Output, 0, 0, kBytes}};
  plan.commands = {d0, barrier, d1};
  plan.footprint = plan.lowerBound = plan.naive = t + kBytes;
  plan.dispatchCount = 2;
  plan.barrierCount = 1;

  ContainerWriter w;
  w.addPart(parts::kVersions,
            "{\"ir_version\": \"" + options.irVersion + "\", \"compiler\": \"0.1.0\"}"); // 0
  w.addMLIRPart(interfaces::kOutput, "test: no Output IR");                            // 1
  w.addMLIRPart(interfaces::kSubgraphPartition, "test: kernel program only");          // 2
  w.addPart(parts::kBindPoints, serializeBindPoints(addPoints));                       // 3
  w.addPart(parts::kKernelProgram, serializeKernelProgram(add));                       // 4
  w.addMLIRPart(interfaces::kSubgraphPartition, "test: kernel program only");          // 5
  w.addPart(parts::kBindPoints, serializeBindPoints(reluPoints));                      // 6
  w.addPart(parts::kKernelProgram, serializeKernelProgram(relu));                      // 7
  w.addPart(parts::kPlan, serializeExecutionPlan(plan));                               // 8
  std::vector<float> c = constantValues();
  w.addAlignedPart(parts::kConstants, c.data(), kBytes, size_t(sysconf(_SC_PAGESIZE))); // 9
  return w.finish();
}

/// y = x through one MLIR program (CGC_SUBGRAPH_PARTITION) with bind points
/// x (argument) and y (output). On the test-double driver of
/// test/unit/d3d12 (which copies bind point 0 into the last one) this runs
/// the SetProgram / DispatchGraph path without a JIT.
inline std::vector<uint8_t> buildMlirCopyModel() {
  std::vector<BindPoint> points = {point("x", BindPointKind::Argument),
                                   point("y", BindPointKind::Output)};
  ExecutionPlan plan;
  plan.inputs = {{"x", CGC_DTYPE_FLOAT32, kShape, kBytes}};
  plan.outputs = {{"y", CGC_DTYPE_FLOAT32, kShape, kBytes}};
  plan.constantsPart = 5;
  PlanProgram p0;
  p0.name = "partition0";
  p0.target = "test";
  p0.kind = PlanProgram::Kind::Mlir;
  p0.part = 2;
  p0.bindPointsPart = 3;
  plan.programs = {p0};
  PlanCommand d0;
  d0.kind = PlanCommand::Kind::Dispatch;
  d0.program = 0;
  d0.ranges = {{PlanBuffer::Input, 0, 0, kBytes}, {PlanBuffer::Output, 0, 0, kBytes}};
  plan.commands = {d0};
  plan.dispatchCount = 1;
  ContainerWriter w;
  w.addPart(parts::kVersions, "{\"ir_version\": \"1.0.0\", \"compiler\": \"0.1.0\"}"); // 0
  w.addMLIRPart(interfaces::kOutput, "test: no Output IR");                             // 1
  w.addMLIRPart(interfaces::kSubgraphPartition, "test: the test driver copies");        // 2
  w.addPart(parts::kBindPoints, serializeBindPoints(points));                            // 3
  w.addPart(parts::kPlan, serializeExecutionPlan(plan));                                // 4
  w.addAlignedPart(parts::kConstants, nullptr, 0, size_t(sysconf(_SC_PAGESIZE)));       // 5
  return w.finish();
}

inline std::string writeTemp(const std::vector<uint8_t> &bytes, const std::string &name) {
  std::string dir = ::testing::TempDir();
  std::string path = dir + (dir.empty() || dir.back() == '/' ? "" : "/") + "cgc-" +
                     std::to_string(getpid()) + "-" + name;
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  return path;
}

} // namespace cgc::test

#endif // CGC_TEST_RUNTIME_LIB_TESTMODEL_H
