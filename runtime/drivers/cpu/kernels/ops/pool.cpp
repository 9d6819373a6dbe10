//===- pool.cpp - max_pool, avg_pool, lp_pool -----------------------------===//
//
// Small float32 2-D max and average pools run on a direct kernel of AVX-512
// gathers (GatherPoolKernel), channels-last ones on a direct kernel of
// channel vectors (ChannelsLastPoolKernel). Other float32 max and average
// pooling runs on oneDNN's pooling_v2 (dilation
// included) when its padding model gives ONNX's answer: ceil_mode's extra
// end padding is passed as explicit padding, which is exact for max pooling
// and for averages that exclude padding; an average that counts padding uses
// oneDNN only when no extra end padding is needed. Everything else (other
// dtypes, lp_pool, those averages) runs the generic kernel: per (n, c)
// plane, each output's window clipped to the data once per dimension.
//
//===----------------------------------------------------------------------===//

#include "onednn.h"

#include <algorithm>
#include <climits>
#include <immintrin.h>
#include <limits>
#include <map>
#include <mutex>

namespace cgc::cpu {
namespace {

enum class PoolKind { Max, Avg, Lp };

struct PoolGeom {
  PoolKind kind = PoolKind::Max;
  int64_t batch = 0, channels = 0;
  std::vector<int64_t> in, out, kernel, stride, dilation, padBegin, padEnd;
  bool ceilMode = false, countIncludePad = false;
  int64_t p = 2;
};

PoolGeom parsePool(const KernelDesc &desc) {
  DescReader r(desc);
  PoolGeom g;
  g.kind = desc.kind() == OpKind::MaxPool   ? PoolKind::Max
           : desc.kind() == OpKind::AvgPool ? PoolKind::Avg
                                          : PoolKind::Lp;
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input");
  r.expectDType(x, "input", g.kind == PoolKind::Max ? DTypeClass::Numeric : DTypeClass::Float);
  r.expectSameDType(x, "input", r.output(0), "output");
  if (x.shape.size() < 3)
    r.error(cat("input must be N x C x D1 x ... (rank >= 3), got rank ", x.shape.size()));
  size_t sp = x.shape.size() - 2;
  g.batch = x.shape[0];
  g.channels = x.shape[1];
  g.in.assign(x.shape.begin() + 2, x.shape.end());
  g.kernel = r.getInts("kernel_shape");
  g.stride = r.getInts("strides");
  g.dilation = r.getInts("dilations");
  g.padBegin = r.getInts("start_padding");
  g.padEnd = r.getInts("end_padding");
  g.ceilMode = r.getBool("ceil_mode", false);
  if (g.kind == PoolKind::Avg)
    g.countIncludePad = r.getBool("count_include_pad", false);
  if (g.kind == PoolKind::Lp) {
    g.p = r.getInt("p", 2);
    if (g.p < 1)
      r.error(cat("p must be >= 1, got ", g.p));
  }
  auto check = [&](const std::vector<int64_t> &v, const char *name, int64_t min) {
    if (v.size() != sp)
      r.error(cat("'", name, "' must have ", sp, " entries (one per spatial dimension), got ",
                  v.size()));
    for (int64_t e : v)
      if (e < min)
        r.error(cat("'", name, "' entries must be >= ", min, ", got ", shapeStr(v)));
  };
  check(g.kernel, "kernel_shape", 1);
  check(g.stride, "strides", 1);
  check(g.dilation, "dilations", 1);
  check(g.padBegin, "start_padding", 0);
  check(g.padEnd, "end_padding", 0);
  std::vector<int64_t> shape = {g.batch, g.channels};
  for (size_t i = 0; i < sp; ++i) {
    int64_t padded = g.in[i] + g.padBegin[i] + g.padEnd[i];
    int64_t ext = g.dilation[i] * (g.kernel[i] - 1) + 1;
    if (ext > padded)
      r.error(cat("window of extent ", ext, " is larger than the padded input (", padded,
                  ") in spatial dimension ", i));
    int64_t num = padded - ext;
    int64_t size = (g.ceilMode ? (num + g.stride[i] - 1) / g.stride[i] : num / g.stride[i]) + 1;
    if (g.ceilMode && (size - 1) * g.stride[i] >= g.in[i] + g.padBegin[i])
      --size;
    shape.push_back(size);
    g.out.push_back(size);
  }
  r.expectShape(r.output(0), "output", shape);
  return g;
}

std::string poolText(const PoolGeom &g) {
  const char *names[] = {"max_pool", "avg_pool", "lp_pool"};
  std::string k;
  for (size_t i = 0; i < g.kernel.size(); ++i)
    k += (i ? "x" : "") + std::to_string(g.kernel[i]);
  return cat(names[int(g.kind)], " ", k, " s", g.stride.empty() ? 1 : g.stride[0], " on ",
             shapeStr(g.in), " x", g.channels);
}

//===----------------------------------------------------------------------===//
// Generic kernel (contiguous)
//===----------------------------------------------------------------------===//

template <class T> class PoolKernel final : public KernelBase {
  using C = Compute<T>;

public:
  explicit PoolKernel(const PoolGeom &g) : g_(g) {
    // Per dimension and output index: first valid tap, tap count, first
    // input index, and the include-pad divisor factor.
    size_t sp = g.in.size();
    ranges_.resize(sp);
    for (size_t d = 0; d < sp; ++d) {
      for (int64_t o = 0; o < g.out[d]; ++o) {
        int64_t start = o * g.stride[d] - g.padBegin[d];
        Range rg;
        int64_t kLo = 0, kHi = g.kernel[d];
        while (kLo < kHi && start + kLo * g.dilation[d] < 0)
          ++kLo;
        while (kHi > kLo && start + (kHi - 1) * g.dilation[d] >= g.in[d])
          --kHi;
        rg.first = start + kLo * g.dilation[d];
        rg.count = kHi - kLo;
        int64_t padded = 0;
        for (int64_t k = 0; k < g.kernel[d]; ++k) {
          int64_t i = start + k * g.dilation[d];
          if (i >= -g.padBegin[d] && i < g.in[d] + g.padEnd[d])
            ++padded;
        }
        rg.padded = padded;
        ranges_[d].push_back(rg);
      }
    }
    description_ = poolText(g) + " (direct)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    T *y = static_cast<T *>(args.outputs[0]);
    const int64_t inPlane = numElements(g_.in), outPlane = numElements(g_.out);
    const int64_t planes = g_.batch * g_.channels;
    if (planes * outPlane == 0)
      return;
    int64_t grain = std::max<int64_t>(1, 4096 / std::max<int64_t>(outPlane, 1));
    pool.parallelFor(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl)
        plane(x + pl * inPlane, y + pl * outPlane);
    });
  }

private:
  struct Range {
    int64_t first = 0, count = 0, padded = 0;
  };

  void plane(const T *x, T *y) const {
    const size_t sp = g_.in.size();
    std::vector<int64_t> inStride(sp, 1);
    for (size_t d = sp - 1; d-- > 0;)
      inStride[d] = inStride[d + 1] * g_.in[d + 1];
    const int64_t outPlane = numElements(g_.out);
    int64_t oc[16] = {};
    for (int64_t o = 0; o < outPlane; ++o) {
      // Window box.
      const Range *rg[16];
      int64_t taps = 1, padded = 1;
      for (size_t d = 0; d < sp; ++d) {
        rg[d] = &ranges_[d][size_t(oc[d])];
        taps *= rg[d]->count;
        padded *= rg[d]->padded;
      }
      y[o] = store<T>(window(x, rg, inStride.data(), taps, padded));
      for (size_t d = sp; d-- > 0;) {
        if (++oc[d] < g_.out[d])
          break;
        oc[d] = 0;
      }
    }
  }

  C window(const T *x, const Range *const *rg, const int64_t *inStride, int64_t taps,
           int64_t padded) const {
    const size_t sp = g_.in.size();
    double acc = 0;
    C best = g_.kind == PoolKind::Max ? lowest() : C(0);
    if (taps > 0) {
      int64_t kc[16] = {};
      const size_t last = sp - 1;
      const int64_t lastDil = g_.dilation[last], lastCount = rg[last]->count;
      while (true) {
        int64_t off = 0;
        for (size_t d = 0; d < last; ++d)
          off += (rg[d]->first + kc[d] * g_.dilation[d]) * inStride[d];
        const T *row = x + off + rg[last]->first;
        if (g_.kind == PoolKind::Max) {
          for (int64_t k = 0; k < lastCount; ++k) {
            C v = load(row[k * lastDil]);
            if constexpr (std::is_floating_point_v<C>)
              best = (v > best || v != v) && best == best ? v : best;
            else
              best = v > best ? v : best;
          }
        } else if (g_.kind == PoolKind::Avg) {
          for (int64_t k = 0; k < lastCount; ++k)
            acc += double(load(row[k * lastDil]));
        } else {
          for (int64_t k = 0; k < lastCount; ++k) {
            double v = std::fabs(double(load(row[k * lastDil])));
            acc += g_.p == 2 ? v * v : (g_.p == 1 ? v : std::pow(v, double(g_.p)));
          }
        }
        size_t d = last;
        while (d-- > 0) {
          if (++kc[d] < rg[d]->count)
            break;
          kc[d] = 0;
        }
        if (d == size_t(-1))
          break;
      }
    }
    if (g_.kind == PoolKind::Max)
      return best;
    if (g_.kind == PoolKind::Avg) {
      int64_t divisor = g_.countIncludePad ? padded : taps;
      return C(divisor ? acc / double(divisor) : std::numeric_limits<double>::quiet_NaN());
    }
    return C(g_.p == 2 ? std::sqrt(acc) : (g_.p == 1 ? acc : std::pow(acc, 1.0 / double(g_.p))));
  }

  static C lowest() {
    if constexpr (std::is_floating_point_v<C>)
      return -std::numeric_limits<C>::infinity();
    else
      return std::numeric_limits<C>::lowest();
  }

  PoolGeom g_;
  std::vector<std::vector<Range>> ranges_;
};

//===----------------------------------------------------------------------===//
// Small float32 2-D pools: AVX-512 gathers along output rows
//===----------------------------------------------------------------------===//

/// Empty if a direct pool kernel may run `g` on `x`: direct-pool on,
/// AVX-512, a float32 2-D max or average pool; else why not.
std::string directPoolMismatch(const PoolGeom &g, const KernelOperand &x) {
    if (!activeConfig().directPool)
      return "off (direct-pool=0)";
    if (!cpuHasAvx512())
      return "no AVX-512";
    if (g.kind == PoolKind::Lp || g.in.size() != 2 || x.dtype != CGC_DTYPE_FLOAT32)
      return "not a float32 2-D max or average pool";
  return "";
}

/// A float32 2-D max or average pool, any strides on either side: each
/// output row is computed 16 outputs at a time, one masked gather per
/// vector and window tap, from tables made at creation (window origins,
/// which taps fall in the plane, divisors). oneDNN's pooling costs a few
/// microseconds per run whatever the size; this is for the pools where that
/// is most of the time (LeNet's). Max keeps NaN as the generic kernel does.
class GatherPoolKernel final : public KernelBase {
public:
  GatherPoolKernel(const PoolGeom &g, const KernelOperand &x, const KernelOperand &y)
      : g_(g), xs_(x.effectiveStrides()), ys_(y.effectiveStrides()),
        vectors_((g.out[1] + 15) / 16) {
    const int64_t kw = g.kernel[1], w = g.in[1];
    origins_.assign(size_t(vectors_ * 16), 0);
    stores_.assign(size_t(vectors_ * 16), 0);
    colMasks_.assign(size_t(vectors_ * kw), 0);
    validCols_.assign(size_t(vectors_ * 16), 0.0f);
    paddedCols_.assign(size_t(vectors_ * 16), 0.0f);
    for (int64_t px = 0; px < g.out[1]; ++px) {
      const int64_t start = px * g.stride[1] - g.padBegin[1];
      origins_[size_t(px)] = int32_t(start * xs_[3]);
      stores_[size_t(px)] = int32_t(px * ys_[3]);
      for (int64_t j = 0; j < kw; ++j) {
        const int64_t col = start + j * g.dilation[1];
        if (col >= 0 && col < w) {
          colMasks_[size_t(px / 16 * kw + j)] |= uint16_t(1u << (px % 16));
          validCols_[size_t(px)] += 1;
        }
        paddedCols_[size_t(px)] += col >= -g.padBegin[1] && col < w + g.padEnd[1];
      }
    }
    for (int64_t py = 0; py < g.out[0]; ++py) {
      const int64_t start = py * g.stride[0] - g.padBegin[0];
      float valid = 0, padded = 0;
      for (int64_t i = 0; i < g.kernel[0]; ++i) {
        const int64_t row = start + i * g.dilation[0];
        valid += row >= 0 && row < g.in[0];
        padded += row >= -g.padBegin[0] && row < g.in[0] + g.padEnd[0];
      }
      validRows_.push_back(valid);
      paddedRows_.push_back(padded);
    }
    description_ = poolText(g) + " (direct, AVX-512 gathers along output rows, split across the pool)";
  }

  /// Empty if this kernel runs `g` from `x` into `y`: float32 2-D max or
  /// average, at most kMaxTaps window taps over all outputs, offsets within
  /// 32 bits, no negative strides, AVX-512; else why not.
  static std::string mismatch(const PoolGeom &g, const KernelOperand &x, const KernelOperand &y) {
    if (std::string why = directPoolMismatch(g, x); !why.empty())
      return why;
    if (numElements(y.shape) * g.kernel[0] * g.kernel[1] > kMaxTaps || numElements(y.shape) == 0)
      return "not a small pool (oneDNN is faster)";
    int64_t xReach = 0, yReach = 0;
    for (size_t d = 0; d < 4; ++d) {
      const int64_t xsd = x.effectiveStrides()[d], ysd = y.effectiveStrides()[d];
      if (xsd < 0 || ysd < 0)
        return "negative strides";
      xReach += (x.shape[d] - 1) * xsd;
      yReach += (y.shape[d] - 1) * ysd;
    }
    if (xReach > INT_MAX / 2 || yReach > INT_MAX / 2)
      return "too large for 32-bit gather offsets";
    return "";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    float *y = static_cast<float *>(args.outputs[0]);
    const int64_t rows = g_.batch * g_.channels * g_.out[0];
    // Rows of at least 16K taps per piece: a small pool stays on one thread.
    const int64_t grain =
        std::max<int64_t>(1, 16384 / (vectors_ * 16 * g_.kernel[0] * g_.kernel[1]));
    pool.parallelFor(rows, grain, [&](int64_t begin, int64_t end) { runRows(x, y, begin, end); });
  }

  /// Window taps over all outputs past which oneDNN is faster. A gather
  /// costs ~11 cycles here (with the microcode's Gather Data Sampling
  /// mitigation). bench-kernels, "Pools" (2026-11-30, 1 thread,
  /// against oneDNN): LeNet's 2x2 s2 pools, 6 x 28x28 (4.7K taps) 4.2 ->
  /// 2.0 us NCHW, 2.0 -> 1.8 us channels-last, 16 x 10x10 (1.6K) 2.3 -> 1.8
  /// us, its average 3.3 -> 1.8 us; 3x3 s2 pools of 37K-44K taps 0.16-0.32x
  /// (oneDNN 3.4-5.6 us).
  static constexpr int64_t kMaxTaps = 8192;

private:
  CGC_TARGET_AVX512 void runRows(const float *x, float *y, int64_t begin, int64_t end) const {
    const int64_t kh = g_.kernel[0], kw = g_.kernel[1];
    const bool max = g_.kind == PoolKind::Max;
    for (int64_t r = begin; r < end; ++r) {
      const int64_t py = r % g_.out[0], nc = r / g_.out[0];
      const int64_t n = nc / g_.channels, c = nc % g_.channels;
      const float *plane = x + n * xs_[0] + c * xs_[1];
      float *out = y + n * ys_[0] + c * ys_[1] + py * ys_[2];
      const float rowDiv = g_.countIncludePad ? paddedRows_[size_t(py)] : validRows_[size_t(py)];
      for (int64_t v = 0; v < vectors_; ++v) {
        const __m512i origin = _mm512_loadu_si512(origins_.data() + 16 * v);
        __m512 acc = max ? _mm512_set1_ps(-std::numeric_limits<float>::infinity())
                         : _mm512_setzero_ps();
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t row = py * g_.stride[0] - g_.padBegin[0] + i * g_.dilation[0];
          if (row < 0 || row >= g_.in[0])
            continue;
          const float *base = plane + row * xs_[2];
          for (int64_t j = 0; j < kw; ++j) {
            const __mmask16 m = colMasks_[size_t(v * kw + j)];
            if (!m)
              continue;
            const float *tap = base + j * g_.dilation[1] * xs_[3];
            if (max) {
              const __m512 t = _mm512_mask_i32gather_ps(acc, m, origin, tap, 4);
              const __mmask16 nan = _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
              acc = _mm512_mask_mov_ps(_mm512_max_ps(t, acc), nan, t);
            } else {
              acc = _mm512_add_ps(
                  acc, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, origin, tap, 4));
            }
          }
        }
        if (!max) {
          const __m512 cols = _mm512_loadu_ps(
              (g_.countIncludePad ? paddedCols_ : validCols_).data() + 16 * v);
          acc = _mm512_div_ps(acc, _mm512_mul_ps(cols, _mm512_set1_ps(rowDiv)));
        }
        const int64_t lanes = std::min<int64_t>(16, g_.out[1] - 16 * v);
        const __mmask16 store = __mmask16((1u << lanes) - 1);
        if (ys_[3] == 1)
          _mm512_mask_storeu_ps(out + 16 * v, store, acc);
        else
          _mm512_mask_i32scatter_ps(out, store, _mm512_loadu_si512(stores_.data() + 16 * v),
                                    acc, 4);
      }
    }
  }

  PoolGeom g_;
  std::vector<int64_t> xs_, ys_;
  int64_t vectors_;
  std::vector<int32_t> origins_, stores_; // per output column: offsets in x's and y's rows
  std::vector<uint16_t> colMasks_;        // per vector and tap column: lanes in the plane
  std::vector<float> validCols_, paddedCols_, validRows_, paddedRows_; // divisors
};

//===----------------------------------------------------------------------===//
// Channels-last float32 2-D pools: vectors of channels
//===----------------------------------------------------------------------===//

/// A float32 2-D max or average pool whose input and result are
/// channels-last (channel stride 1): each output pixel's channels are
/// vectors, the max or sum of the window's taps one load per vector and
/// tap (the rows of the window stay in L1 from one output to the next).
/// Output rows split across the pool. Max keeps NaN as the generic kernel
/// does. oneDNN's channels-last pooling ran at half of ONNX Runtime's
/// speed (SqueezeNet 1.1's 3x3 s2 on 64 x 111x111: 389 us against 183).
class ChannelsLastPoolKernel final : public KernelBase {
public:
  ChannelsLastPoolKernel(const PoolGeom &g, const KernelOperand &x, const KernelOperand &y)
      : g_(g), xs_(x.effectiveStrides()), ys_(y.effectiveStrides()) {
    for (size_t d = 0; d < 2; ++d)
      for (int64_t o = 0; o < g.out[d]; ++o) {
        const int64_t start = o * g.stride[d] - g.padBegin[d];
        Window w;
        w.first = start;
        float padded = 0;
        for (int64_t k = 0; k < g.kernel[d]; ++k) {
          const int64_t i = start + k * g.dilation[d];
          if (i < 0)
            w.lo = k + 1;
          if (i < g.in[d])
            w.hi = k + 1;
          padded += i >= -g.padBegin[d] && i < g.in[d] + g.padEnd[d];
        }
        w.hi = std::max(w.hi, w.lo);
        w.divisor = g.countIncludePad ? padded : float(w.hi - w.lo);
        windows_[d].push_back(w);
      }
    description_ =
        poolText(g) + " (direct channels-last, AVX-512 vectors of channels, split across the pool)";
  }

  /// Empty if this kernel runs `g` from `x` into `y`: float32 2-D max or
  /// average, both channels-last, no negative strides, AVX-512; else why not.
  static std::string mismatch(const PoolGeom &g, const KernelOperand &x, const KernelOperand &y) {
    if (std::string why = directPoolMismatch(g, x); !why.empty())
      return why;
    if (!channelsLast(x) || !channelsLast(y) || g.channels < 2)
      return "not channels-last";
    if (numElements(y.shape) == 0)
      return "empty";
    return "";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *x = static_cast<const float *>(args.inputs[0]);
    float *y = static_cast<float *>(args.outputs[0]);
    const int64_t rows = g_.batch * g_.out[0];
    const int64_t perRow = g_.out[1] * g_.kernel[0] * g_.kernel[1] * g_.channels;
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(perRow, 1));
    pool.parallelFor(rows, grain, [&](int64_t begin, int64_t end) { runRows(x, y, begin, end); });
  }

private:
  struct Window {
    int64_t first = 0;  // input index of tap 0 (may be padding)
    int64_t lo = 0, hi = 0; // taps [lo, hi) fall in the input
    float divisor = 0;
  };

  CGC_TARGET_AVX512 void runRows(const float *x, float *y, int64_t begin, int64_t end) const {
    const bool max = g_.kind == PoolKind::Max;
    const int64_t c = g_.channels, vectors = (c + 15) / 16;
    const __mmask16 last = __mmask16((1u << (c - 16 * (vectors - 1))) - 1);
    const int64_t dy = g_.dilation[0] * xs_[2], dx = g_.dilation[1] * xs_[3];
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / g_.out[0], oy = r % g_.out[0];
      const Window &wy = windows_[0][size_t(oy)];
      for (int64_t ox = 0; ox < g_.out[1]; ++ox) {
        const Window &wx = windows_[1][size_t(ox)];
        // The window's first tap may lie in the padding: offsets stay
        // integers until they address an element in the plane.
        const int64_t origin = n * xs_[0] + wy.first * xs_[2] + wx.first * xs_[3];
        float *out = y + n * ys_[0] + oy * ys_[2] + ox * ys_[3];
        const __m512 scale = _mm512_set1_ps(1.0f / (wy.divisor * wx.divisor));
        for (int64_t v = 0; v < vectors; ++v) {
          const __mmask16 m = v + 1 < vectors ? __mmask16(0xffff) : last;
          __m512 acc = max ? _mm512_set1_ps(-std::numeric_limits<float>::infinity())
                           : _mm512_setzero_ps();
          for (int64_t i = wy.lo; i < wy.hi; ++i) {
            const int64_t row = origin + i * dy + 16 * v;
            for (int64_t j = wx.lo; j < wx.hi; ++j) {
              const __m512 t = _mm512_maskz_loadu_ps(m, x + (row + j * dx));
              if (max) {
                const __mmask16 nan = _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q);
                acc = _mm512_mask_mov_ps(_mm512_max_ps(t, acc), nan, t);
              } else {
                acc = _mm512_add_ps(acc, t);
              }
            }
          }
          if (!max)
            acc = _mm512_mul_ps(acc, scale);
          _mm512_mask_storeu_ps(out + 16 * v, m, acc);
        }
      }
    }
  }

  PoolGeom g_;
  std::vector<int64_t> xs_, ys_;
  std::vector<Window> windows_[2];
};

//===----------------------------------------------------------------------===//
// oneDNN (float32 max / avg)
//===----------------------------------------------------------------------===//

/// oneDNN pooling, single-threaded primitives over pieces taken from the
/// ThreadPool's queue: channel ranges (pooling is independent per channel)
/// where a range is dense, else (channels-last) bands of output rows, each
/// reading its input rows with the halo and carrying its share of the
/// padding.
class DnnlPoolKernel final : public KernelBase {
public:
  DnnlPoolKernel(const PoolGeom &g, const KernelOperand &x, const KernelOperand &out) : g_(g) {
    dnnl::memory::desc src, dst;
    if (!onednn::plainDesc(x, src) || !onednn::plainDesc(out, dst))
      throw dnnl::error(dnnl_invalid_arguments, "negative strides");
    src_ = onednn::plainOperand(src);
    dst_ = onednn::plainOperand(dst);
    for (size_t i = 0; i < g.in.size(); ++i) {
      int64_t ext = g.dilation[i] * (g.kernel[i] - 1) + 1;
      int64_t pr = (g.out[i] - 1) * g.stride[i] + ext - g.in[i] - g.padBegin[i];
      if (pr < 0)
        throw dnnl::error(dnnl_invalid_arguments, "negative end padding");
      if (g.kind == PoolKind::Avg && g.countIncludePad && pr != g.padEnd[i])
        throw dnnl::error(dnnl_invalid_arguments, "include-pad average with ceil overhang");
      padEnd_.push_back(pr);
    }
    const Piece &whole = piece(wholeKey());
    std::string impl = whole.pd.impl_info_str();
    if (impl.rfind("ref", 0) == 0)
      throw dnnl::error(dnnl_unimplemented, "only oneDNN's reference pooling applies");
    description_ = poolText(g) + cat(" (oneDNN ", impl, ", split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const int64_t elem = int64_t(dnnl::memory::data_type_size(src_.type));
    const std::vector<Range> ranges = splitFor(pool.size());
    std::vector<std::function<void()>> tasks;
    for (const Range &r : ranges) {
      tasks.push_back([&, r] {
        const Piece &pc = piece(r.key);
        onednn::ThreadScope scope(1);
        int64_t so, dof;
        if (r.rows) {
          src_.slice(2, r.inStart, r.key.inRows, so);
          dst_.slice(2, r.start, r.key.rows, dof);
        } else {
          src_.slice(1, r.start, r.key.channels, so);
          dst_.slice(1, r.start, r.key.channels, dof);
        }
        std::unordered_map<int, dnnl::memory> margs = {
            {DNNL_ARG_SRC, onednn::wrap(pc.src.desc(), static_cast<const char *>(args.inputs[0]) + so * elem)},
            {DNNL_ARG_DST, onednn::wrap(pc.dst.desc(), static_cast<char *>(args.outputs[0]) + dof * elem)}};
        onednn::execute(pc.prim, pc.scratchpad, margs);
      });
    }
    pool.runAll(tasks);
  }

private:
  /// The shape of a piece: `channels` channels, `rows` output rows from
  /// `inRows` input rows with padB / padE padding rows (first spatial
  /// dimension); a channel range keeps the whole plane.
  struct Key {
    int64_t channels = 0, rows = 0, inRows = 0, padB = 0, padE = 0;
    bool operator<(const Key &o) const {
      return std::tie(channels, rows, inRows, padB, padE) <
             std::tie(o.channels, o.rows, o.inRows, o.padB, o.padE);
    }
  };
  struct Range {
    Key key;
    bool rows = false;   // a band of output rows, else a channel range
    int64_t start = 0;   // first channel or output row
    int64_t inStart = 0; // first input row of a band
  };

  Key wholeKey() const {
    return {g_.channels, g_.out[0], g_.in[0], g_.padBegin[0], padEnd_[0]};
  }

  /// split(threads), decided once per thread count.
  std::vector<Range> splitFor(int threads) const {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = splits_.find(threads);
      if (it != splits_.end())
        return it->second;
    }
    std::vector<Range> ranges = split(threads); // takes mutex_ itself
    std::lock_guard<std::mutex> lock(mutex_);
    splits_[threads] = ranges;
    return ranges;
  }

  /// Pieces for `threads` threads: channel ranges (about two per thread)
  /// where oneDNN has an optimized kernel for them, else one band of rows
  /// per thread (the bands the convolutions around it use, so each thread
  /// reads rows from its own cache: see depthwise.cpp), else the whole.
  std::vector<Range> split(int threads) const {
    const int64_t channels = g_.channels;
    const int64_t outputs = numElements(g_.out) * g_.batch * channels;
    const int64_t want = threads > 1 && outputs >= 32768 ? 2 * int64_t(threads) : 1;
    std::vector<Range> out;
    if (want == 1) {
      out.push_back({wholeKey()});
      return out;
    }
    int64_t step = std::max<int64_t>(1, (channels + want - 1) / want);
    // A channel range of a channels-last tensor is not dense, and oneDNN has
    // only its reference pooling for that (measured 100x slower than the
    // whole tensor on one thread): row bands instead.
    for (int64_t c0 = 0; c0 < channels && step < channels; c0 += step) {
      Range r;
      r.key = wholeKey();
      r.key.channels = std::min(step, channels - c0);
      r.start = c0;
      out.push_back(r);
    }
    if (!out.empty() && optimized(out))
      return out;
    out.clear();
    const int64_t H = g_.out[0];
    const int64_t count = std::min<int64_t>(threads, H);
    const int64_t window = g_.dilation[0] * (g_.kernel[0] - 1) + 1;
    for (int64_t i = 0; i < count && count > 1; ++i) {
      Range r;
      r.rows = true;
      r.key.channels = channels;
      int64_t end;
      evenSplit(H, count, i, r.start, end);
      r.key.rows = end - r.start;
      // Input rows of the band, with its share of the padding.
      BandInput band;
      if (!bandInput(r.start, r.key.rows, g_.stride[0], window, g_.padBegin[0], g_.in[0], band))
        return {Range{wholeKey()}}; // a band entirely in the padding: do not split
      r.inStart = band.start;
      r.key.inRows = band.len;
      r.key.padB = band.padB;
      r.key.padE = band.padE;
      out.push_back(r);
    }
    if (out.empty() || !optimized(out))
      return {Range{wholeKey()}};
    return out;
  }

  /// True if every piece of `ranges` runs on an optimized oneDNN
  /// implementation, not its reference one.
  bool optimized(const std::vector<Range> &ranges) const {
    for (const Range &r : ranges) {
      try {
        if (std::string(piece(r.key).pd.impl_info_str()).rfind("ref", 0) == 0)
          return false;
      } catch (const dnnl::error &) {
        return false;
      }
    }
    return true;
  }

  struct Piece {
    dnnl::pooling_v2_forward::primitive_desc pd;
    dnnl::pooling_v2_forward prim;
    size_t scratchpad = 0;
    onednn::PlainOperand src, dst;
  };

  const Piece &piece(const Key &key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pieces_.find(key);
    if (it != pieces_.end())
      return *it->second;
    auto p = std::make_unique<Piece>();
    int64_t unused;
    p->src = src_.slice(1, 0, key.channels, unused).slice(2, 0, key.inRows, unused);
    p->dst = dst_.slice(1, 0, key.channels, unused).slice(2, 0, key.rows, unused);
    dnnl::algorithm alg = g_.kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                          : g_.countIncludePad     ? dnnl::algorithm::pooling_avg_include_padding
                                                   : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::memory::dims strides(g_.stride.begin(), g_.stride.end());
    dnnl::memory::dims kernel(g_.kernel.begin(), g_.kernel.end());
    dnnl::memory::dims pl(g_.padBegin.begin(), g_.padBegin.end());
    dnnl::memory::dims pr(padEnd_.begin(), padEnd_.end()), dil;
    pl[0] = key.padB;
    pr[0] = key.padE;
    for (int64_t d : g_.dilation)
      dil.push_back(d - 1);
    onednn::ThreadScope scope(1);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::pooling_v2_forward::desc d(dnnl::prop_kind::forward_inference, alg, p->src.desc(),
                                     p->dst.desc(), strides, kernel, dil, pl, pr);
    p->pd = dnnl::pooling_v2_forward::primitive_desc(d, attr, onednn::engine());
    p->prim = dnnl::pooling_v2_forward(p->pd);
    p->scratchpad = p->pd.scratchpad_desc().get_size();
    const Piece &ref = *p;
    pieces_.emplace(key, std::move(p));
    return ref;
  }

  PoolGeom g_;
  std::vector<int64_t> padEnd_;
  onednn::PlainOperand src_, dst_;
  mutable std::mutex mutex_;
  mutable std::map<Key, std::unique_ptr<Piece>> pieces_;
  mutable std::map<int, std::vector<Range>> splits_;
};

std::unique_ptr<Kernel> makePool(const KernelDesc &desc, const KernelOptions &) {
  PoolGeom g = parsePool(desc);
  const KernelOperand &x = *desc.inputs[0], &out = desc.outputs[0];
  if (GatherPoolKernel::mismatch(g, x, out).empty())
    return std::make_unique<GatherPoolKernel>(g, x, out);
  if (ChannelsLastPoolKernel::mismatch(g, x, out).empty())
    return std::make_unique<ChannelsLastPoolKernel>(g, x, out);
  if (x.dtype == CGC_DTYPE_FLOAT32 && g.kind != PoolKind::Lp && numElements(out.shape) > 0) {
    try {
      return std::make_unique<DnnlPoolKernel>(g, x, out);
    } catch (const dnnl::error &) {
      // The generic kernel below.
    }
  }
  return makeDenseAdapted(desc, [&](const KernelDesc &) {
    std::unique_ptr<Kernel> kernel;
    visitDType(x.dtype, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, Bool>)
        kernel = std::make_unique<PoolKernel<T>>(g);
    });
    return kernel;
  });
}

} // namespace

void registerPoolingOps(std::vector<OpEntry> &ops) {
  for (OpKind name : {OpKind::MaxPool, OpKind::AvgPool, OpKind::LpPool})
    ops.push_back({name, makePool, true});
}

} // namespace cgc::cpu
