//===- gemm.cpp - A portable blocked GEMM for non-oneDNN types ------------===//

#include "gemm.h"
#include "math.h"

#include <algorithm>

namespace cgc::cpu {
namespace {

template <class T> struct AccOf {
  using type = std::conditional_t<
      isFloatType<T>(), Compute<T>,
      std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>>;
};
template <class T> using Acc = typename AccOf<T>::type;

template <class T> CGC_INLINE Acc<T> toAcc(T v) {
  if constexpr (isFloatType<T>())
    return load(v);
  else
    return Acc<T>(v); // two's complement: modular arithmetic stays exact
}
template <class T> CGC_INLINE T fromAcc(Acc<T> v) {
  if constexpr (isFloatType<T>())
    return store<T>(v);
  else
    return T(v);
}

constexpr int64_t kMR = 4;
constexpr int64_t kKC = 256;
constexpr int64_t kNC = 512;
constexpr int64_t kMC = 64;

template <class A> constexpr int64_t nrOf() { return int64_t(128 / sizeof(A)); }

/// acc (MR x NR) = sum_p ap[p][0..MR) x bp[p][0..NR).
template <class A>
CGC_INLINE void microBody(int64_t kc, const A *ap, const A *bp, A *out) {
  constexpr int64_t NR = nrOf<A>();
  A acc[kMR][NR];
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t j = 0; j < NR; ++j)
      acc[i][j] = A(0);
  for (int64_t p = 0; p < kc; ++p) {
    const A *brow = bp + p * NR;
    const A *acol = ap + p * kMR;
    for (int64_t i = 0; i < kMR; ++i) {
      A av = acol[i];
      for (int64_t j = 0; j < NR; ++j)
        acc[i][j] += av * brow[j];
    }
  }
  for (int64_t i = 0; i < kMR; ++i)
    for (int64_t j = 0; j < NR; ++j)
      out[i * NR + j] = acc[i][j];
}

template <class A>
CGC_TARGET_AVX512 void microAvx512(int64_t kc, const A *ap, const A *bp, A *out) {
  microBody<A>(kc, ap, bp, out);
}
template <class A> void microBase(int64_t kc, const A *ap, const A *bp, A *out) {
  microBody<A>(kc, ap, bp, out);
}

template <class T>
void gemmTile(const GemmShape &s, const T *a, const T *b, T *c, int64_t m0, int64_t m1,
              int64_t n0, int64_t n1) {
  using A = Acc<T>;
  constexpr int64_t NR = nrOf<A>();
  auto micro = cpuHasAvx512() ? &microAvx512<A> : &microBase<A>;
  const int64_t nc = n1 - n0;
  const int64_t panels = (nc + NR - 1) / NR;
  std::vector<A> bpack(size_t(panels * NR * kKC));
  std::vector<A> apack(size_t(kMR * kKC));
  std::vector<A> cacc(size_t((m1 - m0) * nc), A(0));
  A tile[kMR * NR];
  for (int64_t p0 = 0; p0 < s.k; p0 += kKC) {
    const int64_t kc = std::min(kKC, s.k - p0);
    // Pack B(p0:p0+kc, n0:n1) into NR-wide panels, zero-padded.
    for (int64_t q = 0; q < panels; ++q) {
      A *dst = bpack.data() + q * NR * kc;
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t j = 0; j < NR; ++j) {
          int64_t col = n0 + q * NR + j;
          dst[p * NR + j] = col < n1 ? toAcc(b[(p0 + p) * s.bk + col * s.bn]) : A(0);
        }
    }
    for (int64_t i0 = m0; i0 < m1; i0 += kMR) {
      const int64_t mr = std::min(kMR, m1 - i0);
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t i = 0; i < kMR; ++i)
          apack[size_t(p * kMR + i)] = i < mr ? toAcc(a[(i0 + i) * s.am + (p0 + p) * s.ak]) : A(0);
      for (int64_t q = 0; q < panels; ++q) {
        micro(kc, apack.data(), bpack.data() + q * NR * kc, tile);
        const int64_t nr = std::min(NR, nc - q * NR);
        for (int64_t i = 0; i < mr; ++i) {
          A *row = cacc.data() + (i0 - m0 + i) * nc + q * NR;
          for (int64_t j = 0; j < nr; ++j)
            row[j] += tile[i * NR + j];
        }
      }
    }
  }
  for (int64_t i = m0; i < m1; ++i)
    for (int64_t j = n0; j < n1; ++j)
      c[i * s.cm + j * s.cn] = fromAcc<T>(cacc[size_t((i - m0) * nc + (j - n0))]);
}

} // namespace

template <class T>
void genericGemm(const GemmShape &s, const T *a, const T *b, T *c, ThreadPool *pool) {
  if (s.m == 0 || s.n == 0)
    return;
  const int64_t mBlocks = (s.m + kMC - 1) / kMC, nBlocks = (s.n + kNC - 1) / kNC;
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t mb = t / nBlocks, nb = t % nBlocks;
      gemmTile(s, a, b, c, mb * kMC, std::min(s.m, (mb + 1) * kMC), nb * kNC,
               std::min(s.n, (nb + 1) * kNC));
    }
  };
  if (pool && s.m * s.n * std::max<int64_t>(s.k, 1) > 65536)
    pool->parallelFor(mBlocks * nBlocks, 1, body);
  else
    body(0, mBlocks * nBlocks);
}

bool genericGemmSupports(cgc_dtype_t dtype) {
  return dtype != CGC_DTYPE_BOOL && cgc_dtype_size(dtype) != 0;
}

#define INSTANTIATE(T)                                                          \
  template void genericGemm<T>(const GemmShape &, const T *, const T *, T *, ThreadPool *);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(Half)
INSTANTIATE(BFloat16)
INSTANTIATE(int8_t)
INSTANTIATE(int16_t)
INSTANTIATE(int32_t)
INSTANTIATE(int64_t)
INSTANTIATE(uint8_t)
INSTANTIATE(uint16_t)
INSTANTIATE(uint32_t)
INSTANTIATE(uint64_t)
#undef INSTANTIATE

} // namespace cgc::cpu
