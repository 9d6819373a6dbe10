//===- KernelLoweringTest.cpp - Partition IR to kernel programs -----------===//

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Common/KernelLowering.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

class KernelLoweringTest : public ::testing::Test {
protected:
  KernelLoweringTest() {
    DialectRegistry registry;
    cgc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Lowers the one partition of `text`; fails the test on a parse error.
  bool lower(const std::string &text, cgc::KernelProgram &program,
             std::string &error) {
    std::string parseError;
    module = cgc::parseCGCModule(&context, text, parseError);
    EXPECT_TRUE(module) << parseError;
    if (!module)
      return false;
    return cgc::lowerPartitionModuleToKernelProgram(*module, program, error);
  }

  MLIRContext context;
  OwningOpRef<cgc::ModuleOp> module;
};

// A convolution without bias fused with a relu in one subgraph: the
// convolution's absent optional bias is a null operand, its default `groups`
// is explicit, and the intermediate lives in a temporary.
TEST_F(KernelLoweringTest, ConvReluWithTemporaryAndDefaults) {
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @convRelu attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<1x2x4x4x!cgc.float32>, %w: !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32> {
      %c = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x2x4x4x!cgc.float32>, !cgc.tensor<constant 2x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
      %r = cgc_op.relu(%c) : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
      cgc.return %r : !cgc.tensor<1x2x4x4x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<1x2x4x4x!cgc.float32> {cgc.name = "x"}, %w: !cgc.memref<constant 2x2x3x3x!cgc.float32>, %y: !cgc.memref<1x2x4x4x!cgc.float32>) {
    cgc.invoke @convRelu(%x, %w, %y) : !cgc.memref<1x2x4x4x!cgc.float32>, !cgc.memref<constant 2x2x3x3x!cgc.float32>, !cgc.memref<1x2x4x4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  cgc::KernelProgram program;
  std::string error;
  ASSERT_TRUE(lower(text, program, error)) << error;

  ASSERT_EQ(program.bindings.size(), 3u);
  EXPECT_EQ(program.bindings[0].name, "x");
  EXPECT_EQ(program.bindings[1].name, "bp1");
  EXPECT_EQ(program.bindings[0].bytes, 1u * 2 * 4 * 4 * 4);
  EXPECT_EQ(program.bindings[1].bytes, 2u * 2 * 3 * 3 * 4);
  ASSERT_EQ(program.temporaries.size(), 1u);
  EXPECT_EQ(program.temporaries[0].bytes, 1u * 2 * 4 * 4 * 4);

  ASSERT_EQ(program.kernels.size(), 2u);
  const cgc::KernelDesc &conv = program.kernels[0];
  EXPECT_EQ(conv.op, "cgc_op.convolution");
  ASSERT_EQ(conv.inputs.size(), 3u);
  ASSERT_TRUE(conv.inputs[0].has_value());
  EXPECT_EQ(conv.inputs[0]->storage, cgc::KernelOperand::Storage::Binding);
  EXPECT_EQ(conv.inputs[0]->index, 0u);
  EXPECT_EQ(conv.inputs[1]->index, 1u);
  EXPECT_FALSE(conv.inputs[2].has_value()) << "absent bias must be null";
  ASSERT_EQ(conv.outputs.size(), 1u);
  EXPECT_EQ(conv.outputs[0].storage, cgc::KernelOperand::Storage::Temporary);
  EXPECT_EQ(conv.outputs[0].dtype, CGC_DTYPE_FLOAT32);
  EXPECT_EQ(conv.outputs[0].shape, (std::vector<int64_t>{1, 2, 4, 4}));
  // The default is written out.
  ASSERT_NE(conv.attr("groups"), nullptr);
  EXPECT_EQ(conv.attr("groups")->kind, cgc::AttrValue::Kind::Int);
  EXPECT_EQ(conv.getInt("groups", -1), 1);
  EXPECT_EQ(conv.getInts("start_padding"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv.attr("strides")->kind, cgc::AttrValue::Kind::Ints);

  const cgc::KernelDesc &relu = program.kernels[1];
  EXPECT_EQ(relu.op, "cgc_op.relu");
  ASSERT_EQ(relu.inputs.size(), 1u);
  EXPECT_EQ(relu.inputs[0]->storage, cgc::KernelOperand::Storage::Temporary);
  EXPECT_EQ(relu.outputs[0].storage, cgc::KernelOperand::Storage::Binding);
  EXPECT_EQ(relu.outputs[0].index, 2u);

  // What the fallback target stores, read back as written.
  cgc::KernelProgram back;
  ASSERT_TRUE(cgc::deserializeKernelProgram(cgc::serializeKernelProgram(program),
                                            back, error))
      << error;
  EXPECT_EQ(back, program);
}

// Every attribute kind, variadic operands and results.
TEST_F(KernelLoweringTest, AttributeKindsAndVariadics) {
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%a: !cgc.tensor<2x3x!cgc.float32>, %b: !cgc.tensor<3x4x!cgc.float32>) -> (!cgc.tensor<2x4x!cgc.float32>, !cgc.tensor<2x4x!cgc.float16>, !cgc.tensor<6x3x!cgc.float32>, !cgc.tensor<1x3x!cgc.float32>, !cgc.tensor<1x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>) {
      %g = cgc_op.gemm(%a, %b) {alpha = 2.0 : f32} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<3x4x!cgc.float32>) -> !cgc.tensor<2x4x!cgc.float32>
      %h = cgc_op.cast(%g) {to = !cgc.float16} : (!cgc.tensor<2x4x!cgc.float32>) -> !cgc.tensor<2x4x!cgc.float16>
      %c = cgc_op.concat(%a, %a, %a) {axis = 0} : (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<6x3x!cgc.float32>
      %s:2 = cgc_op.split(%a) {axis = 0, sizes = [1, 1]} : (!cgc.tensor<2x3x!cgc.float32>) -> (!cgc.tensor<1x3x!cgc.float32>, !cgc.tensor<1x3x!cgc.float32>)
      %e = cgc_op.gelu(%a) : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
      cgc.return %g, %h, %c, %s#0, %s#1, %e : !cgc.tensor<2x4x!cgc.float32>, !cgc.tensor<2x4x!cgc.float16>, !cgc.tensor<6x3x!cgc.float32>, !cgc.tensor<1x3x!cgc.float32>, !cgc.tensor<1x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.float32>
    }
  }
  cgc.partition @p(%a: !cgc.memref<2x3x!cgc.float32>, %b: !cgc.memref<3x4x!cgc.float32>, %g: !cgc.memref<2x4x!cgc.float32>, %h: !cgc.memref<2x4x!cgc.float16>, %c: !cgc.memref<6x3x!cgc.float32>, %s0: !cgc.memref<1x3x!cgc.float32>, %s1: !cgc.memref<1x3x!cgc.float32>, %e: !cgc.memref<2x3x!cgc.float32>) {
    cgc.invoke @s(%a, %b, %g, %h, %c, %s0, %s1, %e) : !cgc.memref<2x3x!cgc.float32>, !cgc.memref<3x4x!cgc.float32>, !cgc.memref<2x4x!cgc.float32>, !cgc.memref<2x4x!cgc.float16>, !cgc.memref<6x3x!cgc.float32>, !cgc.memref<1x3x!cgc.float32>, !cgc.memref<1x3x!cgc.float32>, !cgc.memref<2x3x!cgc.float32>
    cgc.return
  }
}
)mlir";
  cgc::KernelProgram program;
  std::string error;
  ASSERT_TRUE(lower(text, program, error)) << error;
  ASSERT_EQ(program.kernels.size(), 5u);
  EXPECT_TRUE(program.temporaries.empty()) << "every value is an output";

  const cgc::KernelDesc &gemm = program.kernels[0];
  EXPECT_EQ(gemm.inputs.size(), 3u);
  EXPECT_FALSE(gemm.inputs[2].has_value());
  EXPECT_EQ(gemm.attr("alpha")->kind, cgc::AttrValue::Kind::Float);
  EXPECT_DOUBLE_EQ(gemm.getFloat("alpha", 0), 2.0);
  EXPECT_DOUBLE_EQ(gemm.getFloat("beta", 0), 1.0); // default
  EXPECT_EQ(gemm.attr("transpose_a")->kind, cgc::AttrValue::Kind::Bool);
  EXPECT_FALSE(gemm.getBool("transpose_b", true));

  const cgc::KernelDesc &cast = program.kernels[1];
  ASSERT_NE(cast.attr("to"), nullptr);
  EXPECT_EQ(cast.attr("to")->kind, cgc::AttrValue::Kind::DType);
  EXPECT_EQ(cast.attr("to")->dtype, CGC_DTYPE_FLOAT16);
  EXPECT_EQ(cast.outputs[0].dtype, CGC_DTYPE_FLOAT16);

  const cgc::KernelDesc &concat = program.kernels[2];
  ASSERT_EQ(concat.inputs.size(), 3u) << "variadic operands are flattened";
  for (const auto &input : concat.inputs)
    EXPECT_EQ(input->index, 0u);

  const cgc::KernelDesc &split = program.kernels[3];
  ASSERT_EQ(split.outputs.size(), 2u);
  EXPECT_EQ(split.outputs[0].index, 5u);
  EXPECT_EQ(split.outputs[1].index, 6u);

  const cgc::KernelDesc &gelu = program.kernels[4];
  EXPECT_EQ(gelu.attr("approximate")->kind, cgc::AttrValue::Kind::String);
  EXPECT_EQ(gelu.getString("approximate", ""), "none"); // default
}

// Views inside a partition become byte offsets; strided bind points keep
// their strides; a returned input and a value returned twice are copied.
TEST_F(KernelLoweringTest, OffsetsStridesAndCopies) {
  const char *text = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x4x!cgc.float32>) -> (!cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>) {
      %n = cgc_op.neg(%x) : (!cgc.tensor<4x4x!cgc.float32>) -> !cgc.tensor<4x4x!cgc.float32>
      cgc.return %n, %x, %n : !cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>, !cgc.tensor<4x4x!cgc.float32>
    }
  }
  cgc.partition @p(%in: !cgc.memref<4x4x!cgc.float32, strides = [1, 4]>, %buf: !cgc.memref<192x!cgc.int8>) {
    %o0 = cgc.view_memref %buf[0] : !cgc.memref<192x!cgc.int8> to !cgc.memref<4x4x!cgc.float32>
    %o1 = cgc.view_memref %buf[64] : !cgc.memref<192x!cgc.int8> to !cgc.memref<4x4x!cgc.float32>
    %o2 = cgc.view_memref %buf[128] : !cgc.memref<192x!cgc.int8> to !cgc.memref<4x4x!cgc.float32>
    cgc.invoke @s(%in, %o0, %o1, %o2) : !cgc.memref<4x4x!cgc.float32, strides = [1, 4]>, !cgc.memref<4x4x!cgc.float32>, !cgc.memref<4x4x!cgc.float32>, !cgc.memref<4x4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  cgc::KernelProgram program;
  std::string error;
  ASSERT_TRUE(lower(text, program, error)) << error;
  ASSERT_EQ(program.kernels.size(), 3u);
  const cgc::KernelDesc &neg = program.kernels[0];
  EXPECT_EQ(neg.inputs[0]->strides, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(neg.outputs[0].index, 1u);
  EXPECT_EQ(neg.outputs[0].offset, 0u);
  // Slot 1 returns the input: a copy into the second view.
  EXPECT_EQ(program.kernels[1].op, "cgc_op.identity");
  EXPECT_EQ(program.kernels[1].inputs[0]->index, 0u);
  EXPECT_EQ(program.kernels[1].outputs[0].offset, 64u);
  // Slot 2 returns the negation again: a copy of slot 0 into the third view.
  EXPECT_EQ(program.kernels[2].op, "cgc_op.identity");
  EXPECT_EQ(program.kernels[2].inputs[0]->offset, 0u);
  EXPECT_EQ(program.kernels[2].outputs[0].offset, 128u);
}

// What cannot be lowered fails with an error that names the op.
TEST_F(KernelLoweringTest, ErrorsNameTheOp) {
  const char *constantInside = R"mlir(
cgc.module {
  cgc.subgraph @s attributes {origin = "t"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %k = cgc.constant("k") : !cgc.tensor<constant 4x!cgc.float32>
      %a = cgc_op.add(%x, %k) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %a : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.partition @p(%x: !cgc.memref<4x!cgc.float32>, %y: !cgc.memref<4x!cgc.float32>) {
    cgc.invoke @s(%x, %y) : !cgc.memref<4x!cgc.float32>, !cgc.memref<4x!cgc.float32>
    cgc.return
  }
}
)mlir";
  cgc::KernelProgram program;
  std::string error;
  EXPECT_FALSE(lower(constantInside, program, error));
  EXPECT_NE(error.find("'cgc.constant' op cannot be lowered to a kernel "
                       "program: a constant inside a functional definition"),
            std::string::npos)
      << error;

  const char *twoPartitions = R"mlir(
cgc.module {
  cgc.partition @p(%x: !cgc.memref<4x!cgc.float32>) {
    cgc.return
  }
  cgc.partition @q(%x: !cgc.memref<4x!cgc.float32>) {
    cgc.return
  }
}
)mlir";
  error.clear();
  EXPECT_FALSE(lower(twoPartitions, program, error));
  EXPECT_NE(error.find("exactly one cgc.partition, found 2"), std::string::npos)
      << error;
}

TEST_F(KernelLoweringTest, OperandLayoutsComeFromODS) {
  EXPECT_EQ(cgc::getOperandLayout("cgc_op.convolution").value_or(""), "rro");
  EXPECT_EQ(cgc::getOperandLayout("cgc_op.concat").value_or(""), "v");
  EXPECT_EQ(cgc::getOperandLayout("cgc_op.add").value_or(""), "rr");
  EXPECT_FALSE(cgc::getOperandLayout("cgc.invoke").has_value());
}

} // namespace
