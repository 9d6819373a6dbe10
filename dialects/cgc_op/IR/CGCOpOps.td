//===- CGCOpOps.td - Abstract ML layers --------------------*- tablegen -*-===//

#ifndef CGCOP_OPS_TD
#define CGCOP_OPS_TD

include "cgc_op/IR/CGCOpBase.td"

//===----------------------------------------------------------------------===//
// Elementwise unary
//===----------------------------------------------------------------------===//

def CGCOp_ReluOp : CGCOp_UnaryElementwiseOp<"relu", CGCOp_SignedTensor,
    "Rectified linear unit", "Computes `max(x, 0)`.">;
def CGCOp_SigmoidOp : CGCOp_UnaryElementwiseOp<"sigmoid", CGCOp_FloatTensor,
    "Logistic sigmoid", "Computes `1 / (1 + exp(-x))`.">;
def CGCOp_TanhOp : CGCOp_UnaryElementwiseOp<"tanh", CGCOp_FloatTensor,
    "Hyperbolic tangent", "Computes `tanh(x)`.">;
def CGCOp_ErfOp : CGCOp_UnaryElementwiseOp<"erf", CGCOp_FloatTensor,
    "Gauss error function", "Computes `erf(x)`.">;
def CGCOp_ExpOp : CGCOp_UnaryElementwiseOp<"exp", CGCOp_FloatTensor,
    "Exponential", "Computes `exp(x)`.">;
def CGCOp_LogOp : CGCOp_UnaryElementwiseOp<"log", CGCOp_FloatTensor,
    "Natural logarithm", "Computes `log(x)`.">;
def CGCOp_SqrtOp : CGCOp_UnaryElementwiseOp<"sqrt", CGCOp_FloatTensor,
    "Square root", "Computes `sqrt(x)`.">;
def CGCOp_ReciprocalOp : CGCOp_UnaryElementwiseOp<"reciprocal", CGCOp_FloatTensor,
    "Reciprocal", "Computes `1 / x`.">;
def CGCOp_NegOp : CGCOp_UnaryElementwiseOp<"neg", CGCOp_SignedTensor,
    "Negation", "Computes `-x`.">;
def CGCOp_AbsOp : CGCOp_UnaryElementwiseOp<"abs", CGCOp_NumericTensor,
    "Absolute value", "Computes `|x|`.">;
def CGCOp_SignOp : CGCOp_UnaryElementwiseOp<"sign", CGCOp_NumericTensor,
    "Sign", "Computes -1, 0 or 1 by the sign of `x`.">;
def CGCOp_FloorOp : CGCOp_UnaryElementwiseOp<"floor", CGCOp_FloatTensor,
    "Floor", "Rounds toward negative infinity.">;
def CGCOp_CeilOp : CGCOp_UnaryElementwiseOp<"ceil", CGCOp_FloatTensor,
    "Ceiling", "Rounds toward positive infinity.">;
def CGCOp_RoundOp : CGCOp_UnaryElementwiseOp<"round", CGCOp_FloatTensor,
    "Round half to even", "Rounds to the nearest integer, ties to even.">;
def CGCOp_SinOp : CGCOp_UnaryElementwiseOp<"sin", CGCOp_FloatTensor, "Sine", "Computes `sin(x)`.">;
def CGCOp_CosOp : CGCOp_UnaryElementwiseOp<"cos", CGCOp_FloatTensor, "Cosine", "Computes `cos(x)`.">;
def CGCOp_TanOp : CGCOp_UnaryElementwiseOp<"tan", CGCOp_FloatTensor, "Tangent", "Computes `tan(x)`.">;
def CGCOp_AsinOp : CGCOp_UnaryElementwiseOp<"asin", CGCOp_FloatTensor, "Arcsine", "Computes `asin(x)`.">;
def CGCOp_AcosOp : CGCOp_UnaryElementwiseOp<"acos", CGCOp_FloatTensor, "Arccosine", "Computes `acos(x)`.">;
def CGCOp_AtanOp : CGCOp_UnaryElementwiseOp<"atan", CGCOp_FloatTensor, "Arctangent", "Computes `atan(x)`.">;
def CGCOp_SinhOp : CGCOp_UnaryElementwiseOp<"sinh", CGCOp_FloatTensor, "Hyperbolic sine", "Computes `sinh(x)`.">;
def CGCOp_CoshOp : CGCOp_UnaryElementwiseOp<"cosh", CGCOp_FloatTensor, "Hyperbolic cosine", "Computes `cosh(x)`.">;
def CGCOp_AsinhOp : CGCOp_UnaryElementwiseOp<"asinh", CGCOp_FloatTensor, "Inverse hyperbolic sine", "Computes `asinh(x)`.">;
def CGCOp_AcoshOp : CGCOp_UnaryElementwiseOp<"acosh", CGCOp_FloatTensor, "Inverse hyperbolic cosine", "Computes `acosh(x)`.">;
def CGCOp_AtanhOp : CGCOp_UnaryElementwiseOp<"atanh", CGCOp_FloatTensor, "Inverse hyperbolic tangent", "Computes `atanh(x)`.">;
def CGCOp_SoftplusOp : CGCOp_UnaryElementwiseOp<"softplus", CGCOp_FloatTensor,
    "Softplus", "Computes `log(1 + exp(x))`.">;
def CGCOp_SoftsignOp : CGCOp_UnaryElementwiseOp<"softsign", CGCOp_FloatTensor,
    "Softsign", "Computes `x / (1 + |x|)`.">;
def CGCOp_HardSwishOp : CGCOp_UnaryElementwiseOp<"hard_swish", CGCOp_FloatTensor,
    "Hard swish", "Computes `x * max(0, min(1, x / 6 + 0.5))`.">;
def CGCOp_MishOp : CGCOp_UnaryElementwiseOp<"mish", CGCOp_FloatTensor,
    "Mish", "Computes `x * tanh(softplus(x))`.">;
def CGCOp_IsNaNOp : CGCOp_UnaryElementwiseOp<"isnan", CGCOp_FloatTensor,
    "Not-a-number test", "True where `x` is NaN.", "bool">;
def CGCOp_NotOp : CGCOp_UnaryElementwiseOp<"not", CGCOp_BoolTensor,
    "Logical not", "Computes `!x`.">;
def CGCOp_IdentityOp : CGCOp_UnaryElementwiseOp<"identity", CGCOp_AnyTensor,
    "Identity", "Returns its input."> {
  let hasFolder = 1;
}

// Elementwise unary ops with parameters.
class CGCOp_ParamUnaryOp<string mnemonic, string summaryText, string meaning,
                         dag params, string example>
    : CGCOp_Op<mnemonic, [CGCOp_Elementwise]> {
  let summary = summaryText;
  let description = meaning # [{

    Elementwise: the result has the input's shape and element type.

    ```mlir
    }] # example # [{

    ```
  }];
  let arguments = !con((ins CGCOp_FloatTensor:$input), params);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferUnaryElementwise(location,
          adaptor.getInput().getType(), false, inferred);
    }
  }];
}

def CGCOp_GeluOp : CGCOp_ParamUnaryOp<"gelu", "Gaussian error linear unit",
    "Computes `0.5 x (1 + erf(x / sqrt(2)))`, or with `approximate = \"tanh\"` "
    "`0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.",
    (ins CGCOp_DefaultStrEnumAttr<["none", "tanh"], "none">:$approximate),
    "%y = cgc_op.gelu(%x) {approximate = \"tanh\"} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_LeakyReluOp : CGCOp_ParamUnaryOp<"leaky_relu", "Leaky rectified linear unit",
    "Computes `x` where `x >= 0`, else `alpha * x`.",
    (ins DefaultValuedAttr<F32Attr, "0.01">:$alpha),
    "%y = cgc_op.leaky_relu(%x) {alpha = 0.1 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_EluOp : CGCOp_ParamUnaryOp<"elu", "Exponential linear unit",
    "Computes `x` where `x >= 0`, else `alpha * (exp(x) - 1)`.",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha),
    "%y = cgc_op.elu(%x) {alpha = 1.0 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_SeluOp : CGCOp_ParamUnaryOp<"selu", "Scaled exponential linear unit",
    "Computes `gamma * x` where `x > 0`, else `gamma * alpha * (exp(x) - 1)`.",
    (ins DefaultValuedAttr<F32Attr, "1.67326319217681884765625">:$alpha,
         DefaultValuedAttr<F32Attr, "1.05070102214813232421875">:$gamma),
    "%y = cgc_op.selu(%x) : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_CeluOp : CGCOp_ParamUnaryOp<"celu", "Continuously differentiable ELU",
    "Computes `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`.",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha),
    "%y = cgc_op.celu(%x) {alpha = 2.0 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_HardSigmoidOp : CGCOp_ParamUnaryOp<"hard_sigmoid", "Hard sigmoid",
    "Computes `max(0, min(1, alpha * x + beta))`.",
    (ins DefaultValuedAttr<F32Attr, "0.2">:$alpha,
         DefaultValuedAttr<F32Attr, "0.5">:$beta),
    "%y = cgc_op.hard_sigmoid(%x) {alpha = 0.2 : f32, beta = 0.5 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_ThresholdedReluOp : CGCOp_ParamUnaryOp<"thresholded_relu",
    "Thresholded rectified linear unit",
    "Computes `x` where `x > alpha`, else 0.",
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha),
    "%y = cgc_op.thresholded_relu(%x) {alpha = 1.0 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;
def CGCOp_ShrinkOp : CGCOp_ParamUnaryOp<"shrink", "Shrink",
    "Computes `x + bias` where `x < -lambd`, `x - bias` where `x > lambd`, else 0.",
    (ins DefaultValuedAttr<F32Attr, "0.0">:$bias,
         DefaultValuedAttr<F32Attr, "0.5">:$lambd),
    "%y = cgc_op.shrink(%x) {lambd = 1.5 : f32} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>">;

def CGCOp_ClipOp : CGCOp_Op<"clip", [CGCOp_Elementwise]> {
  let summary = "Clamp to a range";
  let description = [{
    Computes `min(max(x, min), max)`; a missing bound does not clamp. Bounds
    are compile-time values (ReLU6 is `clip {min = 0.0, max = 6.0}`).

    ```mlir
    %y = cgc_op.clip(%x) {min = 0.0, max = 6.0} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, OptionalAttr<F64Attr>:$min,
                       OptionalAttr<F64Attr>:$max);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_IsInfOp : CGCOp_Op<"isinf", [CGCOp_Elementwise]> {
  let summary = "Infinity test";
  let description = [{
    True where `x` is +inf (if `detect_positive`) or -inf (if
    `detect_negative`).

    ```mlir
    %y = cgc_op.isinf(%x) : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.bool>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_positive,
                       DefaultValuedAttr<BoolAttr, "true">:$detect_negative);
  let results = (outs CGCOp_BoolTensor:$output);
}

def CGCOp_CastOp : CGCOp_Op<"cast", [CGCOp_Elementwise]> {
  let summary = "Element type conversion";
  let description = [{
    Converts every element to the element type `to`. Float to integer
    truncates toward zero; to bool gives `x != 0`.

    ```mlir
    %y = cgc_op.cast(%x) {to = !cgc.float16} : (!cgc.tensor<8x!cgc.float32>) -> !cgc.tensor<8x!cgc.float16>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, TypeAttr:$to);
  let results = (outs CGCOp_Tensor:$output);
  // A cast to the input's own type folds to the input.
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise binary and ternary
//===----------------------------------------------------------------------===//

def CGCOp_AddOp : CGCOp_BinaryElementwiseOp<"add", CGCOp_NumericTensor,
    "Addition", "Computes `lhs + rhs`.", "same", [Commutative]>;
def CGCOp_SubOp : CGCOp_BinaryElementwiseOp<"sub", CGCOp_NumericTensor,
    "Subtraction", "Computes `lhs - rhs`.">;
def CGCOp_MulOp : CGCOp_BinaryElementwiseOp<"mul", CGCOp_NumericTensor,
    "Multiplication", "Computes `lhs * rhs`.", "same", [Commutative]>;
def CGCOp_DivOp : CGCOp_BinaryElementwiseOp<"div", CGCOp_NumericTensor,
    "Division", "Computes `lhs / rhs`; integer division truncates toward zero.">;
def CGCOp_MaxOp : CGCOp_BinaryElementwiseOp<"max", CGCOp_NumericTensor,
    "Maximum", "Computes `max(lhs, rhs)`.", "same", [Commutative]>;
def CGCOp_MinOp : CGCOp_BinaryElementwiseOp<"min", CGCOp_NumericTensor,
    "Minimum", "Computes `min(lhs, rhs)`.", "same", [Commutative]>;
def CGCOp_EqualOp : CGCOp_BinaryElementwiseOp<"equal", CGCOp_AnyTensor,
    "Equality", "True where `lhs == rhs`.", "bool", [Commutative]>;
def CGCOp_LessOp : CGCOp_BinaryElementwiseOp<"less", CGCOp_NumericTensor,
    "Less than", "True where `lhs < rhs`.", "bool">;
def CGCOp_LessOrEqualOp : CGCOp_BinaryElementwiseOp<"less_or_equal", CGCOp_NumericTensor,
    "Less than or equal", "True where `lhs <= rhs`.", "bool">;
def CGCOp_GreaterOp : CGCOp_BinaryElementwiseOp<"greater", CGCOp_NumericTensor,
    "Greater than", "True where `lhs > rhs`.", "bool">;
def CGCOp_GreaterOrEqualOp : CGCOp_BinaryElementwiseOp<"greater_or_equal", CGCOp_NumericTensor,
    "Greater than or equal", "True where `lhs >= rhs`.", "bool">;
def CGCOp_AndOp : CGCOp_BinaryElementwiseOp<"and", CGCOp_BoolTensor,
    "Logical and", "Computes `lhs && rhs`.", "same", [Commutative]>;
def CGCOp_OrOp : CGCOp_BinaryElementwiseOp<"or", CGCOp_BoolTensor,
    "Logical or", "Computes `lhs || rhs`.", "same", [Commutative]>;
def CGCOp_XorOp : CGCOp_BinaryElementwiseOp<"xor", CGCOp_BoolTensor,
    "Logical exclusive or", "Computes `lhs != rhs`.", "same", [Commutative]>;

def CGCOp_ModOp : CGCOp_Op<"mod", [CGCOp_Elementwise]> {
  let summary = "Remainder";
  let description = [{
    The remainder of `lhs / rhs` with broadcasting. With `fmod` the result
    takes the sign of the dividend (C `fmod`); otherwise that of the divisor
    (Python `%`, integers only).

    ```mlir
    %z = cgc_op.mod(%x, %y) {fmod = true} : (!cgc.tensor<6x!cgc.float32>, !cgc.tensor<6x!cgc.float32>) -> !cgc.tensor<6x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$lhs, CGCOp_NumericTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_PowOp : CGCOp_Op<"pow", [CGCOp_Elementwise]> {
  let summary = "Power";
  let description = [{
    Computes `base ^ exponent` with broadcasting. The exponent may have a
    different numeric element type; the result has the base's.

    ```mlir
    %z = cgc_op.pow(%x, %e) : (!cgc.tensor<6x!cgc.float32>, !cgc.tensor<!cgc.float32>) -> !cgc.tensor<6x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$base, CGCOp_NumericTensor:$exponent);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_BitShiftOp : CGCOp_Op<"bit_shift", [CGCOp_Elementwise]> {
  let summary = "Bitwise shift of unsigned integers";
  let description = [{
    Shifts `lhs` left or right by `rhs` bits, with broadcasting.

    ```mlir
    %z = cgc_op.bit_shift(%x, %n) {direction = "left"} : (!cgc.tensor<3x!cgc.uint32>, !cgc.tensor<3x!cgc.uint32>) -> !cgc.tensor<3x!cgc.uint32>
    ```
  }];
  let arguments = (ins CGCOp_IntegerTensor:$lhs, CGCOp_IntegerTensor:$rhs,
                       CGCOp_StrEnumAttr<["left", "right"]>:$direction);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_PReluOp : CGCOp_Op<"prelu", [CGCOp_Elementwise]> {
  let summary = "Parametric rectified linear unit";
  let description = [{
    Computes `x` where `x >= 0`, else `slope * x`; `slope` broadcasts to the
    shape of `x` (unidirectionally).

    ```mlir
    %y = cgc_op.prelu(%x, %slope) : (!cgc.tensor<1x8x4x4x!cgc.float32>, !cgc.tensor<8x1x1x!cgc.float32>) -> !cgc.tensor<1x8x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_SignedTensor:$input, CGCOp_SignedTensor:$slope);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_WhereOp : CGCOp_Op<"where", [CGCOp_Elementwise]> {
  let summary = "Elementwise selection";
  let description = [{
    Picks `x` where `condition` is true, else `y`, with broadcasting over all
    three operands.

    ```mlir
    %z = cgc_op.where(%c, %x, %y) : (!cgc.tensor<2x2x!cgc.bool>, !cgc.tensor<2x2x!cgc.float32>, !cgc.tensor<2x2x!cgc.float32>) -> !cgc.tensor<2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_BoolTensor:$condition, CGCOp_AnyTensor:$x,
                       CGCOp_AnyTensor:$y);
  let results = (outs CGCOp_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Convolution and matrix multiplication
//===----------------------------------------------------------------------===//

def CGCOp_ConvolutionOp : CGCOp_Op<"convolution"> {
  let summary = "N-dimensional grouped convolution";
  let description = [{
    Cross-correlates `input` (N x C x D1 x ... x Dn) with `weight` (M x C/groups
    x K1 x ... x Kn) and adds the optional `bias` (M). Every spatial attribute
    has one entry per spatial dimension: `strides`, `dilations`, and the
    padding before (`start_padding`) and after (`end_padding`) the data.
    Output spatial size is
    `(D + start + end - dilation * (K - 1) - 1) / stride + 1` (floor).

    ```mlir
    %y = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1], groups = 1}
        : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<constant 1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x!cgc.float32>) -> !cgc.tensor<1x1x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$weight,
                       Optional<CGCOp_FloatTensor>:$bias,
                       I64ArrayAttr:$strides, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$start_padding, I64ArrayAttr:$end_padding,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_ConvTransposeOp : CGCOp_Op<"conv_transpose"> {
  let summary = "N-dimensional grouped transposed convolution";
  let description = [{
    The gradient of `cgc_op.convolution` with respect to its input, used for
    learned upsampling. `weight` is C x M/groups x K1 x ... x Kn. The output
    spatial size is
    `stride * (D - 1) + output_padding + dilation * (K - 1) + 1 - start - end`.

    ```mlir
    %y = cgc_op.conv_transpose(%x, %w) {strides = [2, 2], dilations = [1, 1], start_padding = [0, 0], end_padding = [0, 0], output_padding = [0, 0], groups = 1}
        : (!cgc.tensor<1x1x3x3x!cgc.float32>, !cgc.tensor<constant 1x2x3x3x!cgc.float32>) -> !cgc.tensor<1x2x7x7x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$weight,
                       Optional<CGCOp_FloatTensor>:$bias,
                       I64ArrayAttr:$strides, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$start_padding, I64ArrayAttr:$end_padding,
                       I64ArrayAttr:$output_padding,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_MatMulOp : CGCOp_Op<"matmul"> {
  let summary = "Batched matrix product with numpy semantics";
  let description = [{
    Multiplies the last two dimensions, broadcasting the leading (batch)
    dimensions; a 1-D operand is promoted to a matrix and the added dimension
    removed afterwards, as in `numpy.matmul`. `transpose_a`/`transpose_b`
    swap the last two dimensions of an operand of rank >= 2 first.

    ```mlir
    %c = cgc_op.matmul(%a, %b) : (!cgc.tensor<12x128x64x!cgc.float32>, !cgc.tensor<12x64x128x!cgc.float32>) -> !cgc.tensor<12x128x128x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$a, CGCOp_NumericTensor:$b,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_GemmOp : CGCOp_Op<"gemm"> {
  let summary = "General matrix multiplication";
  let description = [{
    Computes `alpha * A' x B' + beta * C` for 2-D `a` and `b`, where `A'` is
    `a` transposed if `transpose_a` (likewise `B'`), and the optional `c`
    broadcasts to the M x N result.

    ```mlir
    %y = cgc_op.gemm(%x, %w, %bias) {transpose_b = true} : (!cgc.tensor<1x2048x!cgc.float32>, !cgc.tensor<constant 1000x2048x!cgc.float32>, !cgc.tensor<constant 1000x!cgc.float32>) -> !cgc.tensor<1x1000x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$a, CGCOp_NumericTensor:$b,
                       Optional<CGCOp_NumericTensor>:$c,
                       DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F32Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs CGCOp_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def CGCOp_BatchNormOp : CGCOp_Op<"batch_norm"> {
  let summary = "Batch normalization (inference)";
  let description = [{
    Computes `scale * (x - mean) / sqrt(variance + epsilon) + bias` per
    channel (dimension 1); `scale`, `bias`, `mean` and `variance` have one
    element per channel.

    ```mlir
    %y = cgc_op.batch_norm(%x, %s, %b, %m, %v) {epsilon = 1.0e-05 : f32}
        : (!cgc.tensor<1x8x4x4x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>) -> !cgc.tensor<1x8x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$scale,
                       CGCOp_FloatTensor:$bias, CGCOp_FloatTensor:$mean,
                       CGCOp_FloatTensor:$variance,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_InstanceNormOp : CGCOp_Op<"instance_norm"> {
  let summary = "Instance normalization";
  let description = [{
    Normalizes each (batch, channel) slice over its spatial dimensions to zero
    mean and unit variance, then applies per-channel `scale` and `bias`.

    ```mlir
    %y = cgc_op.instance_norm(%x, %s, %b) {epsilon = 1.0e-05 : f32}
        : (!cgc.tensor<1x8x4x4x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>) -> !cgc.tensor<1x8x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$scale,
                       CGCOp_FloatTensor:$bias,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_LayerNormOp : CGCOp_Op<"layer_norm"> {
  let summary = "Layer normalization";
  let description = [{
    Normalizes over the dimensions from `axis` to the last to zero mean and
    unit variance (`(x - mean) / sqrt(var + epsilon)`), then multiplies by
    `scale` and adds the optional `bias`, which broadcast to the normalized
    shape.

    ```mlir
    %y = cgc_op.layer_norm(%x, %g, %b) {axis = 2, epsilon = 9.99999996E-13 : f32}
        : (!cgc.tensor<1x128x768x!cgc.float32>, !cgc.tensor<constant 768x!cgc.float32>, !cgc.tensor<constant 768x!cgc.float32>) -> !cgc.tensor<1x128x768x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$scale,
                       Optional<CGCOp_FloatTensor>:$bias,
                       I64Attr:$axis,
                       DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_LRNOp : CGCOp_Op<"lrn"> {
  let summary = "Local response normalization across channels";
  let description = [{
    Computes `x / (bias + alpha / size * sum(x^2 over size neighbouring
    channels)) ^ beta`.

    ```mlir
    %y = cgc_op.lrn(%x) {size = 3} : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x8x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, I64Attr:$size,
                       DefaultValuedAttr<F32Attr, "0.0001">:$alpha,
                       DefaultValuedAttr<F32Attr, "0.75">:$beta,
                       DefaultValuedAttr<F32Attr, "1.0">:$bias);
  let results = (outs CGCOp_Tensor:$output);
}

class CGCOp_AxisNormOp<string mnemonic, string summaryText, string meaning>
    : CGCOp_Op<mnemonic> {
  let summary = summaryText;
  let description = meaning # [{

    ```mlir
    %y = cgc_op.}] # mnemonic # [{(%x) {axis = 1} : (!cgc.tensor<2x10x!cgc.float32>) -> !cgc.tensor<2x10x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, I64Attr:$axis);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferAxisPreserving(location,
          adaptor.getInput().getType(), adaptor.getAxis(), inferred);
    }
  }];
}

def CGCOp_SoftmaxOp : CGCOp_AxisNormOp<"softmax", "Softmax along one axis",
    "Computes `exp(x - max) / sum(exp(x - max))` along `axis` (in [0, rank)).">;
def CGCOp_LogSoftmaxOp : CGCOp_AxisNormOp<"log_softmax", "Log-softmax along one axis",
    "Computes `x - max - log(sum(exp(x - max)))` along `axis`.">;
def CGCOp_HardmaxOp : CGCOp_AxisNormOp<"hardmax", "Hardmax along one axis",
    "1 at the first maximum along `axis`, 0 elsewhere.">;

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

def CGCOp_MaxPoolOp : CGCOp_Op<"max_pool"> {
  let summary = "Max pooling";
  let description = [{
    The maximum over each window of `kernel_shape` on the spatial dimensions
    of an N x C x D1 x ... x Dn input. Padding never wins. With `ceil_mode`
    the output size rounds up (a window must start inside the data or the
    start padding).

    ```mlir
    %y = cgc_op.max_pool(%x) {kernel_shape = [3, 3], strides = [2, 2], dilations = [1, 1], start_padding = [1, 1], end_padding = [1, 1]}
        : (!cgc.tensor<1x64x112x112x!cgc.float32>) -> !cgc.tensor<1x64x56x56x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64ArrayAttr:$kernel_shape,
                       I64ArrayAttr:$strides, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$start_padding, I64ArrayAttr:$end_padding,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_AvgPoolOp : CGCOp_Op<"avg_pool"> {
  let summary = "Average pooling";
  let description = [{
    The mean over each window of `kernel_shape`. With `count_include_pad` the
    divisor counts padded positions, otherwise only data positions.

    ```mlir
    %y = cgc_op.avg_pool(%x) {kernel_shape = [2, 2], strides = [2, 2], dilations = [1, 1], start_padding = [0, 0], end_padding = [0, 0]}
        : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, I64ArrayAttr:$kernel_shape,
                       I64ArrayAttr:$strides, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$start_padding, I64ArrayAttr:$end_padding,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$count_include_pad);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_LpPoolOp : CGCOp_Op<"lp_pool"> {
  let summary = "Lp pooling";
  let description = [{
    The Lp norm `(sum |x|^p)^(1/p)` over each window of `kernel_shape`.

    ```mlir
    %y = cgc_op.lp_pool(%x) {kernel_shape = [2, 2], strides = [2, 2], dilations = [1, 1], start_padding = [0, 0], end_padding = [0, 0], p = 2}
        : (!cgc.tensor<1x8x4x4x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, I64ArrayAttr:$kernel_shape,
                       I64ArrayAttr:$strides, I64ArrayAttr:$dilations,
                       I64ArrayAttr:$start_padding, I64ArrayAttr:$end_padding,
                       DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
                       DefaultValuedAttr<I64Attr, "2">:$p);
  let results = (outs CGCOp_Tensor:$output);
}

class CGCOp_GlobalPoolOp<string mnemonic, string summaryText, string meaning,
                         dag extra = (ins)>
    : CGCOp_Op<mnemonic> {
  let summary = summaryText;
  let description = meaning # [{

    Reduces all spatial dimensions (2 and up) to size 1.

    ```mlir
    %y = cgc_op.}] # mnemonic # [{(%x) : (!cgc.tensor<1x2048x7x7x!cgc.float32>) -> !cgc.tensor<1x2048x1x1x!cgc.float32>
    ```
  }];
  let arguments = !con((ins CGCOp_FloatTensor:$input), extra);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferGlobalPool(location, adaptor.getInput().getType(),
                                        inferred);
    }
  }];
}

def CGCOp_GlobalAvgPoolOp : CGCOp_GlobalPoolOp<"global_avg_pool",
    "Global average pooling", "The mean over all spatial positions.">;
def CGCOp_GlobalMaxPoolOp : CGCOp_GlobalPoolOp<"global_max_pool",
    "Global max pooling", "The maximum over all spatial positions.">;
def CGCOp_GlobalLpPoolOp : CGCOp_GlobalPoolOp<"global_lp_pool",
    "Global Lp pooling", "The Lp norm over all spatial positions.",
    (ins DefaultValuedAttr<I64Attr, "2">:$p)>;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def CGCOp_ReduceSumOp : CGCOp_ReductionOp<"reduce_sum", CGCOp_NumericTensor,
    "Sum reduction", "The sum of the reduced elements.">;
def CGCOp_ReduceMeanOp : CGCOp_ReductionOp<"reduce_mean", CGCOp_NumericTensor,
    "Mean reduction", "The arithmetic mean of the reduced elements.">;
def CGCOp_ReduceMaxOp : CGCOp_ReductionOp<"reduce_max", CGCOp_NumericTensor,
    "Max reduction", "The largest of the reduced elements.">;
def CGCOp_ReduceMinOp : CGCOp_ReductionOp<"reduce_min", CGCOp_NumericTensor,
    "Min reduction", "The smallest of the reduced elements.">;
def CGCOp_ReduceProdOp : CGCOp_ReductionOp<"reduce_prod", CGCOp_NumericTensor,
    "Product reduction", "The product of the reduced elements.">;
def CGCOp_ReduceL1Op : CGCOp_ReductionOp<"reduce_l1", CGCOp_NumericTensor,
    "L1-norm reduction", "The sum of absolute values.">;
def CGCOp_ReduceL2Op : CGCOp_ReductionOp<"reduce_l2", CGCOp_NumericTensor,
    "L2-norm reduction", "The square root of the sum of squares.">;
def CGCOp_ReduceLogSumOp : CGCOp_ReductionOp<"reduce_log_sum", CGCOp_NumericTensor,
    "Log-sum reduction", "The natural log of the sum.">;
def CGCOp_ReduceLogSumExpOp : CGCOp_ReductionOp<"reduce_log_sum_exp", CGCOp_NumericTensor,
    "Log-sum-exp reduction", "The natural log of the sum of exponentials.">;
def CGCOp_ReduceSumSquareOp : CGCOp_ReductionOp<"reduce_sum_square", CGCOp_NumericTensor,
    "Sum-of-squares reduction", "The sum of squares.">;

class CGCOp_ArgReductionOp<string mnemonic, string summaryText, string meaning>
    : CGCOp_Op<mnemonic> {
  let summary = summaryText;
  let description = meaning # [{
    The result holds int64 indices along `axis`; with `keepdims` the reduced
    dimension stays as size 1. With `select_last_index` ties pick the last
    occurrence, otherwise the first.

    ```mlir
    %i = cgc_op.}] # mnemonic # [{(%x) {axis = 1, keepdims = false} : (!cgc.tensor<2x10x!cgc.float32>) -> !cgc.tensor<2x!cgc.int64>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keepdims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferArgReduction(location,
          adaptor.getInput().getType(), adaptor.getAxis(),
          adaptor.getKeepdims(), inferred);
    }
  }];
}

def CGCOp_ArgMaxOp : CGCOp_ArgReductionOp<"argmax", "Index of the maximum",
    "The index of the largest element along `axis`.">;
def CGCOp_ArgMinOp : CGCOp_ArgReductionOp<"argmin", "Index of the minimum",
    "The index of the smallest element along `axis`.">;

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def CGCOp_ReshapeOp : CGCOp_Op<"reshape"> {
  let summary = "Reinterpret the shape";
  let description = [{
    Returns the elements of `input`, in row-major order, with the static
    `shape`, which must have the same number of elements. (ONNX Reshape,
    Flatten, Squeeze and Unsqueeze all import as this op.)

    ```mlir
    %y = cgc_op.reshape(%x) {shape = [1, 2048]} : (!cgc.tensor<1x2048x1x1x!cgc.float32>) -> !cgc.tensor<1x2048x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$shape);
  let results = (outs CGCOp_Tensor:$output);
  // To the input's own type: the input; of a reshape: one reshape of its
  // input.
  let hasFolder = 1;
}

def CGCOp_TransposeOp : CGCOp_Op<"transpose"> {
  let summary = "Permute dimensions";
  let description = [{
    Output dimension `i` is input dimension `perm[i]`.

    ```mlir
    %y = cgc_op.transpose(%x) {perm = [0, 2, 1, 3]} : (!cgc.tensor<1x128x12x64x!cgc.float32>) -> !cgc.tensor<1x12x128x64x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$perm);
  let results = (outs CGCOp_Tensor:$output);
  // The identity permutation: the input; of a transpose: one transpose by
  // the composed permutation (the input when it is the identity).
  let hasFolder = 1;
}

def CGCOp_ConcatOp : CGCOp_Op<"concat"> {
  let summary = "Concatenate along an axis";
  let description = [{
    Joins the inputs, which agree on every dimension but `axis` and on element
    type, along `axis`.

    ```mlir
    %y = cgc_op.concat(%a, %b) {axis = 1} : (!cgc.tensor<1x2x4x!cgc.float32>, !cgc.tensor<1x3x4x!cgc.float32>) -> !cgc.tensor<1x5x4x!cgc.float32>
    ```
  }];
  let arguments = (ins Variadic<CGCOp_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_SplitOp : CGCOp_Op<"split"> {
  let summary = "Split along an axis";
  let description = [{
    Cuts `input` along `axis` into consecutive pieces of the given `sizes`,
    which sum to the dimension.

    ```mlir
    %a, %b = cgc_op.split(%x) {axis = 1, sizes = [2, 3]} : (!cgc.tensor<1x5x4x!cgc.float32>) -> (!cgc.tensor<1x2x4x!cgc.float32>, !cgc.tensor<1x3x4x!cgc.float32>)
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64Attr:$axis, I64ArrayAttr:$sizes);
  let results = (outs Variadic<CGCOp_Tensor>:$outputs);
}

def CGCOp_SliceOp : CGCOp_Op<"slice"> {
  let summary = "Strided slice";
  let description = [{
    For each dimension `d`, takes the elements `starts[d], starts[d] +
    steps[d], ...` while before `ends[d]` (after, for a negative step). One
    entry per dimension; the indices are normalized (in range, no negative
    wrap-around: a negative `end` of -1 with a negative step means "through
    index 0").

    ```mlir
    %y = cgc_op.slice(%x) {starts = [0, 1], ends = [2, 4], steps = [1, 2]} : (!cgc.tensor<2x4x!cgc.float32>) -> !cgc.tensor<2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$starts,
                       I64ArrayAttr:$ends, I64ArrayAttr:$steps);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_GatherOp : CGCOp_Op<"gather"> {
  let summary = "Gather slices along an axis";
  let description = [{
    Picks entries of `data` along `axis` by `indices` (negative indices count
    from the end). The result shape is `data.shape[:axis] + indices.shape +
    data.shape[axis+1:]`.

    ```mlir
    %y = cgc_op.gather(%table, %ids) {axis = 0} : (!cgc.tensor<constant 30522x768x!cgc.float32>, !cgc.tensor<1x128x!cgc.int64>) -> !cgc.tensor<1x128x768x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$data, CGCOp_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_GatherElementsOp : CGCOp_Op<"gather_elements"> {
  let summary = "Gather individual elements along an axis";
  let description = [{
    `output[i][j][k] = data[indices[i][j][k]][j][k]` for `axis = 0` (and
    likewise for other axes); the result has the shape of `indices`.

    ```mlir
    %y = cgc_op.gather_elements(%x, %i) {axis = 1} : (!cgc.tensor<2x2x!cgc.float32>, !cgc.tensor<2x2x!cgc.int64>) -> !cgc.tensor<2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$data, CGCOp_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_PadOp : CGCOp_Op<"pad"> {
  let summary = "Pad with a constant, reflection or edge values";
  let description = [{
    Adds `pads[d]` elements before and `pads[rank + d]` after dimension `d`
    (negative values crop). `mode` is `constant` (fill with `value`),
    `reflect` (mirror without repeating the edge) or `edge` (repeat it).

    ```mlir
    %y = cgc_op.pad(%x) {pads = [0, 1, 0, 1], mode = "constant", value = 0.0} : (!cgc.tensor<2x2x!cgc.float32>) -> !cgc.tensor<2x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$pads,
                       CGCOp_DefaultStrEnumAttr<["constant", "reflect", "edge"], "constant">:$mode,
                       DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_ExpandOp : CGCOp_Op<"expand"> {
  let summary = "Broadcast to a shape";
  let description = [{
    Broadcasts `input` numpy-style against `shape`; the result shape is the
    broadcast of both.

    ```mlir
    %y = cgc_op.expand(%x) {shape = [2, 3]} : (!cgc.tensor<3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$shape);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_TileOp : CGCOp_Op<"tile"> {
  let summary = "Repeat along each dimension";
  let description = [{
    Repeats the input `repeats[d]` times along dimension `d`.

    ```mlir
    %y = cgc_op.tile(%x) {repeats = [1, 2]} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x6x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64ArrayAttr:$repeats);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_ResizeOp : CGCOp_Op<"resize"> {
  let summary = "Resize by interpolation";
  let description = [{
    Resizes `input` to the static `sizes` by nearest, (multi)linear or cubic
    interpolation, following ONNX Resize: `coordinate_transformation_mode`
    maps output to input coordinates using `scales` (one per dimension),
    `nearest_mode` rounds for nearest, `cubic_coeff_a` and `exclude_outside`
    shape the cubic kernel, and `extrapolation_value` fills outside samples
    in `tf_crop_and_resize` mode (whose region is `roi`, start values then end
    values, one per dimension). The opset-11 mode `tf_half_pixel_for_nn` maps
    output coordinate `x` to input coordinate `(x + 0.5) / scale`.

    ```mlir
    %y = cgc_op.resize(%x) {sizes = [1, 1, 8, 8], scales = [1.0 : f32, 1.0 : f32, 2.0 : f32, 2.0 : f32], mode = "nearest"}
        : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64ArrayAttr:$sizes,
                       F32ArrayAttr:$scales,
                       CGCOp_DefaultStrEnumAttr<["nearest", "linear", "cubic"], "nearest">:$mode,
                       CGCOp_DefaultStrEnumAttr<["half_pixel", "half_pixel_symmetric",
                           "pytorch_half_pixel", "align_corners", "asymmetric",
                           "tf_crop_and_resize", "tf_half_pixel_for_nn"], "half_pixel">:$coordinate_transformation_mode,
                       CGCOp_DefaultStrEnumAttr<["round_prefer_floor", "round_prefer_ceil",
                           "floor", "ceil"], "round_prefer_floor">:$nearest_mode,
                       DefaultValuedAttr<F32Attr, "-0.75">:$cubic_coeff_a,
                       DefaultValuedAttr<BoolAttr, "false">:$exclude_outside,
                       DefaultValuedAttr<F32Attr, "0.0">:$extrapolation_value,
                       OptionalAttr<F32ArrayAttr>:$roi);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_UpsampleOp : CGCOp_Op<"upsample"> {
  let summary = "Upsample the trailing dimensions by integer factors";
  let description = [{
    Scales the last `len(scale_size)` dimensions by the integer factors in
    `scale_size`, by nearest-neighbour repetition or (with `mode =
    "linear"`) bilinear interpolation with half-pixel centers. This is the
    upsample layer of the spec's example network.

    ```mlir
    %y = cgc_op.upsample(%x) {scale_size = [2, 2]} : (!cgc.tensor<1x1x4x4x!cgc.float32>) -> !cgc.tensor<1x1x8x8x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64ArrayAttr:$scale_size,
                       CGCOp_DefaultStrEnumAttr<["nearest", "linear"], "nearest">:$mode);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_DepthToSpaceOp : CGCOp_Op<"depth_to_space"> {
  let summary = "Move channel blocks into spatial blocks";
  let description = [{
    Rearranges N x C x H x W into N x C/(b*b) x H*b x W*b with `blocksize` b,
    in `DCR` (depth-column-row) or `CRD` order.

    ```mlir
    %y = cgc_op.depth_to_space(%x) {blocksize = 2} : (!cgc.tensor<1x8x2x2x!cgc.float32>) -> !cgc.tensor<1x2x4x4x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64Attr:$blocksize,
                       CGCOp_DefaultStrEnumAttr<["DCR", "CRD"], "DCR">:$mode);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_SpaceToDepthOp : CGCOp_Op<"space_to_depth"> {
  let summary = "Move spatial blocks into channels";
  let description = [{
    Rearranges N x C x H x W into N x C*b*b x H/b x W/b with `blocksize` b.

    ```mlir
    %y = cgc_op.space_to_depth(%x) {blocksize = 2} : (!cgc.tensor<1x2x4x4x!cgc.float32>) -> !cgc.tensor<1x8x2x2x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$input, I64Attr:$blocksize);
  let results = (outs CGCOp_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Scans, scatters, selection and sampling
//===----------------------------------------------------------------------===//

def CGCOp_CumSumOp : CGCOp_Op<"cumsum"> {
  let summary = "Cumulative sum along an axis";
  let description = [{
    Running sums along `axis` (in [0, rank)): output element `i` along the
    axis is the sum of the input elements `j <= i`. With `exclusive` the
    element itself is left out (`j < i`, so the first output is 0); with
    `reverse` the sums run from the end (`j >= i`, or `j > i` when also
    exclusive). Other dimensions are independent. (ONNX CumSum, whose axis
    input must be a constant.)

    ```mlir
    %y = cgc_op.cumsum(%x) {axis = 1, exclusive = false, reverse = false} : (!cgc.tensor<2x3x!cgc.float32>) -> !cgc.tensor<2x3x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs CGCOp_Tensor:$output);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::cgc::op::inferAxisPreserving(location,
          adaptor.getInput().getType(), adaptor.getAxis(), inferred);
    }
  }];
}

def CGCOp_ScatterElementsOp : CGCOp_Op<"scatter_elements"> {
  let summary = "Scatter individual elements along an axis";
  let description = [{
    The result is `data` with elements replaced by `updates`: for every
    position `p` of `indices` (which has the shape of `updates` and the rank
    of `data`), the element of the result at `p` with coordinate `axis`
    replaced by `indices[p]` (negative values count from the end of that
    dimension) receives `updates[p]`. With `reduction` `add`, `mul`, `max` or
    `min` it is combined with the value there instead, in order of `p`
    (row-major). With `none` and two positions naming one element, the last
    in row-major order wins. (ONNX ScatterElements and Scatter.)

    ```mlir
    %y = cgc_op.scatter_elements(%data, %indices, %updates) {axis = 1, reduction = "none"}
        : (!cgc.tensor<1x5x!cgc.float32>, !cgc.tensor<1x2x!cgc.int64>, !cgc.tensor<1x2x!cgc.float32>) -> !cgc.tensor<1x5x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$data, CGCOp_IndexTensor:$indices,
                       CGCOp_AnyTensor:$updates,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       CGCOp_DefaultStrEnumAttr<["none", "add", "mul", "max", "min"], "none">:$reduction);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_ScatterNDOp : CGCOp_Op<"scatter_nd"> {
  let summary = "Scatter slices addressed by index tuples";
  let description = [{
    The result is `data` with slices replaced by `updates`. `indices` has
    shape `[i_0, ..., i_(q-2), k]` with `k <= rank(data)`: each of its index
    tuples (negative components count from the end) addresses a slice
    `data[t_0, ..., t_(k-1)]` of shape `data.shape[k:]`, which receives
    `updates[i_0, ..., i_(q-2)]`; `updates` has shape
    `indices.shape[:-1] + data.shape[k:]`. With `reduction` `add`, `mul`,
    `max` or `min` the update is combined with the values there, tuples taken
    in row-major order; with `none` a repeated tuple leaves the last update.
    (ONNX ScatterND.)

    ```mlir
    %y = cgc_op.scatter_nd(%data, %indices, %updates) {reduction = "add"}
        : (!cgc.tensor<8x!cgc.float32>, !cgc.tensor<4x1x!cgc.int64>, !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<8x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_AnyTensor:$data, CGCOp_IndexTensor:$indices,
                       CGCOp_AnyTensor:$updates,
                       CGCOp_DefaultStrEnumAttr<["none", "add", "mul", "max", "min"], "none">:$reduction);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_TopKOp : CGCOp_Op<"top_k"> {
  let summary = "The k largest or smallest elements along an axis";
  let description = [{
    Selects, along `axis`, the `k` largest elements (the `k` smallest when
    `largest` is false) of each slice and returns them with their int64
    positions along the axis. Results are ordered from the largest (or
    smallest) on; equal values keep the order of their positions (the lower
    index first). NaN compares larger than every number. Both results have the
    input's shape with dimension `axis` replaced by `k`, which must be at most
    that dimension. (ONNX TopK; its `sorted = 0` allows any order, and this
    one is used.)

    ```mlir
    %values, %indices = cgc_op.top_k(%x) {k = 3, axis = 1, largest = true}
        : (!cgc.tensor<2x10x!cgc.float32>) -> (!cgc.tensor<2x3x!cgc.float32>, !cgc.tensor<2x3x!cgc.int64>)
    ```
  }];
  let arguments = (ins CGCOp_NumericTensor:$input, I64Attr:$k, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs CGCOp_Tensor:$values, CGCOp_Tensor:$indices);
}

def CGCOp_CheckOp : CGCOp_Op<"check"> {
  let summary = "Its input, when a run-time condition holds; otherwise the run fails";
  let description = [{
    `output` is `input` (same shape and element type) when `condition`, a
    one-element bool tensor read at run time, is true. When it is false the
    run fails with `message`, which names what was assumed at compile time
    and the way out: the importer places it where a bound fixed at compile
    time must hold on every run (a Loop whose trip count is computed at run
    time is unrolled to a bound; a run that would take more iterations fails
    rather than returning the bound's result).

    ```mlir
    %y = cgc_op.check(%within, %x) {message = "Loop 'loop' needs more than 8 iterations"}
        : (!cgc.tensor<!cgc.bool>, !cgc.tensor<2x8x!cgc.float32>) -> !cgc.tensor<2x8x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_BoolTensor:$condition, CGCOp_AnyTensor:$input,
                       StrAttr:$message);
  let results = (outs CGCOp_Tensor:$output);
}

def CGCOp_NonMaxSuppressionOp : CGCOp_Op<"non_max_suppression"> {
  let summary = "Greedy non-maximum suppression of boxes per batch and class";
  let description = [{
    For each batch entry b and class c, the boxes of `boxes[b]` ([B, N, 4])
    whose `scores[b, c]` ([B, C, N]) exceed `score_threshold` are taken in
    order of decreasing score (equal scores: the lower box index first); a
    box is kept unless its intersection over union with a box kept before it
    exceeds `iou_threshold`, until `max_output_boxes_per_class` are kept.
    `selected` lists the kept boxes as rows (b, c, box index), by b, then c,
    then selection order; `count` (int64, rank 0) is how many rows are
    valid. `selected` has B x C x min(max_output_boxes_per_class, N) rows,
    the most there can be: rows past `count` hold (0, 0, 0), a valid index
    triple, so that index arithmetic done row by row after the selection
    (batch * boxes + box) stays in range on them. Boxes are
    [y1, x1, y2, x2] corners (either order) or, with `center_point_box`,
    [x_center, y_center, width, height]; a box of zero or negative area
    overlaps nothing. The thresholds are rank-0 or one-element tensors read
    at run time. (ONNX NonMaxSuppression, whose output has exactly `count`
    rows.)

    ```mlir
    %selected, %count = cgc_op.non_max_suppression(%boxes, %scores, %iou, %score)
        {max_output_boxes_per_class = 3 : i64, center_point_box = false}
        : (!cgc.tensor<1x6x4x!cgc.float32>, !cgc.tensor<1x1x6x!cgc.float32>,
           !cgc.tensor<!cgc.float32>, !cgc.tensor<!cgc.float32>)
        -> (!cgc.tensor<3x3x!cgc.int64>, !cgc.tensor<!cgc.int64>)
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$boxes, CGCOp_FloatTensor:$scores,
                       CGCOp_FloatTensor:$iou_threshold,
                       CGCOp_FloatTensor:$score_threshold,
                       I64Attr:$max_output_boxes_per_class,
                       DefaultValuedAttr<BoolAttr, "false">:$center_point_box);
  let results = (outs CGCOp_Tensor:$selected, CGCOp_Tensor:$count);
}

def CGCOp_GridSampleOp : CGCOp_Op<"grid_sample"> {
  let summary = "Sample an image at the locations of a grid";
  let description = [{
    For an N x C x H x W `input` and an N x Ho x Wo x 2 `grid` of (x, y)
    locations normalized to [-1, 1], output[n, c, i, j] samples channel c of
    image n at grid[n, i, j]. With `align_corners` -1 and 1 are the centers
    of the first and last pixels (x_pixel = (x + 1) / 2 * (W - 1)), otherwise
    their outer edges (x_pixel = ((x + 1) * W - 1) / 2). `mode` `bilinear`
    interpolates the 4 neighbours, `nearest` takes the nearest pixel (ties to
    even), `bicubic` uses the 4 x 4 neighbours with cubic convolution
    (a = -0.75). Locations outside the image read `padding_mode`: `zeros`
    (0), `border` (the clamped edge pixel) or `reflection` (mirrored at the
    border: at the pixel centers with `align_corners`, else at the edges).
    (ONNX GridSample-16.)

    ```mlir
    %y = cgc_op.grid_sample(%x, %grid) {mode = "bilinear", padding_mode = "zeros", align_corners = false}
        : (!cgc.tensor<1x1x4x4x!cgc.float32>, !cgc.tensor<1x6x6x2x!cgc.float32>) -> !cgc.tensor<1x1x6x6x!cgc.float32>
    ```
  }];
  let arguments = (ins CGCOp_FloatTensor:$input, CGCOp_FloatTensor:$grid,
                       CGCOp_DefaultStrEnumAttr<["bilinear", "nearest", "bicubic"], "bilinear">:$mode,
                       CGCOp_DefaultStrEnumAttr<["zeros", "border", "reflection"], "zeros">:$padding_mode,
                       DefaultValuedAttr<BoolAttr, "false">:$align_corners);
  let results = (outs CGCOp_Tensor:$output);
}

#endif // CGCOP_OPS_TD
