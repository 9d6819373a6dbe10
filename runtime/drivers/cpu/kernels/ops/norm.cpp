//===- norm.cpp - batch, instance, layer and local response normalization -===//
//
// batch_norm folds its four parameter vectors into a per-channel scale and
// shift at run time (the parameters are operands) and applies them with a
// strided LoopPlan, so any layout of the input works. layer_norm and
// instance_norm normalize contiguous rows with two passes (mean, then
// squared deviations) in vectorized float code (AVX-512 when present);
// float64 rows use double throughout.
//
//===----------------------------------------------------------------------===//

#include "elementwise.h"
#include "math.h"
#include "strided.h"

#include <algorithm>

namespace cgc::cpu {
namespace {

//===----------------------------------------------------------------------===//
// batch_norm
//===----------------------------------------------------------------------===//

/// The relu or clip a fused batch_norm applies before the store:
/// min(hi, max(lo, v)) + zero, as the elementwise kernels compute it (a NaN
/// stays NaN; relu(-0) is +0).
template <class P> struct ScaleShiftClamp {
  P lo, hi, zero;
};

/// out = x * a + b, with a, b in double for float64 and float otherwise;
/// then the clamp at `ctx` when `Clamped`.
template <class T, bool Clamped>
CGC_INLINE void scaleShiftBody(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  T *out = reinterpret_cast<T *>(p[0]);
  const T *x = reinterpret_cast<const T *>(p[1]);
  const P *a = reinterpret_cast<const P *>(p[2]);
  const P *b = reinterpret_cast<const P *>(p[3]);
  const int64_t st = sizeof(T), sp = sizeof(P);
  ScaleShiftClamp<P> c{};
  if constexpr (Clamped)
    c = *static_cast<const ScaleShiftClamp<P> *>(ctx);
  // The operand order of vmaxps / vminps: the second one when either is NaN.
  auto finish = [&](P v) {
    if constexpr (Clamped) {
      v = c.lo > v ? c.lo : v;
      v = c.hi < v ? c.hi : v;
      v = v + c.zero;
    }
    return v;
  };
  if (s[0] == st && s[1] == st && s[2] == 0 && s[3] == 0) {
    P av = a[0], bv = b[0];
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<T>(finish(load(x[i]) * av + bv));
  } else if (s[0] == st && s[1] == st && s[2] == sp && s[3] == sp) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<T>(finish(load(x[i]) * a[i] + b[i]));
  } else {
    char *o = p[0];
    const char *xx = p[1], *aa = p[2], *bb = p[3];
    for (int64_t i = 0; i < n; ++i, o += s[0], xx += s[1], aa += s[2], bb += s[3])
      *reinterpret_cast<T *>(o) =
          store<T>(finish(load(*reinterpret_cast<const T *>(xx)) *
                              *reinterpret_cast<const P *>(aa) +
                          *reinterpret_cast<const P *>(bb)));
  }
}
template <class T, bool Clamped>
CGC_TARGET_AVX512 void scaleShiftAvx512(const void *ctx, char *const *p, const int64_t *s,
                                        int64_t n) {
  scaleShiftBody<T, Clamped>(ctx, p, s, n);
}
template <class T, bool Clamped>
void scaleShiftBase(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  scaleShiftBody<T, Clamped>(ctx, p, s, n);
}

/// batch_norm, and with `chain` (at most a leading relu or clip) that op
/// applied before the store into the chain's result.
template <class T> class BatchNormKernel final : public KernelBase {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;

public:
  BatchNormKernel(const KernelDesc &desc, double epsilon, const std::vector<KernelDesc> &chain = {})
      : epsilon_(epsilon) {
    const KernelOperand &x = *desc.inputs[0];
    const KernelOperand &out = chain.empty() ? desc.outputs[0] : chain.back().outputs[0];
    channels_ = x.shape[1];
    std::vector<int64_t> perChannel(x.shape.size(), 0);
    perChannel[1] = 1;
    plan_ = LoopPlan(out.shape,
                     {out.effectiveStrides(), x.effectiveStrides(), perChannel, perChannel},
                     {sizeof(T), sizeof(T), sizeof(P), sizeof(P)});
    for (int i = 1; i < 5; ++i)
      paramStride_[i] = desc.inputs[size_t(i)]->effectiveStrides()[0];
    description_ = cat("batch_norm ", dtypeName(x.dtype), " ", shapeStr(x.shape));
    if (chain.empty()) {
      row_ = cpuHasAvx512() ? &scaleShiftAvx512<T, false> : &scaleShiftBase<T, false>;
      return;
    }
    const LeadingClamp clamp = leadingClamp(chain, x.shape);
    if (clamp.ops != chain.size())
      fail(cat("batch_norm fuses a relu or clip, not ", chainSummary(chain)));
    clamp_ = {P(clamp.lo), P(clamp.hi), P(clamp.zero)};
    row_ = cpuHasAvx512() ? &scaleShiftAvx512<T, true> : &scaleShiftBase<T, true>;
    description_ += cat(chainSummary(chain), " (", clamp.name, " before the store)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *scale = static_cast<const T *>(args.inputs[1]);
    const T *bias = static_cast<const T *>(args.inputs[2]);
    const T *mean = static_cast<const T *>(args.inputs[3]);
    const T *var = static_cast<const T *>(args.inputs[4]);
    Scratch params(size_t(2 * std::max<int64_t>(channels_, 1)) * sizeof(P));
    P *a = params.as<P>(), *b = a + channels_;
    for (int64_t c = 0; c < channels_; ++c) {
      double s = double(load(scale[c * paramStride_[1]]));
      double v = double(load(var[c * paramStride_[4]]));
      double m = double(load(mean[c * paramStride_[3]]));
      double bi = double(load(bias[c * paramStride_[2]]));
      double k = s / std::sqrt(v + epsilon_);
      a[c] = P(k);
      b[c] = P(bi - m * k);
    }
    char *bases[4] = {static_cast<char *>(args.outputs[0]),
                      const_cast<char *>(static_cast<const char *>(args.inputs[0])),
                      reinterpret_cast<char *>(a), reinterpret_cast<char *>(b)};
    plan_.run(pool, bases, row_, &clamp_, 32768);
  }

private:
  double epsilon_;
  int64_t channels_ = 0;
  int64_t paramStride_[5] = {};
  LoopPlan plan_;
  RowFn row_ = nullptr;
  ScaleShiftClamp<P> clamp_{};
};

/// Checks a batch_norm descriptor; its epsilon.
double checkBatchNorm(const KernelDesc &desc) {
  DescReader r(desc);
  r.expectInputs(5, 5);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Float);
  if (x.shape.size() < 2)
    r.error("input must have rank >= 2");
  const char *names[] = {"input", "scale", "bias", "mean", "variance"};
  for (int i = 1; i < 5; ++i) {
    const KernelOperand &p = r.input(size_t(i), names[i]);
    r.expectSameDType(x, "input", p, names[i]);
    r.expectShape(p, names[i], {x.shape[1]});
  }
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  return r.getFloat("epsilon", 1e-5);
}

std::unique_ptr<Kernel> makeBatchNorm(const KernelDesc &desc, const KernelOptions &) {
  const double eps = checkBatchNorm(desc);
  std::unique_ptr<Kernel> kernel;
  visitDType(desc.inputs[0]->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<BatchNormKernel<T>>(desc, eps);
  });
  return kernel;
}

//===----------------------------------------------------------------------===//
// Row normalization: y = (x - mean) * rstd * gamma + beta
//===----------------------------------------------------------------------===//

/// Mean and variance of n contiguous values (two passes).
template <class C> CGC_INLINE void meanVar(const C *x, int64_t n, C &mean, C &var) {
#pragma clang fp reassociate(on)
  C s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += x[i];
  mean = n ? s / C(n) : C(0);
  C q = 0;
  for (int64_t i = 0; i < n; ++i) {
    C d = x[i] - mean;
    q += d * d;
  }
  var = n ? q / C(n) : C(0);
}

template <class C>
CGC_INLINE void normRowBody(const C *x, C *y, int64_t n, const C *gamma, const C *beta,
                            C gammaScalar, C betaScalar, double eps) {
  C mean, var;
  meanVar(x, n, mean, var);
  C rstd = C(1.0 / std::sqrt(double(var) + eps));
  if (gamma && beta) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - mean) * rstd * gamma[i] + beta[i];
  } else if (gamma) {
    for (int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - mean) * rstd * gamma[i];
  } else {
    C a = rstd * gammaScalar, b = betaScalar - mean * a;
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] * a + b;
  }
}

using NormRowFloat = void (*)(const float *, float *, int64_t, const float *, const float *,
                              float, float, double);
CGC_TARGET_AVX512 void normRowAvx512(const float *x, float *y, int64_t n, const float *g,
                                     const float *b, float gs, float bs, double eps) {
  normRowBody<float>(x, y, n, g, b, gs, bs, eps);
}
void normRowBase(const float *x, float *y, int64_t n, const float *g, const float *b, float gs,
                 float bs, double eps) {
  normRowBody<float>(x, y, n, g, b, gs, bs, eps);
}

/// Normalizes `rows` contiguous rows of `len` elements. Per-row parameters:
/// for layer_norm gamma/beta are full rows (shared by all rows); for
/// instance_norm they are scalars per channel (row % channels).
template <class T> class RowNormKernel final : public KernelBase {
  using C = Compute<T>;

public:
  enum class Mode { Layer, Instance };
  RowNormKernel(Mode mode, const KernelDesc &desc, int64_t rows, int64_t len, double eps)
      : mode_(mode), rows_(rows), len_(len), eps_(eps) {
    const KernelOperand &x = *desc.inputs[0];
    if (mode == Mode::Layer) {
      // Scale and bias broadcast to the normalized shape: copy plans expand
      // them into full rows at run time.
      std::vector<int64_t> normShape(x.shape.end() - (x.shape.size() - axis(desc)), x.shape.end());
      for (size_t i = 1; i < 3; ++i) {
        if (i < desc.inputs.size() && desc.inputs[i]) {
          hasParam_[i] = true;
          expand_[i] = CopyPlan(normShape, sizeof(T), contiguousStrides(normShape),
                                broadcastStrides(*desc.inputs[i], normShape));
        }
      }
    } else {
      channels_ = x.shape[1];
      hasParam_[1] = hasParam_[2] = true;
      paramStride_[1] = desc.inputs[1]->effectiveStrides()[0];
      paramStride_[2] = desc.inputs[2]->effectiveStrides()[0];
    }
    description_ = cat(mode == Mode::Layer ? "layer_norm " : "instance_norm ",
                       dtypeName(x.dtype), " ", rows, "x", len);
  }

  static size_t axis(const KernelDesc &desc) {
    return size_t(desc.attr("axis") ? desc.attr("axis")->i : 0);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    if (rows_ * len_ == 0)
      return;
    // Layer norm: gamma/beta expanded to full rows in the compute type.
    Scratch paramRows;
    const C *gamma = nullptr, *beta = nullptr;
    if (mode_ == Mode::Layer) {
      paramRows.allocate(size_t(2 * len_) * (sizeof(C) + sizeof(T)));
      C *g = paramRows.as<C>(), *b = g + len_;
      T *tmp = reinterpret_cast<T *>(b + len_);
      for (int i = 1; i < 3; ++i) {
        C *dst = i == 1 ? g : b;
        if (!hasParam_[i])
          continue;
        expand_[i].runRange(tmp, args.inputs[i], 0, len_);
        for (int64_t k = 0; k < len_; ++k)
          dst[k] = load(tmp[k]);
      }
      gamma = g;
      beta = hasParam_[2] ? b : nullptr;
    }
    const T *instGamma = static_cast<const T *>(args.inputs[1]);
    const T *instBeta = mode_ == Mode::Instance ? static_cast<const T *>(args.inputs[2]) : nullptr;
    // Pieces of at least 32K elements. A normalization's rows usually come
    // from a product split by columns (each row half written by each core),
    // so a thread reads half of its rows from the other core either way.
    // BERT's 128x768 at 2 threads, whole vs in 2 pieces: 20 vs 39 us when
    // measured first (the pieces were 128K then), 66-67 vs 41-45 us after
    // the packed GEMM's epilogue and prefetch changes (alternating runs).
    int64_t grain = std::max<int64_t>(1, 32768 / len_);
    pool.parallelFor(rows_, grain, [&](int64_t begin, int64_t end) {
      std::vector<C> in, out;
      if constexpr (!std::is_same_v<T, C>) {
        in.resize(size_t(len_));
        out.resize(size_t(len_));
      }
      for (int64_t row = begin; row < end; ++row) {
        const T *src = x + row * len_;
        T *dst = y + row * len_;
        C gs = 1, bs = 0;
        const C *g = gamma, *b = beta;
        if (mode_ == Mode::Instance) {
          int64_t c = row % channels_;
          gs = load(instGamma[c * paramStride_[1]]);
          bs = load(instBeta[c * paramStride_[2]]);
        } else if (!b) {
          // layer_norm without bias: normRow handles gamma-only rows.
        }
        if constexpr (std::is_same_v<T, C>) {
          normRow(src, dst, g, b, gs, bs);
        } else {
          for (int64_t i = 0; i < len_; ++i)
            in[size_t(i)] = load(src[i]);
          normRow(in.data(), out.data(), g, b, gs, bs);
          for (int64_t i = 0; i < len_; ++i)
            dst[i] = store<T>(out[size_t(i)]);
        }
      }
    });
  }

private:
  void normRow(const C *x, C *y, const C *g, const C *b, C gs, C bs) const {
    if constexpr (std::is_same_v<C, float>)
      (cpuHasAvx512() ? normRowAvx512 : normRowBase)(x, y, len_, g, b, gs, bs, eps_);
    else
      normRowBody<C>(x, y, len_, g, b, gs, bs, eps_);
  }

  Mode mode_;
  int64_t rows_, len_;
  double eps_;
  int64_t channels_ = 1;
  bool hasParam_[3] = {};
  int64_t paramStride_[3] = {};
  CopyPlan expand_[3];
};

std::unique_ptr<Kernel> makeLayerNorm(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(2, 3);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Float);
  int64_t axis = r.getInt("axis");
  int64_t rank = int64_t(x.shape.size());
  if (axis < 0 || axis >= rank)
    r.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> normShape(x.shape.begin() + axis, x.shape.end());
  const char *names[] = {"input", "scale", "bias"};
  for (size_t i = 1; i < 3; ++i) {
    if (!r.hasInput(i)) {
      if (i == 1)
        r.input(1, "scale");
      continue;
    }
    const KernelOperand &p = *desc.inputs[i];
    r.expectSameDType(x, "input", p, names[i]);
    std::vector<int64_t> b;
    if (!broadcastShapes(p.shape, normShape, b) || b != normShape)
      r.error(cat("'", names[i], "' shape ", shapeStr(p.shape),
                  " does not broadcast to the normalized shape ", shapeStr(normShape)));
  }
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  double eps = r.getFloat("epsilon", 1e-5);
  int64_t len = numElements(normShape), rows = numElements(x.shape) / std::max<int64_t>(len, 1);
  if (len == 0)
    rows = 0;
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<RowNormKernel<T>>(RowNormKernel<T>::Mode::Layer, desc, rows, len,
                                                  eps);
  });
  return kernel;
}

std::unique_ptr<Kernel> makeInstanceNorm(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(3, 3);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Float);
  if (x.shape.size() < 3)
    r.error("input must have rank >= 3");
  for (size_t i = 1; i < 3; ++i) {
    const char *name = i == 1 ? "scale" : "bias";
    const KernelOperand &p = r.input(i, name);
    r.expectSameDType(x, "input", p, name);
    r.expectShape(p, name, {x.shape[1]});
  }
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  double eps = r.getFloat("epsilon", 1e-5);
  int64_t rows = x.shape[0] * x.shape[1];
  int64_t len = rows ? numElements(x.shape) / rows : 0;
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<RowNormKernel<T>>(RowNormKernel<T>::Mode::Instance, desc,
                                                  len ? rows : 0, len, eps);
  });
  return kernel;
}

//===----------------------------------------------------------------------===//
// lrn (contiguous)
//===----------------------------------------------------------------------===//

template <class T> class LrnKernel final : public KernelBase {
  using C = Compute<T>;

public:
  LrnKernel(const std::vector<int64_t> &shape, int64_t size, double alpha, double beta,
            double bias)
      : size_(size), alpha_(alpha), beta_(beta), bias_(bias) {
    n_ = shape[0];
    c_ = shape[1];
    plane_ = numElements(shape) / std::max<int64_t>(n_ * c_, 1);
    if (n_ * c_ == 0)
      plane_ = 0;
    description_ = cat("lrn size ", size, " ", shapeStr(shape));
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    if (n_ * c_ * plane_ == 0)
      return;
    const int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    const double scale = alpha_ / double(size_);
    pool.parallelFor(n_ * c_, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> acc(static_cast<size_t>(plane_));
      for (int64_t nc = begin; nc < end; ++nc) {
        int64_t n = nc / c_, c = nc % c_;
        std::fill(acc.begin(), acc.end(), 0.0);
        int64_t lo = std::max<int64_t>(0, c - before), hi = std::min<int64_t>(c_ - 1, c + after);
        for (int64_t k = lo; k <= hi; ++k) {
          const T *p = x + (n * c_ + k) * plane_;
          for (int64_t i = 0; i < plane_; ++i) {
            double v = double(load(p[i]));
            acc[size_t(i)] += v * v;
          }
        }
        const T *p = x + nc * plane_;
        T *q = y + nc * plane_;
        for (int64_t i = 0; i < plane_; ++i)
          q[i] = store<T>(C(double(load(p[i])) /
                            std::pow(bias_ + scale * acc[size_t(i)], beta_)));
      }
    });
  }

private:
  int64_t size_;
  double alpha_, beta_, bias_;
  int64_t n_ = 0, c_ = 0, plane_ = 0;
};

std::unique_ptr<Kernel> makeLrn(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", DTypeClass::Float);
  if (x.shape.size() < 3)
    r.error("input must have rank >= 3");
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", x.shape);
  int64_t size = r.getInt("size");
  if (size < 1)
    r.error(cat("size must be >= 1, got ", size));
  double alpha = r.getFloat("alpha", 0.0001), beta = r.getFloat("beta", 0.75),
         bias = r.getFloat("bias", 1.0);
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<LrnKernel<T>>(x.shape, size, alpha, beta, bias);
  });
  return kernel;
}

} // namespace

std::unique_ptr<Kernel> createFusedBatchNorm(const KernelDesc &anchor,
                                             const std::vector<KernelDesc> &epilogue,
                                             std::string &reason) {
  const double eps = checkBatchNorm(anchor);
  if (anchor.inputs[0]->dtype != CGC_DTYPE_FLOAT32) {
    reason = "a fused batch_norm is float32";
    return nullptr;
  }
  return std::make_unique<BatchNormKernel<float>>(anchor, eps, epilogue);
}

void registerNormalizationOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::BatchNorm, makeBatchNorm, true});
  ops.push_back({OpKind::LayerNorm, makeLayerNorm, false});
  ops.push_back({OpKind::InstanceNorm, makeInstanceNorm, false});
  ops.push_back({OpKind::LRN, makeLrn, false});
}

} // namespace cgc::cpu
