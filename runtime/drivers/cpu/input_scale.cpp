//===- input_scale.cpp - A per-channel scale folded into a convolution ----===//

#include "input_scale.h"

#include "kernels/support/common.h"

namespace cgc::cpu {

InputScaledKernel::InputScaledKernel(std::unique_ptr<Kernel> conv, const KernelOperand &weights,
                                     const KernelOperand &scale, size_t numInputs)
    : conv_(std::move(conv)), shape_(weights.shape), strides_(weights.effectiveStrides()),
      numInputs_(numInputs) {
  // The channel dimension of s: its only dimension of size C (the last one
  // if C is 1).
  std::vector<int64_t> ss = scale.effectiveStrides();
  const int64_t channels = shape_[1];
  for (size_t d = 0; d < scale.shape.size(); ++d)
    if (scale.shape[d] == channels)
      scaleStride_ = ss[d];
}

void InputScaledKernel::run(const KernelArgs &args, ThreadPool &pool) const {
  const float *w = static_cast<const float *>(args.inputs[1]);
  const float *s = static_cast<const float *>(args.inputs[numInputs_]);
  const int64_t outC = shape_[0], inC = shape_[1], kh = shape_[2], kw = shape_[3];
  // W * s, dense [O, C, KH, KW].
  Scratch scaled(size_t(outC * inC * kh * kw) * sizeof(float));
  float *out = scaled.as<float>();
  for (int64_t o = 0; o < outC; ++o)
    for (int64_t c = 0; c < inC; ++c) {
      const float f = s[c * scaleStride_];
      const float *src = w + o * strides_[0] + c * strides_[1];
      float *dst = out + (o * inC + c) * kh * kw;
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j)
          dst[i * kw + j] = src[i * strides_[2] + j * strides_[3]] * f;
    }
  std::vector<const void *> inputs(args.inputs, args.inputs + numInputs_);
  inputs[1] = out;
  KernelArgs inner;
  inner.inputs = inputs.data();
  inner.outputs = args.outputs;
  conv_->run(inner, pool);
}

std::string InputScaledKernel::describe() const {
  return conv_->describe() + " with its input scaled per channel (weights scaled each run)";
}

} // namespace cgc::cpu
