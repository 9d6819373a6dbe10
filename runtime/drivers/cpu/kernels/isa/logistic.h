//===- logistic.h - AVX-512 exp, sigmoid, swish, erf of 16 floats -*- C++ -*-===//
//
// sigmoid(x) = 1 / (1 + exp(-x)) and swish(x) = x * sigmoid(x) on zmm
// registers, for the elementwise ops and the packed GEMM's epilogue. With
// t = exp(-|x|) in (0, 1], sigmoid is 1 / (1 + t) for x >= 0 and t / (1 + t)
// below, so nothing overflows and results in the subnormal range are right.
// t = 2^n * e^r with n = round(-|x| / ln 2), r = -|x| - n ln 2 (one FMA:
// float ln 2 is 1.9e-9 off, which moves r by at most 2e-7 at |x| = 104),
// e^r by a degree-5 polynomial fitted for least relative error on
// [-ln2 / 2, ln2 / 2] (1.1e-7), 2^n by vscalefps; 1 / (1 + t) by vrcp14ps
// and one Newton step. NaN passes through every step (max and min return
// their second operand when one is NaN). Max relative error of swish 4.0e-7
// against long double on [-80, 100] (9.3e-7 below, where t is subnormal).
//
// This machine runs about two zmm operations per cycle, so the count of
// operations is the cost: 18 per vector, 0.154 ns per element in cache,
// where the first version (Cephes' degree-6 expf with a two-constant
// reduction, NaN restored by a compare and a blend: 26) took 0.227.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_LOGISTIC_H
#define CGC_CPU_KERNELS_LOGISTIC_H

#include "common.h"

#include <immintrin.h>

namespace cgc::cpu {

/// t = exp(-|x|), as above.
[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 expMinusAbs(__m512 x) {
  // -|x|, at least -104 (t = 0 beyond the subnormals there): the infinities
  // become finite, NaN stays NaN.
  __m512 nx = _mm512_or_ps(x, _mm512_set1_ps(-0.0f));
  nx = _mm512_max_ps(_mm512_set1_ps(-104.0f), nx);
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(nx, _mm512_set1_ps(1.44269504088896341f)),
                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693147180559945f), nx);
  __m512 p = _mm512_set1_ps(0.008312502f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.041890334f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.16667116f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.4999923f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

/// 1 / (1 + t) for t in [0, 1] (or NaN).
[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 reciprocalOnePlus(__m512 t) {
  const __m512 d = _mm512_add_ps(t, _mm512_set1_ps(1.0f));
  const __m512 q = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(q, _mm512_fnmadd_ps(d, q, _mm512_set1_ps(2.0f)));
}

[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 sigmoid16(__m512 x) {
  const __m512 t = expMinusAbs(x), q = reciprocalOnePlus(t);
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_mul_ps(q, negative, q, t);
}

[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 swish16(__m512 x) {
  const __m512 t = expMinusAbs(x), q = reciprocalOnePlus(t);
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mul_ps(_mm512_mask_mul_ps(x, negative, x, t), q);
}

/// erf(x) = x P(x^2) / Q(x^2) for |x| <= 4 (P, Q of degree 5: a rational
/// fit for least relative error on (0, 4], 2.5e-8 in exact arithmetic),
/// +-1 beyond (erf(4) is 1 - 1.5e-8: 1.0f). Max error in float, against
/// long double: 3.5e-7 relative, 6 ulp next to 1 (fastmath::erff, the A&S
/// 7.1.26 form above |x| = 1 and a Taylor series below, both evaluated:
/// 2.1e-7, 3 ulp). 20 operations: 0.156 ns per element in cache, where
/// fastmath::erff vectorized (about 60) takes 0.411.
/// NaN stays NaN (min and max return their second operand).
[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 erf16(__m512 x) {
  const __m512 a = _mm512_max_ps(_mm512_set1_ps(-4.0f), _mm512_min_ps(_mm512_set1_ps(4.0f), x));
  const __m512 z = _mm512_mul_ps(a, a);
  __m512 p = _mm512_set1_ps(1.9867778e-06f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(0.0002845676f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(0.0038834012f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(0.053101923f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(0.19354634f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.1283791f));
  __m512 q = _mm512_set1_ps(3.7420217e-05f);
  q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(0.0011855857f));
  q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(0.015207364f));
  q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(0.11535053f));
  q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(0.50485855f));
  q = _mm512_fmadd_ps(q, z, _mm512_set1_ps(1.0f));
  __m512 r = _mm512_rcp14_ps(q);
  r = _mm512_mul_ps(r, _mm512_fnmadd_ps(q, r, _mm512_set1_ps(2.0f)));
  const __m512 e = _mm512_mul_ps(_mm512_mul_ps(a, p), r);
  return _mm512_max_ps(_mm512_set1_ps(-1.0f), _mm512_min_ps(_mm512_set1_ps(1.0f), e));
}

/// The erf GELU as exporters write it (gelu.cpp), on 16 floats: x * (erf(x
/// / k1) + k2) * k3, or x * k1 when `Multiply`; one float32 operation per
/// layer in the layers' order, erf by erf16. The erf_gelu kernel and the
/// packed GEMM's epilogue both compute it so: the same bits either way.
template <bool Multiply>
[[gnu::always_inline]] CGC_TARGET_AVX512 inline __m512 erfGelu16(__m512 v, __m512 k1, __m512 k2,
                                                                 __m512 k3) {
  const __m512 t = Multiply ? _mm512_mul_ps(v, k1) : _mm512_div_ps(v, k1);
  const __m512 a = _mm512_add_ps(erf16(t), k2);
  return _mm512_mul_ps(_mm512_mul_ps(v, a), k3);
}

/// erfGelu16 over n floats from x into y (may be x): whole vectors, then
/// one masked vector for the rest.
template <bool Multiply>
[[gnu::always_inline]] CGC_TARGET_AVX512 inline void erfGeluSpan(const float *x, float *y,
                                                                 int64_t n, __m512 k1, __m512 k2,
                                                                 __m512 k3) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, erfGelu16<Multiply>(_mm512_loadu_ps(x + i), k1, k2, k3));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m,
                          erfGelu16<Multiply>(_mm512_maskz_loadu_ps(m, x + i), k1, k2, k3));
  }
}

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_LOGISTIC_H
