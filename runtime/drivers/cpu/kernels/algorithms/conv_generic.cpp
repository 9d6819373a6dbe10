//===- conv_generic.cpp - Convolutions as im2col + blocked GEMM -----------===//
//
// Any float type (float64, float16, and what oneDNN has only its reference
// kernel for): im2col (col2im for conv_transpose) with genericGemm, in
// bounded column blocks, on contiguous operands (conv.cpp adapts others).
//
//===----------------------------------------------------------------------===//

#include "conv_internal.h"
#include "gemm.h"
#include "math.h"

#include <algorithm>
#include <cstring>

namespace cgc::cpu::conv {
namespace {


template <class T> class GenericConvKernel final : public KernelBase {
public:
  explicit GenericConvKernel(const ConvGeom &g) : g_(g) {
    description_ = geomText(g) + " (im2col + blocked GEMM)";
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const T *x = static_cast<const T *>(args.inputs[0]);
    const T *w = static_cast<const T *>(args.inputs[1]);
    const T *bias = g_.hasBias ? static_cast<const T *>(args.inputs[2]) : nullptr;
    T *y = static_cast<T *>(args.outputs[0]);
    const int64_t inSp = numElements(g_.in), outSp = numElements(g_.out);
    const int64_t G = g_.groups, cg = g_.inC / G, mg = g_.outC / G, ks = g_.kernelSize();
    if (g_.batch * g_.outC * outSp == 0)
      return;
    if (!g_.transpose) {
      // y[n, g*mg + m, o] = sum_{c, k} w[g*mg + m, c, k] * col[c*ks + k, o]
      const int64_t block = std::max<int64_t>(1, std::min<int64_t>(outSp, (1 << 22) / std::max<int64_t>(cg * ks, 1)));
      Scratch colBuf(size_t(cg * ks * block) * sizeof(T));
      T *col = colBuf.as<T>();
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t o0 = 0; o0 < outSp; o0 += block) {
            int64_t nb = std::min(block, outSp - o0);
            im2col(x + (n * g_.inC + gi * cg) * inSp, cg, o0, nb, col);
            GemmShape s{mg, nb, cg * ks, cg * ks, 1, nb, 1, outSp, 1};
            genericGemm<T>(s, w + gi * mg * cg * ks, col, y + (n * g_.outC + gi * mg) * outSp + o0,
                           &pool);
          }
    } else {
      // cols[m*ks + k, i] = sum_c w[g*cg + c, m, k] * x[n, g*cg + c, i]; then
      // col2im scatters cols into y.
      std::fill(y, y + g_.batch * g_.outC * outSp, store<T>(Compute<T>(0)));
      const int64_t block = std::max<int64_t>(1, std::min<int64_t>(inSp, (1 << 22) / std::max<int64_t>(mg * ks, 1)));
      Scratch colBuf(size_t(mg * ks * block) * sizeof(T));
      T *col = colBuf.as<T>();
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t gi = 0; gi < G; ++gi)
          for (int64_t i0 = 0; i0 < inSp; i0 += block) {
            int64_t nb = std::min(block, inSp - i0);
            // A = w_g^T: (mg*ks) x cg with A(r, c) = w[(g*cg + c)*mg*ks + r]
            GemmShape s{mg * ks, nb, cg, 1, mg * ks, inSp, 1, nb, 1};
            genericGemm<T>(s, w + gi * cg * mg * ks, x + (n * g_.inC + gi * cg) * inSp + i0, col,
                           &pool);
            col2im(col, mg, i0, nb, y + (n * g_.outC + gi * mg) * outSp);
          }
    }
    if (bias) {
      for (int64_t n = 0; n < g_.batch; ++n)
        for (int64_t m = 0; m < g_.outC; ++m) {
          Compute<T> b = load(bias[m]);
          T *p = y + (n * g_.outC + m) * outSp;
          for (int64_t o = 0; o < outSp; ++o)
            p[o] = store<T>(load(p[o]) + b);
        }
    }
  }

private:
  /// Maps linear position `pos` in `shape` to coordinates.
  static void coords(int64_t pos, const std::vector<int64_t> &shape, int64_t *c) {
    for (size_t d = shape.size(); d-- > 0;) {
      c[d] = pos % shape[d];
      pos /= shape[d];
    }
  }

  void im2col(const T *x, int64_t channels, int64_t o0, int64_t nb, T *col) const {
    const size_t sp = g_.spatial();
    const int64_t ks = g_.kernelSize(), inSp = numElements(g_.in);
    int64_t kc[16], oc[16];
    for (int64_t k = 0; k < ks; ++k) {
      coords(k, g_.kernel, kc);
      for (int64_t j = 0; j < nb; ++j) {
        coords(o0 + j, g_.out, oc);
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < sp; ++d) {
          int64_t i = oc[d] * g_.stride[d] - g_.padBegin[d] + kc[d] * g_.dilation[d];
          if (i < 0 || i >= g_.in[d]) {
            inside = false;
            break;
          }
          off = off * g_.in[d] + i;
        }
        for (int64_t c = 0; c < channels; ++c)
          col[(c * ks + k) * nb + j] = inside ? x[c * inSp + off] : store<T>(Compute<T>(0));
      }
    }
  }

  void col2im(const T *col, int64_t channels, int64_t i0, int64_t nb, T *y) const {
    const size_t sp = g_.spatial();
    const int64_t ks = g_.kernelSize(), outSp = numElements(g_.out);
    int64_t kc[16], ic[16];
    for (int64_t k = 0; k < ks; ++k) {
      coords(k, g_.kernel, kc);
      for (int64_t j = 0; j < nb; ++j) {
        coords(i0 + j, g_.in, ic);
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < sp; ++d) {
          int64_t o = ic[d] * g_.stride[d] - g_.padBegin[d] + kc[d] * g_.dilation[d];
          if (o < 0 || o >= g_.out[d]) {
            inside = false;
            break;
          }
          off = off * g_.out[d] + o;
        }
        if (!inside)
          continue;
        for (int64_t m = 0; m < channels; ++m) {
          T &dst = y[m * outSp + off];
          dst = store<T>(load(dst) + load(col[(m * ks + k) * nb + j]));
        }
      }
    }
  }

  ConvGeom g_;
};

} // namespace

std::unique_ptr<Kernel> makeGenericConv(const ConvGeom &g, cgc_dtype_t dtype) {
  std::unique_ptr<Kernel> kernel;
  visitDType(dtype, [&](auto tagT) {
    using T = typename decltype(tagT)::type;
    if constexpr (isFloatType<T>())
      kernel = std::make_unique<GenericConvKernel<T>>(g);
  });
  return kernel;
}

} // namespace cgc::cpu::conv
