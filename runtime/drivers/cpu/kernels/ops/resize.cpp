//===- resize.cpp - resize and upsample -----------------------------------===//
//
// Follows the ONNX reference implementation (onnx/reference/ops/op_resize.py):
// per dimension, every output index maps to a source coordinate by the
// coordinate transformation mode, then to up to four (index, weight) taps
// (nearest: 1, linear: 2, cubic: 4) with edge indices clamped, as the
// reference's edge padding does; exclude_outside zeroes and renormalizes
// taps outside the data; tf_crop_and_resize extrapolates outside the data.
// The N-d result is the reference's nested 1-D interpolation (outermost
// dimension last), computed per output element over the tap tables.
//
//===----------------------------------------------------------------------===//

#include "strided.h"

#include <immintrin.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <optional>

namespace cgc::cpu {
namespace {

enum class Mode { Nearest, Linear, Cubic };

struct Tap {
  int64_t index;
  double weight;
};
struct Taps {
  bool outside = false; // tf_crop_and_resize: extrapolate
  int count = 0;
  Tap tap[4];
};

struct ResizeSpec {
  Mode mode = Mode::Nearest;
  std::string coord = "half_pixel", nearest = "round_prefer_floor";
  double cubicA = -0.75, extrapolation = 0;
  bool excludeOutside = false;
  std::vector<double> scales, roi;
};

std::vector<Taps> tapsFor(const ResizeSpec &s, size_t dim, int64_t inLen, int64_t outLen) {
  std::vector<Taps> table(static_cast<size_t>(outLen));
  double scale = s.scales[dim];
  if (!(scale > 0))
    scale = inLen ? double(outLen) / double(inLen) : 1.0;
  const double outWidth = scale * double(inLen);
  for (int64_t o = 0; o < outLen; ++o) {
    double x = double(o), xo;
    const std::string &c = s.coord;
    if (c == "asymmetric") {
      xo = x / scale;
    } else if (c == "align_corners") {
      // The reference divides by the scaled (not the rounded) output width.
      xo = outWidth == 1 ? 0.0 : x * double(inLen - 1) / (outWidth - 1);
    } else if (c == "pytorch_half_pixel") {
      xo = outWidth > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    } else if (c == "half_pixel_symmetric") {
      double adjustment = double(outLen) / outWidth;
      double center = double(inLen) / 2;
      xo = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    } else if (c == "tf_half_pixel_for_nn") {
      xo = (x + 0.5) / scale; // opset 11
    } else if (c == "tf_crop_and_resize") {
      size_t rank = s.roi.size() / 2;
      double start = s.roi[dim], end = s.roi[rank + dim];
      xo = outWidth == 1 ? (end - start) * double(inLen - 1) / 2
                         : x * (end - start) * double(inLen - 1) / (outWidth - 1);
      xo += start * double(inLen - 1);
    } else { // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    }
    Taps &t = table[size_t(o)];
    if (c == "tf_crop_and_resize" && (xo < 0 || xo > double(inLen - 1))) {
      t.outside = true;
      continue;
    }
    if (!(xo > -1e9 && xo < 1e9)) // absurd scales or roi (NaN included)
      xo = xo > 0 ? 1e9 : -1e9;
    double fl = std::floor(xo);
    double ratio = xo == fl ? 1.0 : xo - fl;
    int64_t x0 = int64_t(fl) - (xo == fl ? 1 : 0); // left neighbour of the pair
    double coeff[4];
    int64_t first;
    int n;
    if (s.mode == Mode::Cubic) {
      const double A = s.cubicA, r = ratio;
      coeff[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
      coeff[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
      coeff[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
      coeff[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
      first = x0 - 1;
      n = 4;
    } else {
      if (s.mode == Mode::Linear) {
        coeff[0] = 1 - ratio;
        coeff[1] = ratio;
      } else if (ratio == 1.0) {
        coeff[0] = 0;
        coeff[1] = 1;
      } else if (s.nearest == "round_prefer_floor") {
        coeff[0] = ratio <= 0.5;
        coeff[1] = ratio > 0.5;
      } else if (s.nearest == "round_prefer_ceil") {
        coeff[0] = ratio < 0.5;
        coeff[1] = ratio >= 0.5;
      } else if (s.nearest == "floor") {
        coeff[0] = 1;
        coeff[1] = 0;
      } else {
        coeff[0] = 0;
        coeff[1] = 1;
      }
      first = x0;
      n = 2;
    }
    if (s.excludeOutside) {
      double sum = 0;
      for (int i = 0; i < n; ++i) {
        int64_t idx = first + i;
        if (idx < 0 || idx >= inLen)
          coeff[i] = 0;
        sum += coeff[i];
      }
      if (sum != 0)
        for (int i = 0; i < n; ++i)
          coeff[i] /= sum;
    }
    for (int i = 0; i < n; ++i) {
      if (coeff[i] == 0)
        continue;
      int64_t idx = std::clamp<int64_t>(first + i, 0, std::max<int64_t>(inLen - 1, 0));
      t.tap[t.count++] = {idx, coeff[i]};
    }
  }
  return table;
}

/// True if output index o of a dimension reads input index o alone, with
/// weight 1 (a dimension the resize leaves as it is).
bool isIdentity(const std::vector<Taps> &table) {
  for (size_t o = 0; o < table.size(); ++o)
    if (table[o].outside || table[o].count != 1 || table[o].tap[0].index != int64_t(o) ||
        table[o].tap[0].weight != 1.0)
      return false;
  return true;
}

/// A float resize that changes at most two dimensions, as the interpolation
/// it is: every output element is a weighted sum of at most 16 input
/// elements (4 taps per changed dimension), the taps and their offsets
/// tabled once. The loop runs along the output's innermost dimension:
/// channels-last, a run of channels that all take the same taps (one
/// weighted sum of contiguous input runs); NCHW, an output row whose
/// columns each take their own two (or four) taps. The generic path (a
/// recursion in double per element, ~35 ns each) took LR-ASPP's 28x28 ->
/// 224x224 upsampling of 21 channels 35.5 ms.
class SeparablePlan {
public:
  struct Dim {
    int64_t size, inSize, inStride, outStride;
    /// For a changed dimension: per output index, the first of its taps in
    /// `offsets` / `weights` and their count.
    std::vector<int32_t> first, count;
    std::vector<int64_t> indices, offsets; // input indices, and times the stride
    std::vector<float> weights;
    /// The same taps by tap slot, for the inner dimension: slot j of output
    /// k reads input index index[j][k] with weight weight[j][k] (weight 0
    /// where k has fewer taps).
    int slots = 0;
    std::vector<int32_t> index[4];
    std::vector<float> weight[4];
    bool changed = false;
  };

  /// Empty (usable() false) unless the tables allow it.
  SeparablePlan(const std::vector<std::vector<Taps>> &tables, const std::vector<int64_t> &inShape,
                const std::vector<int64_t> &outShape, const std::vector<int64_t> &inStrides,
                const std::vector<int64_t> &outStrides) {
    int changed = 0;
    for (size_t d = 0; d < tables.size(); ++d) {
      if (outShape[d] <= 1 && isIdentity(tables[d]))
        continue;
      Dim dim;
      dim.size = outShape[d];
      dim.inSize = inShape[d];
      dim.inStride = inStrides[d];
      dim.outStride = outStrides[d];
      if (!isIdentity(tables[d])) {
        dim.changed = true;
        ++changed;
        for (const Taps &t : tables[d]) {
          if (t.outside)
            return;
          dim.first.push_back(int32_t(dim.offsets.size()));
          dim.count.push_back(t.count);
          for (int i = 0; i < t.count; ++i) {
            dim.indices.push_back(t.tap[i].index);
            dim.offsets.push_back(t.tap[i].index * inStrides[d]);
            dim.weights.push_back(float(t.tap[i].weight));
          }
        }
      }
      dims_.push_back(std::move(dim));
    }
    if (changed == 0 || changed > 2 || dims_.empty())
      return;
    // The innermost output dimension runs the inner loop.
    inner_ = 0;
    for (size_t i = 1; i < dims_.size(); ++i)
      if (std::llabs(dims_[i].outStride) < std::llabs(dims_[inner_].outStride))
        inner_ = i;
    for (size_t i = 0; i < dims_.size(); ++i)
      if (i != inner_)
        outer_.push_back(i);
    Dim &in = dims_[inner_];
    if (in.changed) {
      if (in.inSize > INT32_MAX)
        return;
      for (int32_t c : in.count)
        in.slots = std::max<int>(in.slots, c);
      for (int j = 0; j < in.slots; ++j) {
        in.index[j].assign(size_t(in.size), 0);
        in.weight[j].assign(size_t(in.size), 0.0f);
        for (int64_t k = 0; k < in.size; ++k)
          if (j < in.count[size_t(k)]) {
            const size_t at = size_t(in.first[size_t(k)] + j);
            in.index[j][size_t(k)] = int32_t(in.indices[at]);
            in.weight[j][size_t(k)] = in.weights[at];
          } else {
            in.index[j][size_t(k)] = in.index[0][size_t(k)];
          }
      }
    }
    rows_ = 1;
    for (size_t i : outer_)
      rows_ *= dims_[i].size;
    // Nearest (every tap alone with weight 1): each output row copies input
    // elements, with no arithmetic.
    copies_ = true;
    for (const Dim &d : dims_)
      for (size_t k = 0; k < d.count.size(); ++k)
        copies_ = copies_ && d.count[k] == 1 && d.weights[size_t(d.first[k])] == 1.0f;
    usable_ = true;
  }

  bool usable() const { return usable_; }

  template <class T> void run(const T *in, T *out, ThreadPool &pool) const {
    const Dim &inner = dims_[inner_];
    pool.parallelFor(rows_, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, inner.size)),
                     [&](int64_t begin, int64_t end) {
      // The taps of the changed outer dimensions for one row: (offset,
      // weight) pairs, their products.
      int64_t tapOff[16];
      float tapW[16];
      std::vector<float> line(inner.changed ? size_t(inner.inSize) : 0);
      const T *lastFrom = nullptr;
      T *lastDst = nullptr;
      for (int64_t row = begin; row < end; ++row) {
        int64_t rem = row, inBase = 0, outBase = 0;
        int taps = 1;
        tapOff[0] = 0;
        tapW[0] = 1.0f;
        for (size_t k = outer_.size(); k-- > 0;) {
          const Dim &d = dims_[outer_[k]];
          const int64_t o = rem % d.size;
          rem /= d.size;
          outBase += o * d.outStride;
          if (!d.changed) {
            inBase += o * d.inStride;
            continue;
          }
          const int n = d.count[size_t(o)], f = d.first[size_t(o)];
          int combined = 0;
          int64_t nextOff[16];
          float nextW[16];
          for (int a = 0; a < taps; ++a)
            for (int b = 0; b < n; ++b) {
              nextOff[combined] = tapOff[a] + d.offsets[size_t(f + b)];
              nextW[combined++] = tapW[a] * d.weights[size_t(f + b)];
            }
          taps = combined;
          std::copy(nextOff, nextOff + taps, tapOff);
          std::copy(nextW, nextW + taps, tapW);
        }
        const T *src = in + inBase;
        T *dst = out + outBase;
        if (copies_) {
          // The previous row of this range read the same input row (a
          // nearest upsampling's repeated rows): copy its output.
          const T *from = src + tapOff[0];
          copyRow(from == lastFrom ? lastDst : nullptr, from, dst, inner);
          lastFrom = from;
          lastDst = dst;
        } else if (!inner.changed) {
          rowSameTaps(src, dst, inner, taps, tapOff, tapW);
        } else {
          rowOwnTaps(src, dst, inner, taps, tapOff, tapW, line.data());
        }
      }
    });
  }

private:
  /// A nearest resize's output row: a copy of the output row `same` when
  /// given (it read the same input row), else of the input row `from` (its
  /// elements repeated or skipped along a changed inner dimension). Took
  /// DBNet's 2x upsampling of [1, 96, 80, 80] channels-last from 4.1 ms (a
  /// weighted sum per element) to ~1 ms.
  template <class T>
  static void copyRow(const T *same, const T *from, T *dst, const Dim &inner) {
    const int64_t n = inner.size, os = inner.outStride;
    if (same) {
      if (os == 1)
        std::memcpy(dst, same, size_t(n) * sizeof(T));
      else
        for (int64_t k = 0; k < n; ++k)
          dst[k * os] = same[k * os];
      return;
    }
    if (!inner.changed) {
      const int64_t is = inner.inStride;
      if (os == 1 && is == 1)
        std::memcpy(dst, from, size_t(n) * sizeof(T));
      else
        for (int64_t k = 0; k < n; ++k)
          dst[k * os] = from[k * is];
      return;
    }
    for (int64_t k = 0; k < n; ++k)
      dst[k * os] = from[inner.offsets[size_t(inner.first[size_t(k)])]];
  }

  /// Every element of the row takes the row's taps (the inner dimension is
  /// not resized): out[k] = sum of w * in[off + k].
  template <class T>
  static void rowSameTaps(const T *src, T *dst, const Dim &inner, int taps, const int64_t *off,
                          const float *w) {
    for (int64_t k = 0; k < inner.size; ++k) {
      float acc = 0;
      for (int t = 0; t < taps; ++t)
        acc += w[t] * float(load(src[off[t] + k * inner.inStride]));
      dst[k * inner.outStride] = store<T>(Compute<T>(acc));
    }
  }

  /// Each element of the row has taps of its own along the inner dimension
  /// as well: the outer taps first combine whole input rows into `line`
  /// (the input's inner length), then each output element takes its inner
  /// taps from it.
  template <class T>
  static void rowOwnTaps(const T *src, T *dst, const Dim &inner, int taps, const int64_t *off,
                         const float *w, float *line) {
    for (int64_t x = 0; x < inner.inSize; ++x) {
      float acc = 0;
      for (int t = 0; t < taps; ++t)
        acc += w[t] * float(load(src[off[t] + x * inner.inStride]));
      line[x] = acc;
    }
    int64_t k = 0;
    if constexpr (std::is_same_v<T, float>)
      if (inner.outStride == 1 && cpuHasAvx512())
        k = tapRowAvx512(line, inner, dst);
    for (; k < inner.size; ++k) {
      float acc = 0;
      for (int j = 0; j < inner.slots; ++j)
        acc += inner.weight[j][size_t(k)] * line[inner.index[j][size_t(k)]];
      dst[k * inner.outStride] = store<T>(Compute<T>(acc));
    }
  }

  /// The inner taps of whole vectors of 16 contiguous outputs from `line`;
  /// returns how many outputs it wrote. Where a vector's taps all lie
  /// within 16 inputs of its first (upsampling), one load of those inputs
  /// and a permute per tap slot; otherwise gathers (from a row in L1,
  /// several times slower: LR-ASPP's 28 -> 224 upsampling took 981 us with
  /// gathers alone).
  CGC_TARGET_AVX512 static int64_t tapRowAvx512(const float *line, const Dim &inner,
                                               float *dst) {
    const __m512i sixteen = _mm512_set1_epi32(16);
    int64_t k = 0;
    for (; k + 16 <= inner.size; k += 16) {
      const int32_t first = inner.index[0][size_t(k)];
      const __m512i base = _mm512_set1_epi32(first);
      __m512i idx[4], rel[4];
      __mmask16 near = 0xffff;
      for (int j = 0; j < inner.slots; ++j) {
        idx[j] = _mm512_loadu_si512(inner.index[j].data() + k);
        rel[j] = _mm512_sub_epi32(idx[j], base);
        near &= _mm512_cmplt_epu32_mask(rel[j], sixteen);
      }
      __m512 acc = _mm512_setzero_ps();
      if (near == 0xffff) {
        const int64_t avail = std::min<int64_t>(16, inner.inSize - first);
        const __m512 window =
            _mm512_maskz_loadu_ps(__mmask16((1u << avail) - 1), line + first);
        for (int j = 0; j < inner.slots; ++j)
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(inner.weight[j].data() + k),
                                _mm512_permutexvar_ps(rel[j], window), acc);
      } else {
        for (int j = 0; j < inner.slots; ++j)
          acc = _mm512_fmadd_ps(_mm512_loadu_ps(inner.weight[j].data() + k),
                                _mm512_i32gather_ps(idx[j], line, 4), acc);
      }
      _mm512_storeu_ps(dst + k, acc);
    }
    return k;
  }

  std::vector<Dim> dims_;
  size_t inner_ = 0;
  std::vector<size_t> outer_;
  int64_t rows_ = 0;
  bool usable_ = false, copies_ = false;
};

template <class T> class ResizeKernel final : public KernelBase {
public:
  ResizeKernel(const KernelOperand &in, const KernelOperand &out, const ResizeSpec &spec,
               std::string description)
      : spec_(spec), inShape_(in.shape), outShape_(out.shape) {
    inStrides_ = in.effectiveStrides();
    outStrides_ = out.effectiveStrides();
    for (size_t d = 0; d < in.shape.size(); ++d)
      tables_.push_back(tapsFor(spec, d, in.shape[d], out.shape[d]));
    if constexpr (std::is_same_v<Compute<T>, float>) {
      // Read per kernel (not once): the tests build both paths.
      if (activeConfig().separableResize && numElements(in.shape) > 0 &&
          numElements(out.shape) > 0)
        separable_.emplace(tables_, inShape_, outShape_, inStrides_, outStrides_);
      if (separable_ && !separable_->usable())
        separable_.reset();
    }
    description_ = std::move(description);
    if (separable_)
      description_ += " (separable taps, float)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *in = static_cast<const T *>(args.inputs[0]);
    T *out = static_cast<T *>(args.outputs[0]);
    const int64_t total = numElements(outShape_);
    if (total == 0 || numElements(inShape_) == 0)
      return;
    if (separable_)
      return separable_->run(in, out, pool);
    const size_t rank = outShape_.size();
    pool.parallelFor(total, 2048, [&](int64_t b, int64_t e) {
      std::vector<const Taps *> taps(rank);
      for (int64_t t = b; t < e; ++t) {
        int64_t rem = t, outOff = 0;
        for (size_t d = rank; d-- > 0;) {
          int64_t c = rem % outShape_[d];
          rem /= outShape_[d];
          outOff += c * outStrides_[d];
          taps[d] = &tables_[d][size_t(c)];
        }
        out[outOff] = convert<T>(value(in, taps.data(), 0, 0));
      }
    });
  }

private:
  double value(const T *in, const Taps *const *taps, size_t d, int64_t off) const {
    if (d == outShape_.size())
      return double(load(in[off]));
    const Taps &t = *taps[d];
    if (t.outside)
      return spec_.extrapolation;
    double acc = 0;
    for (int i = 0; i < t.count; ++i)
      acc += t.tap[i].weight * value(in, taps, d + 1, off + t.tap[i].index * inStrides_[d]);
    return acc;
  }

  ResizeSpec spec_;
  std::vector<int64_t> inShape_, outShape_, inStrides_, outStrides_;
  std::vector<std::vector<Taps>> tables_;
  std::optional<SeparablePlan> separable_;
};

std::unique_ptr<Kernel> makeFor(const DescReader &r, const KernelOperand &in,
                                const KernelOperand &out, const ResizeSpec &spec,
                                const std::string &description) {
  std::unique_ptr<Kernel> kernel;
  visitDType(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>)
      kernel = std::make_unique<ResizeKernel<T>>(in, out, spec, description);
  });
  if (!kernel)
    r.error(cat("element type ", dtypeName(in.dtype), " is not supported"));
  return kernel;
}

std::unique_ptr<Kernel> makeResize(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Numeric);
  size_t rank = in.shape.size();
  std::vector<int64_t> sizes = r.getInts("sizes");
  if (sizes.size() != rank)
    r.error(cat("'sizes' must have ", rank, " entries (one per dimension), got ", sizes.size()));
  for (int64_t s : sizes)
    if (s < 0)
      r.error(cat("'sizes' entries must be >= 0, got ", shapeStr(sizes)));
  ResizeSpec spec;
  spec.scales = r.getFloats("scales");
  if (spec.scales.size() != rank)
    r.error(cat("'scales' must have ", rank, " entries (one per dimension), got ",
                spec.scales.size()));
  std::string mode = r.getString("mode", "nearest", {"nearest", "linear", "cubic"});
  spec.mode = mode == "nearest" ? Mode::Nearest : mode == "linear" ? Mode::Linear : Mode::Cubic;
  spec.coord = r.getString("coordinate_transformation_mode", "half_pixel",
                           {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                            "align_corners", "asymmetric", "tf_crop_and_resize",
                            "tf_half_pixel_for_nn"});
  spec.nearest = r.getString("nearest_mode", "round_prefer_floor",
                             {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  spec.cubicA = r.getFloat("cubic_coeff_a", -0.75);
  spec.excludeOutside = r.getBool("exclude_outside", false);
  spec.extrapolation = r.getFloat("extrapolation_value", 0.0);
  spec.roi = r.getFloats("roi", /*optional=*/true);
  if (!spec.roi.empty() && spec.roi.size() != 2 * rank)
    r.error(cat("'roi' must have ", 2 * rank, " entries (starts then ends), got ",
                spec.roi.size()));
  if (spec.coord == "tf_crop_and_resize" && spec.roi.empty()) {
    spec.roi.assign(rank, 0.0);
    spec.roi.resize(2 * rank, 1.0);
  }
  r.expectSameDType(in, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", sizes);
  return makeFor(r, in, r.output(0), spec,
                 cat("resize ", mode, " ", spec.coord, " ", shapeStr(in.shape), " -> ",
                     shapeStr(sizes)));
}

std::unique_ptr<Kernel> makeUpsample(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  r.expectDType(in, "input", DTypeClass::Numeric);
  std::vector<int64_t> factors = r.getInts("scale_size");
  size_t rank = in.shape.size();
  if (factors.empty() || factors.size() > rank)
    r.error(cat("'scale_size' must have between 1 and ", rank, " entries, got ", factors.size()));
  std::string mode = r.getString("mode", "nearest", {"nearest", "linear"});
  ResizeSpec spec;
  spec.scales.assign(rank, 1.0);
  std::vector<int64_t> shape = in.shape;
  for (size_t i = 0; i < factors.size(); ++i) {
    if (factors[i] < 1)
      r.error(cat("'scale_size' entries must be >= 1, got ", shapeStr(factors)));
    size_t d = rank - factors.size() + i;
    spec.scales[d] = double(factors[i]);
    shape[d] *= factors[i];
  }
  if (mode == "nearest") {
    // out[i] = in[floor(i / s)]
    spec.mode = Mode::Nearest;
    spec.coord = "asymmetric";
    spec.nearest = "floor";
  } else {
    spec.mode = Mode::Linear;
    spec.coord = "half_pixel";
  }
  r.expectSameDType(in, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", shape);
  return makeFor(r, in, r.output(0), spec,
                 cat("upsample ", mode, " ", shapeStr(in.shape), " x", shapeStr(factors)));
}

//===----------------------------------------------------------------------===//
// grid_sample (PyTorch's grid_sampler semantics, which ONNX GridSample-16
// follows: unnormalize, apply the padding mode to the coordinate, then
// interpolate with out-of-image taps reading 0; bicubic applies the padding
// mode per tap)
//===----------------------------------------------------------------------===//

enum class GsMode { Bilinear, Nearest, Bicubic };
enum class GsPad { Zeros, Border, Reflection };

struct GridSampler {
  GsMode mode;
  GsPad pad;
  bool align;
  int64_t h, w;

  double unnormalize(double v, int64_t size) const {
    return align ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  }
  static double clip(double v, int64_t size) {
    return std::min(double(size - 1), std::max(v, 0.0));
  }
  /// Reflects v about [lo, hi] (given doubled, as PyTorch does).
  static double reflect(double v, double twiceLo, double twiceHi) {
    if (twiceLo == twiceHi)
      return 0;
    double lo = twiceLo / 2, span = (twiceHi - twiceLo) / 2;
    if (!(v > -1e15 && v < 1e15)) // NaN or far outside
      return lo;
    v = std::fabs(v - lo);
    double extra = std::fmod(v, span);
    int64_t flips = int64_t(std::floor(v / span));
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
  }
  double padCoord(double v, int64_t size) const {
    if (pad == GsPad::Border)
      return clip(v, size);
    if (pad == GsPad::Reflection) {
      v = align ? reflect(v, 0, 2 * double(size - 1)) : reflect(v, -1, 2 * double(size) - 1);
      return clip(v, size);
    }
    return v;
  }
  static double tap(const double *img, int64_t x, int64_t y, int64_t w, int64_t h) {
    return x >= 0 && x < w && y >= 0 && y < h ? img[y * w + x] : 0.0;
  }
  /// An integer coordinate, or -1 (outside) for NaN and huge values.
  static int64_t index(double v) { return v > -1e15 && v < 1e15 ? int64_t(v) : -1; }
  static void cubicCoeffs(double t, double *c) {
    const double A = -0.75;
    auto conv1 = [&](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
    auto conv2 = [&](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
    c[0] = conv2(t + 1);
    c[1] = conv1(t);
    c[2] = conv1(1 - t);
    c[3] = conv2(2 - t);
  }

  double sample(const double *img, double gx, double gy) const {
    if (mode == GsMode::Bicubic) {
      double x = unnormalize(gx, w), y = unnormalize(gy, h);
      double x0 = std::floor(x), y0 = std::floor(y);
      if (!(x0 > -1e15 && x0 < 1e15 && y0 > -1e15 && y0 < 1e15))
        return 0.0;
      double cx[4], cy[4];
      cubicCoeffs(x - x0, cx);
      cubicCoeffs(y - y0, cy);
      double acc = 0;
      for (int i = 0; i < 4; ++i) {
        double row = 0;
        for (int j = 0; j < 4; ++j) {
          double tx = padCoord(x0 - 1 + j, w), ty = padCoord(y0 - 1 + i, h);
          row += cx[j] * tap(img, index(tx), index(ty), w, h);
        }
        acc += cy[i] * row;
      }
      return acc;
    }
    double x = padCoord(unnormalize(gx, w), w), y = padCoord(unnormalize(gy, h), h);
    if (mode == GsMode::Nearest)
      return tap(img, index(std::nearbyint(x)), index(std::nearbyint(y)), w, h);
    double x0 = std::floor(x), y0 = std::floor(y);
    double dx = x - x0, dy = y - y0;
    int64_t ix = index(x0), iy = index(y0);
    if (ix < 0 && !(x0 >= -1)) // NaN or far outside: every tap reads 0
      return 0.0;
    if (iy < 0 && !(y0 >= -1))
      return 0.0;
    return (1 - dy) * ((1 - dx) * tap(img, ix, iy, w, h) + dx * tap(img, ix + 1, iy, w, h)) +
           dy * ((1 - dx) * tap(img, ix, iy + 1, w, h) + dx * tap(img, ix + 1, iy + 1, w, h));
  }
};

template <class T> class GridSampleKernel final : public KernelBase {
public:
  GridSampleKernel(GridSampler s, int64_t n, int64_t c, int64_t ho, int64_t wo)
      : s_(s), n_(n), c_(c), ho_(ho), wo_(wo) {
    description_ = cat("grid_sample ", n, "x", c, "x", s.h, "x", s.w, " -> ", ho, "x", wo);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    const T *grid = static_cast<const T *>(args.inputs[1]);
    T *y = static_cast<T *>(args.outputs[0]);
    const int64_t plane = s_.h * s_.w, outPlane = ho_ * wo_;
    if (n_ * c_ * outPlane == 0)
      return;
    pool.parallelFor(n_ * c_, 1, [&](int64_t b, int64_t e) {
      std::vector<double> img(static_cast<size_t>(plane));
      for (int64_t nc = b; nc < e; ++nc) {
        int64_t n = nc / c_;
        for (int64_t i = 0; i < plane; ++i)
          img[size_t(i)] = double(load(x[nc * plane + i]));
        const T *g = grid + n * outPlane * 2;
        for (int64_t o = 0; o < outPlane; ++o) {
          double v = plane ? s_.sample(img.data(), double(load(g[2 * o])), double(load(g[2 * o + 1])))
                           : 0.0;
          y[nc * outPlane + o] = store<T>(Compute<T>(v));
        }
      }
    });
  }

private:
  GridSampler s_;
  int64_t n_, c_, ho_, wo_;
};

std::unique_ptr<Kernel> makeGridSample(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(2, 2);
  r.expectOutputs(1, 1);
  const KernelOperand &x = r.input(0, "input"), &grid = r.input(1, "grid");
  r.expectDType(x, "input", DTypeClass::Float);
  r.expectSameDType(x, "input", grid, "grid");
  if (x.shape.size() != 4)
    r.error("input must be N x C x H x W");
  if (grid.shape.size() != 4 || grid.shape[3] != 2)
    r.error(cat("grid must be N x Ho x Wo x 2, got ", shapeStr(grid.shape)));
  if (grid.shape[0] != x.shape[0])
    r.error(cat("grid batch ", grid.shape[0], " differs from input batch ", x.shape[0]));
  r.expectSameDType(x, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", {x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]});
  std::string mode = r.getString("mode", "bilinear", {"bilinear", "nearest", "bicubic"});
  std::string pad = r.getString("padding_mode", "zeros", {"zeros", "border", "reflection"});
  GridSampler s;
  s.mode = mode == "bilinear" ? GsMode::Bilinear : mode == "nearest" ? GsMode::Nearest : GsMode::Bicubic;
  s.pad = pad == "zeros" ? GsPad::Zeros : pad == "border" ? GsPad::Border : GsPad::Reflection;
  s.align = r.getBool("align_corners", false);
  s.h = x.shape[2];
  s.w = x.shape[3];
  std::unique_ptr<Kernel> kernel;
  visitDType(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<GridSampleKernel<T>>(s, x.shape[0], x.shape[1], grid.shape[1],
                                                     grid.shape[2]);
  });
  return kernel;
}

} // namespace

void registerResizeOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::Resize, makeResize, true});
  ops.push_back({OpKind::Upsample, makeUpsample, true});
  ops.push_back({OpKind::GridSample, makeGridSample, false});
}

} // namespace cgc::cpu
