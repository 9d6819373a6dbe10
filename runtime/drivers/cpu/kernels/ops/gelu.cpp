//===- gelu.cpp - The erf GELU as exporters write it, in one pass --------===//
//
// PyTorch exports GELU as five layers: y = x * (erf(x / k1) + k2) * k3 (k1 =
// sqrt(2), k2 = 1, k3 = 0.5). The cpu target's JIT folds such a chain
// (compiler/Targets/Cpu/KernelPrograms.cpp) into one
// `cgc_op.erf_gelu(x, k1, k2, k3)` kernel (a kernel-library op, not an ODS
// layer): the constants are bind points whose values only the run sees, so
// the kernel keeps the chain's exact arithmetic for any k1, k2, k3 (one
// float32 operation per layer, in the layers' order: the result is bitwise
// the unfused chain's) and only removes four passes over memory and four
// dispatches. Attribute `multiply` (bool): the first layer is mul(x, k1)
// instead of div(x, k1).
//
//===----------------------------------------------------------------------===//

#include "common.h"
#include "logistic.h"
#include "math.h"

namespace cgc::cpu {
namespace {

template <bool Multiply>
CGC_INLINE void erfGeluBody(const float *x, float *y, int64_t n, float k1, float k2, float k3) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float t = Multiply ? v * k1 : v / k1;
    float e = fastmath::erff(t);
    float a = e + k2;
    float p = v * a;
    y[i] = p * k3;
  }
}

// The chain on 16 floats is logistic.h's erfGelu16, erf by its erf16: the
// erf layer's own kernel computes contiguous rows with it too, so the
// result stays the unfused chain's bit for bit. BERT's 12 GELUs of 128 x
// 3072: 2.76 -> 1.30 ms per run at 1 thread (0.58 -> 0.27 ns per element).

template <bool Multiply>
CGC_TARGET_AVX512 void erfGeluAvx512(const float *x, float *y, int64_t n, float k1, float k2,
                                     float k3) {
  erfGeluSpan<Multiply>(x, y, n, _mm512_set1_ps(k1), _mm512_set1_ps(k2), _mm512_set1_ps(k3));
}
template <bool Multiply>
void erfGeluBase(const float *x, float *y, int64_t n, float k1, float k2, float k3) {
  erfGeluBody<Multiply>(x, y, n, k1, k2, k3);
}

class ErfGeluKernel final : public KernelBase {
public:
  ErfGeluKernel(int64_t n, bool multiply) : n_(n), multiply_(multiply) {
    description_ = cat("erf_gelu float32 ", n, multiply ? " (x * k1)" : " (x / k1)",
                       ", one pass");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    float *y = static_cast<float *>(args.outputs[0]);
    const float k1 = *static_cast<const float *>(args.inputs[1]);
    const float k2 = *static_cast<const float *>(args.inputs[2]);
    const float k3 = *static_cast<const float *>(args.inputs[3]);
    using Fn = void (*)(const float *, float *, int64_t, float, float, float);
    const bool avx = cpuHasAvx512();
    Fn fn = multiply_ ? (avx ? erfGeluAvx512<true> : erfGeluBase<true>)
                      : (avx ? erfGeluAvx512<false> : erfGeluBase<false>);
    // Transcendental work: small chunks so both threads get some.
    pool.parallelFor(n_, 8192, [&](int64_t begin, int64_t end) {
      fn(x + begin, y + begin, end - begin, k1, k2, k3);
    });
  }

private:
  int64_t n_;
  bool multiply_;
};

std::unique_ptr<Kernel> makeErfGelu(const KernelDesc &desc, const KernelOptions &) {
  const bool multiply = checkErfGelu(desc);
  return std::make_unique<ErfGeluKernel>(numElements(desc.inputs[0]->shape), multiply);
}

} // namespace

void erfGeluRow(const float *x, float *y, int64_t n, float k1, float k2, float k3,
                bool multiply) {
  const bool avx = cpuHasAvx512();
  (multiply ? (avx ? erfGeluAvx512<true> : erfGeluBase<true>)
            : (avx ? erfGeluAvx512<false> : erfGeluBase<false>))(x, y, n, k1, k2, k3);
}

bool checkErfGelu(const KernelDesc &desc) {
  DescReader r(desc);
  r.expectInputs(4, 4);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  if (x.dtype != CGC_DTYPE_FLOAT32)
    r.error(cat("input has element type ", dtypeName(x.dtype), "; expected float32"));
  const char *names[] = {"input", "k1", "k2", "k3"};
  for (size_t i = 1; i < 4; ++i) {
    const KernelOperand &k = r.input(i, names[i]);
    r.expectSameDType(x, "input", k, names[i]);
    if (numElements(k.shape) != 1)
      r.error(cat("'", names[i], "' has shape ", shapeStr(k.shape), "; expected one element"));
  }
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  return r.getBool("multiply", false);
}

void registerGeluOps(std::vector<OpEntry> &ops) {
  // Contiguous operands; strided ones are packed by the registry.
  ops.push_back({OpKind::ErfGelu, makeErfGelu, false});
}

} // namespace cgc::cpu
