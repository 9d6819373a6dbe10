//===- input_scale.h - A per-channel scale folded into a convolution -*- C++ -*-===//
//
// Squeeze-and-excitation blocks (EfficientNet, MobileNetV3, SE-ResNet) end
// in y = conv(x * s) with s one factor per input channel ([1, C, 1, 1]),
// computed from x itself in the same run. conv(x * s, W) = conv(x, W * s)
// with W's input channels scaled, so the scaled weights (O * C * K numbers)
// replace a pass over x (C * H * W numbers, and every thread's cache lines
// of x handed across cores for the multiply at 2 threads): worth it when
// the plane has many more positions than the convolution has output
// channels (program.cpp decides: H * W >= 64 * O, measured).
//
// InputScaledKernel wraps the convolution kernel (with its fused epilogue),
// created with the weights marked as changing on every run: each run
// writes W * s into per-run memory and runs the wrapped kernel on it.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_INPUT_SCALE_H
#define CGC_CPU_INPUT_SCALE_H

#include "kernels/kernels.h"

#include <memory>

namespace cgc::cpu {

class InputScaledKernel final : public Kernel {
public:
  /// `conv` runs with inputs (x, weights, [bias,] extras...); this kernel's
  /// inputs are those with the scale appended. `weights` is the 2-D
  /// convolution's weight operand as the program stores it (float32,
  /// [O, C, KH, KW]), `scale` the per-channel operand (C elements, float32).
  InputScaledKernel(std::unique_ptr<Kernel> conv, const KernelOperand &weights,
                    const KernelOperand &scale, size_t numInputs);

  void run(const KernelArgs &args, ThreadPool &pool) const override;
  std::string describe() const override;
  int inPlaceInput() const override { return conv_->inPlaceInput(); }

private:
  std::unique_ptr<Kernel> conv_;
  std::vector<int64_t> shape_, strides_; // of the weights: [O, C, KH, KW]
  int64_t scaleStride_ = 1;              // elements between channels of s
  size_t numInputs_;                     // of the wrapped kernel
};

} // namespace cgc::cpu

#endif // CGC_CPU_INPUT_SCALE_H
