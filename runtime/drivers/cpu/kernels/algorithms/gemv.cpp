//===- gemv.cpp - Products of one row with a B stored N x K ---------------===//

#include "gemv.h"
#include "elementwise.h"
#include "row_dots.h"

#include <algorithm>

namespace cgc::cpu {

std::string rowProductMismatch(bool float32, bool oneRow, bool layout, bool haveAvx512) {
  if (!haveAvx512)
    return "no AVX-512";
  if (!float32)
    return "not float32";
  if (!oneRow)
    return "not a product of one row (M = 1, no batch)";
  if (!layout)
    return "neither B stored N x K nor K x N with a contiguous result (or A's row is strided)";
  if (!activeConfig().rowProduct)
    return "the configuration says row-product=0";
  return "";
}

namespace {

class RowProductKernel final : public KernelBase {
public:
  RowProductKernel(const RowProduct &p, const std::vector<KernelDesc> &chain, size_t firstExtra,
                   const std::string &what)
      : p_(p), firstExtra_(firstExtra) {
    if (p_.c) {
      const KernelOperand &c = *p_.c;
      cStride_ = !c.shape.empty() && c.shape.back() == p_.n && p_.n > 1
                     ? c.effectiveStrides().back()
                     : 0;
    }
    if (!chain.empty()) {
      std::vector<size_t> order(p_.output.shape.size());
      for (size_t i = 0; i < order.size(); ++i)
        order[i] = i;
      epilogue_ = Epilogue(p_.output.shape, CGC_DTYPE_FLOAT32, chain,
                           p_.output.effectiveStrides(), order);
    }
    description_ = cat(what, " 1x", p_.k, "x", p_.n, chainSummaryOf(chain),
                       p_.bByRows ? " (row combinations: B (K x N)" : " (row dot products: B",
                       " streamed once as stored, not packed; AVX-512, split across the pool)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const float *a = static_cast<const float *>(args.inputs[0]);
    const float *b = static_cast<const float *>(args.inputs[1]);
    const float *c = p_.c ? static_cast<const float *>(args.inputs[2]) : nullptr;
    float *y = static_cast<float *>(args.outputs[0]);
    const void *const *extra = args.inputs + firstExtra_;
    // Chunks of at least ~32K multiply-adds: a smaller one costs more to
    // hand to a worker than it saves.
    const int64_t grain = std::max<int64_t>(4, 32768 / std::max<int64_t>(p_.k, 1));
    pool.parallelFor(p_.n, grain, [&](int64_t begin, int64_t end) {
      if (p_.bByRows)
        combineRowsAvx512(b + begin, p_.bRowStride, end - begin, a, p_.k, y + begin);
      else
        dotRowsAvx512(b + begin * p_.bRowStride, p_.bRowStride, end - begin, a, p_.k,
                      y + begin * p_.yStride, p_.yStride);
      if (p_.alpha != 1 || c) {
        const float alpha = float(p_.alpha), beta = float(p_.beta);
        for (int64_t i = begin; i < end; ++i) {
          float &v = y[i * p_.yStride];
          v = alpha * v + (c ? beta * c[i * cStride_] : 0.0f);
        }
      }
      if (!epilogue_.empty())
        epilogue_.apply(reinterpret_cast<char *>(y), extra, begin, end);
    });
  }

private:
  static std::string chainSummaryOf(const std::vector<KernelDesc> &chain) {
    std::string s;
    for (const KernelDesc &op : chain)
      s += "+" + op.op.substr(7);
    return s;
  }

  RowProduct p_;
  size_t firstExtra_;
  int64_t cStride_ = 0;
  Epilogue epilogue_;
};

} // namespace

std::unique_ptr<Kernel> makeRowProduct(const RowProduct &product,
                                       const std::vector<KernelDesc> &chain, size_t firstExtra,
                                       const std::string &what) {
  return std::make_unique<RowProductKernel>(product, chain, firstExtra, what);
}

} // namespace cgc::cpu
