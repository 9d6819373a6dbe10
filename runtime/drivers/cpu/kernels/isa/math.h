//===- math.h - Vectorizable float32 math -----------------------*- C++ -*-===//
//
// Branch-free float32 exp, log, tanh, sigmoid and erf built from arithmetic
// and bit operations only, so loops calling them vectorize (libm calls do
// not). Accuracy is a few ulp over the whole range; special values (NaN,
// +-inf, overflow, underflow) follow libm. float64 code calls libm.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_MATH_H
#define CGC_CPU_KERNELS_MATH_H

#include "common.h"

#include <cmath>

#define CGC_INLINE [[gnu::always_inline]] inline

namespace cgc::cpu::fastmath {

/// exp(x): Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, a degree-6
/// polynomial for exp(r) and 2^n assembled in two factors so that results
/// down to the subnormal range are right.
CGC_INLINE float expf(float x) {
  const float hi = 88.7228317f, lo = -103.972084f;
  float xc = x > hi ? hi : (x < lo ? lo : x);
  xc = x != x ? 0.0f : xc; // NaN: no float->int conversion of NaN below
  float n = std::nearbyint(xc * 1.44269504088896341f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n = 2^(n/2) * 2^(n - n/2): each factor stays a normal float.
  int32_t ni = int32_t(n);
  int32_t n1 = ni >> 1, n2 = ni - n1;
  float s1 = bitsFloat(uint32_t(n1 + 127) << 23);
  float s2 = bitsFloat(uint32_t(n2 + 127) << 23);
  float result = p * s1 * s2;
  result = x > hi ? std::numeric_limits<float>::infinity() : result;
  result = x < lo ? 0.0f : result;
  return x != x ? x : result;
}

/// log(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by the Cephes
/// polynomial in (m - 1).
CGC_INLINE float logf(float x) {
  uint32_t u = floatBits(x);
  // Scale subnormals into the normal range.
  bool sub = x < 1.17549435e-38f;
  float xs = sub ? x * 8388608.0f : x; // 2^23
  u = floatBits(xs);
  int32_t e = int32_t((u >> 23) & 0xff) - 127;
  float m = bitsFloat((u & 0x007fffffu) | 0x3f800000u); // [1, 2)
  bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  float ef = float(e) - (sub ? 23.0f : 0.0f);
  float f = m - 1.0f;
  float z = f * f;
  float y = 7.0376836292e-2f;
  y = y * f - 1.1514610310e-1f;
  y = y * f + 1.1676998740e-1f;
  y = y * f - 1.2420140846e-1f;
  y = y * f + 1.4249322787e-1f;
  y = y * f - 1.6668057665e-1f;
  y = y * f + 2.0000714765e-1f;
  y = y * f - 2.4999993993e-1f;
  y = y * f + 3.3333331174e-1f;
  y = y * f * z;
  y += ef * -2.12194440e-4f;
  y += -0.5f * z;
  float result = f + y + ef * 0.693359375f;
  const float inf = std::numeric_limits<float>::infinity();
  result = x == inf ? inf : result;
  result = x == 0.0f ? -inf : result;
  result = x < 0.0f ? std::numeric_limits<float>::quiet_NaN() : result;
  return x != x ? x : result;
}

/// tanh(x): an odd polynomial (Cephes) for |x| < 0.625, else
/// 1 - 2 / (exp(2|x|) + 1) with the sign restored.
CGC_INLINE float tanhf(float x) {
  float a = std::fabs(x);
  float z = x * x;
  float small = -5.70498872745e-3f;
  small = small * z + 2.06390887954e-2f;
  small = small * z - 5.37397155531e-2f;
  small = small * z + 1.33314422036e-1f;
  small = small * z - 3.33332819422e-1f;
  small = small * z * x + x;
  float e = expf(2.0f * (a > 44.0f ? 44.0f : a));
  float large = 1.0f - 2.0f / (e + 1.0f);
  large = std::copysign(large, x);
  float result = a < 0.625f ? small : large;
  return x != x ? x : result;
}

/// exp(x) - 1, accurate near 0 (a Taylor polynomial for |x| < 0.5).
CGC_INLINE float expm1f(float x) {
  float p = 1.0f / 40320.0f;
  p = p * x + 1.0f / 5040.0f;
  p = p * x + 1.0f / 720.0f;
  p = p * x + 1.0f / 120.0f;
  p = p * x + 1.0f / 24.0f;
  p = p * x + 1.0f / 6.0f;
  p = p * x + 0.5f;
  float small = (p * x) * x + x;
  float large = expf(x) - 1.0f;
  return std::fabs(x) < 0.5f ? small : large;
}

/// 1 / (1 + exp(-x)).
CGC_INLINE float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/// erf(x): the odd Taylor series for |x| <= 1 (relative error < 2e-7), the
/// Abramowitz-Stegun 7.1.26 form 1 - t P(t) exp(-x^2) above.
CGC_INLINE float erff(float x) {
  float a = std::fabs(x);
  float z = x * x;
  // sum_{k} (-1)^k x^(2k+1) / (k! (2k+1)) * 2/sqrt(pi), k = 0..9
  float s = -1.0e0f / (362880.0f * 19.0f);
  s = s * z + 1.0f / (40320.0f * 17.0f);
  s = s * z - 1.0f / (5040.0f * 15.0f);
  s = s * z + 1.0f / (720.0f * 13.0f);
  s = s * z - 1.0f / (120.0f * 11.0f);
  s = s * z + 1.0f / (24.0f * 9.0f);
  s = s * z - 1.0f / (6.0f * 7.0f);
  s = s * z + 1.0f / (2.0f * 5.0f);
  s = s * z - 1.0f / 3.0f;
  s = s * z + 1.0f;
  float small = s * x * 1.12837916709551257f;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float large = 1.0f - p * t * expf(-z);
  large = std::copysign(large, x);
  float result = a <= 1.0f ? small : large;
  return x != x ? x : result;
}

} // namespace cgc::cpu::fastmath

#endif // CGC_CPU_KERNELS_MATH_H
