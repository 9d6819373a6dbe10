//===- KernelProgramTest.cpp - Kernel programs and bind points ------------===//

#include "cgc/bind_points.h"
#include "cgc/kernel_program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace cgc;

namespace {

KernelProgram sampleProgram() {
  KernelProgram program;
  program.bindings = {{"in", 64}, {"out", 256}};
  program.temporaries = {{64, 64}};
  KernelDesc relu;
  relu.op = "cgc_op.relu";
  relu.inputs.push_back(KernelOperand{CGC_DTYPE_FLOAT32, {1, 1, 4, 4}, {},
                                      KernelOperand::Storage::Binding, 0, 0});
  relu.outputs.push_back(KernelOperand{CGC_DTYPE_FLOAT32, {1, 1, 4, 4}, {},
                                       KernelOperand::Storage::Temporary, 0, 0});
  KernelDesc up;
  up.op = "cgc_op.upsample";
  up.setAttr("scale_size", AttrValue::ofInts({2, 2}));
  up.setAttr("mode", AttrValue::ofString("nearest"));
  up.setAttr("alpha", AttrValue::ofFloat(0.5));
  up.setAttr("to", AttrValue::ofDType(CGC_DTYPE_FLOAT16));
  up.inputs.push_back(relu.outputs[0]);
  up.inputs.push_back(std::nullopt);
  up.outputs.push_back(KernelOperand{CGC_DTYPE_FLOAT32, {1, 1, 8, 8}, {},
                                     KernelOperand::Storage::Binding, 1, 0});
  program.kernels = {relu, up};
  return program;
}

TEST(KernelProgram, RoundTripsThroughJSON) {
  KernelProgram program = sampleProgram();
  std::string error;
  ASSERT_TRUE(program.validate(error)) << error;
  KernelProgram back;
  ASSERT_TRUE(deserializeKernelProgram(serializeKernelProgram(program), back,
                                       error))
      << error;
  EXPECT_EQ(back, program);
  // Attributes stay sorted by name.
  EXPECT_EQ(back.kernels[1].attrs.front().first, "alpha");
  EXPECT_EQ(back.kernels[1].getInts("scale_size"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(back.kernels[1].getString("mode", ""), "nearest");
  EXPECT_FALSE(back.kernels[1].inputs[1].has_value());
}

TEST(KernelProgram, NonFiniteFloatsRoundTrip) {
  // JSON has no infinities or NaN: a max pool's -inf padding once came back
  // as null and failed to load.
  KernelProgram program = sampleProgram();
  const double inf = std::numeric_limits<double>::infinity();
  program.kernels[1].setAttr("value", AttrValue::ofFloat(-inf));
  program.kernels[1].setAttr("bounds", AttrValue::ofFloats({-inf, 1.5, inf}));
  program.kernels[1].setAttr("fill", AttrValue::ofFloat(std::nan("")));
  std::string error;
  KernelProgram back;
  std::string text = serializeKernelProgram(program);
  EXPECT_NE(text.find(R"("value":{"float":"-inf"})"), std::string::npos) << text;
  ASSERT_TRUE(deserializeKernelProgram(text, back, error)) << error;
  EXPECT_EQ(back.kernels[1].getFloat("value", 0), -inf);
  EXPECT_EQ(back.kernels[1].getFloats("bounds"), (std::vector<double>{-inf, 1.5, inf}));
  EXPECT_TRUE(std::isnan(back.kernels[1].getFloat("fill", 0)));
  // Other strings are not floats.
  std::string bad = text;
  bad.replace(bad.find("\"-inf\""), 6, "\"-huge\"");
  EXPECT_FALSE(deserializeKernelProgram(bad, back, error));
  EXPECT_NE(error.find("a float must be a number"), std::string::npos) << error;
}

TEST(KernelProgram, ConstantBindingsRoundTrip) {
  KernelProgram program = sampleProgram();
  program.bindings.push_back({"weights", 16, true});
  std::string error;
  KernelProgram back;
  std::string text = serializeKernelProgram(program);
  ASSERT_TRUE(deserializeKernelProgram(text, back, error)) << error;
  EXPECT_EQ(back, program);
  EXPECT_FALSE(back.bindings[0].constant);
  EXPECT_TRUE(back.bindings[2].constant);
  // The flag takes part in equality; programs without it read as before.
  back.bindings[2].constant = false;
  EXPECT_FALSE(back == program);
  EXPECT_EQ(serializeKernelProgram(sampleProgram()).find("constant"), std::string::npos);
}

TEST(KernelProgram, TemporariesInBindingsRoundTripAndAreChecked) {
  // A temporary may name the internal binding whose bytes it may live in
  // ("binding"): same size, internal, one temporary per binding.
  KernelProgram program = sampleProgram();
  program.bindings.push_back({"t", 64, false, true});
  program.temporaries[0].binding = 2;
  std::string error;
  ASSERT_TRUE(program.validate(error)) << error;
  KernelProgram back;
  ASSERT_TRUE(deserializeKernelProgram(serializeKernelProgram(program), back, error)) << error;
  EXPECT_EQ(back, program);
  EXPECT_EQ(back.temporaries[0].binding, 2);
  // Absent reads as -1 (no binding) and takes part in equality.
  EXPECT_NE(serializeKernelProgram(sampleProgram())
                .find("\"temporaries\":[{\"alignment\":64,\"bytes\":64}]"),
            std::string::npos);
  back.temporaries[0].binding = -1;
  EXPECT_FALSE(back == program);

  auto rejects = [&](auto change, const char *what) {
    KernelProgram bad = program;
    change(bad);
    std::string why;
    EXPECT_FALSE(bad.validate(why)) << what;
    EXPECT_NE(why.find(what), std::string::npos) << why;
    // The JSON reader runs the same checks.
    KernelProgram parsed;
    EXPECT_FALSE(deserializeKernelProgram(serializeKernelProgram(bad), parsed, why)) << what;
  };
  rejects([](KernelProgram &p) { p.temporaries[0].binding = 7; }, "lives in binding 7 of 3");
  rejects([](KernelProgram &p) { p.temporaries[0].binding = 0; }, "which is not internal");
  rejects([](KernelProgram &p) { p.bindings[2].bytes = 128; },
          "has 64 bytes but lives in binding 2 of 128");
  rejects(
      [](KernelProgram &p) {
        p.temporaries.push_back({64, 64, 2});
      },
      "which another temporary lives in");
}

TEST(KernelProgram, BindingDTypesRoundTrip) {
  // A binding's dtype (what a driver reports of the partition argument it
  // binds) is optional: absent reads as CGC_DTYPE_INVALID, unknown.
  KernelProgram program = sampleProgram();
  program.bindings[0].dtype = CGC_DTYPE_FLOAT32;
  std::string error;
  KernelProgram back;
  std::string text = serializeKernelProgram(program);
  EXPECT_NE(text.find("\"dtype\":\"float32\""), std::string::npos) << text;
  ASSERT_TRUE(deserializeKernelProgram(text, back, error)) << error;
  EXPECT_EQ(back.bindings[0].dtype, CGC_DTYPE_FLOAT32);
  EXPECT_EQ(back.bindings[1].dtype, CGC_DTYPE_INVALID);
  EXPECT_EQ(back, program);
  back.bindings[0].dtype = CGC_DTYPE_INT8;
  EXPECT_FALSE(back == program);
  std::string bad = text;
  const std::string field = "\"dtype\":\"float32\"";
  bad.replace(bad.find(field), field.size(), "\"dtype\":\"float99\"");
  EXPECT_FALSE(deserializeKernelProgram(bad, back, error));
  EXPECT_NE(error.find("unknown dtype 'float99'"), std::string::npos) << error;
}

TEST(KernelProgram, RejectsOperandsOutsideTheirBinding) {
  KernelProgram program = sampleProgram();
  program.bindings[1].bytes = 255; // one byte short of 1x1x8x8 floats
  std::string error;
  EXPECT_FALSE(program.validate(error));
  EXPECT_NE(error.find("kernel 1 (cgc_op.upsample) output #0 spans bytes "
                       "[0, 256) of a 255-byte binding"),
            std::string::npos)
      << error;
  program = sampleProgram();
  program.kernels[0].outputs[0].index = 3;
  EXPECT_FALSE(program.validate(error));
  EXPECT_NE(error.find("refers to temporary 3 of 1"), std::string::npos) << error;
}

TEST(KernelProgram, RejectsMalformedJSON) {
  KernelProgram program;
  std::string error;
  EXPECT_FALSE(deserializeKernelProgram("{", program, error));
  EXPECT_NE(error.find("malformed kernel program"), std::string::npos);
  EXPECT_FALSE(deserializeKernelProgram(
      R"({"version":1,"bindings":[],"temporaries":[],"kernels":[{"op":"x","attrs":{},"inputs":[{"dtype":"float99","shape":[1],"binding":0,"offset":0}],"outputs":[]}]})",
      program, error));
  EXPECT_NE(error.find("unknown dtype 'float99'"), std::string::npos) << error;
  EXPECT_FALSE(deserializeKernelProgram(
      R"({"version":7,"bindings":[],"temporaries":[],"kernels":[]})", program,
      error));
  EXPECT_NE(error.find("version 7"), std::string::npos) << error;
}

TEST(KernelOperand, StridedSpans) {
  KernelOperand transposed{CGC_DTYPE_FLOAT32, {4, 3}, {1, 4},
                           KernelOperand::Storage::Binding, 0, 0};
  EXPECT_FALSE(transposed.isContiguous());
  EXPECT_EQ(transposed.byteSpan(), 48u);
  KernelOperand broadcast{CGC_DTYPE_FLOAT32, {8, 3}, {0, 1},
                          KernelOperand::Storage::Binding, 0, 0};
  EXPECT_EQ(broadcast.byteSpan(), 12u);
  KernelOperand empty{CGC_DTYPE_INT64, {0, 5}, {}, KernelOperand::Storage::Binding, 0, 0};
  EXPECT_EQ(empty.byteSpan(), 0u);
}

TEST(BindPoints, RoundTripAndRejectBadKinds) {
  std::vector<BindPoint> points = {
      {"in", BindPointKind::Argument, 64, 16, CGC_DTYPE_FLOAT32, {1, 1, 4, 4}},
      {"w1", BindPointKind::Constant, 36, 64, CGC_DTYPE_FLOAT32, {1, 1, 3, 3}},
      {"scratch", BindPointKind::Scratch, 64, 64, CGC_DTYPE_FLOAT32, {1, 1, 4, 4}},
      {"out", BindPointKind::Output, 256, 16, CGC_DTYPE_FLOAT32, {1, 1, 8, 8}}};
  std::vector<BindPoint> back;
  std::string error;
  ASSERT_TRUE(deserializeBindPoints(serializeBindPoints(points), back, error))
      << error;
  EXPECT_EQ(back, points);
  EXPECT_FALSE(deserializeBindPoints(
      R"([{"name":"x","kind":"texture","bytes":1,"alignment":1,"dtype":"float32","shape":[1]}])",
      back, error));
  EXPECT_NE(error.find("unknown bind point kind 'texture'"), std::string::npos);
  EXPECT_FALSE(deserializeBindPoints(
      R"([{"name":"x","kind":"output","bytes":1,"alignment":3,"dtype":"float32","shape":[1]}])",
      back, error));
  EXPECT_NE(error.find("not a power of two"), std::string::npos);
}

} // namespace
