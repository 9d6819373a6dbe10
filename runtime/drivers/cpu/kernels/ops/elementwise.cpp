//===- elementwise.cpp - Elementwise cgc_op ops ---------------------------===//
//
// Each op is a functor over the compute type (float for float16/bfloat16)
// instantiated per dtype into row functions. Rows are compiled twice: for
// AVX-512 (selected at run time by cpuid) and for the x86-64 baseline. The
// unit-stride and broadcast-scalar cases are plain loops the compiler
// vectorizes; float32 transcendental functions come from math.h so that they
// vectorize too.
//
//===----------------------------------------------------------------------===//

#include "elementwise.h"
#include "logistic.h"
#include "math.h"

#include <algorithm>
#include <unordered_map>

namespace cgc::cpu {
namespace {

//===----------------------------------------------------------------------===//
// Integer helpers without undefined behaviour
//===----------------------------------------------------------------------===//

template <class C> CGC_INLINE C wrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return C(std::make_unsigned_t<C>(a) + std::make_unsigned_t<C>(b));
  else
    return C(a + b);
}
template <class C> CGC_INLINE C wrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return C(std::make_unsigned_t<C>(a) - std::make_unsigned_t<C>(b));
  else
    return C(a - b);
}
template <class C> CGC_INLINE C wrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    // Promote narrow types to unsigned int so the product cannot overflow a
    // signed int.
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned,
                                 std::make_unsigned_t<C>>;
    return C(U(a) * U(b));
  } else {
    return a * b;
  }
}
template <class C> CGC_INLINE C wrapNeg(C a) {
  if constexpr (std::is_integral_v<C>)
    return wrapSub<C>(C(0), a);
  else
    return -a;
}

template <class C> CGC_INLINE C floatMax(C a, C b) {
  // NaN in either operand gives NaN (numpy.maximum).
  C m = a > b ? a : b;
  m = b != b ? b : m;
  return a != a ? a : m;
}
template <class C> CGC_INLINE C floatMin(C a, C b) {
  C m = a < b ? a : b;
  m = b != b ? b : m;
  return a != a ? a : m;
}

//===----------------------------------------------------------------------===//
// Functors
//===----------------------------------------------------------------------===//

#define UNARY(NAME, EXPR)                                                       \
  struct NAME {                                                                 \
    template <class C> CGC_INLINE C operator()(C x) const { EXPR }              \
  };

template <class C> CGC_INLINE C expOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::expf(x);
  else
    return std::exp(x);
}
template <class C> CGC_INLINE C expm1Of(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::expm1f(x);
  else
    return std::expm1(x);
}
template <class C> CGC_INLINE C logOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::logf(x);
  else
    return std::log(x);
}
template <class C> CGC_INLINE C tanhOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::tanhf(x);
  else
    return std::tanh(x);
}
template <class C> CGC_INLINE C erfOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastmath::erff(x);
  else
    return std::erf(x);
}
template <class C> CGC_INLINE C softplusOf(C x) {
  // log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), without overflow.
  C m = x > C(0) ? x : C(0);
  C e = expOf<C>(-std::fabs(x));
  if constexpr (std::is_same_v<C, float>) {
    // log1p(e) as log(u) * e / (u - 1) with u = 1 + e (Goldberg): as exact
    // as log where 1 + e rounds, e itself where it rounds to 1, and on
    // fastmath's logf, so the loop vectorizes (libm's log1p made softplus
    // and Mish 33 ns per element).
    float u = 1.0f + e;
    float l = u == 1.0f ? e : fastmath::logf(u) * (e / (u - 1.0f));
    return m + l;
  } else {
    return m + C(std::log1p(e));
  }
}

struct Relu {
  template <class C> CGC_INLINE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return x > C(0) ? x : (x != x ? x : C(0));
    else
      return x > C(0) ? x : C(0);
  }
};
UNARY(Sigmoid, return C(1) / (C(1) + expOf<C>(-x));)
// x * sigmoid(x): the JIT's fold of sigmoid + mul (SiLU); not an ODS op.
UNARY(Swish, return x / (C(1) + expOf<C>(-x));)
UNARY(Tanh, return tanhOf<C>(x);)
UNARY(Erf, return erfOf<C>(x);)
UNARY(Exp, return expOf<C>(x);)
UNARY(Log, return logOf<C>(x);)
UNARY(Sqrt, return std::sqrt(x);)
UNARY(Reciprocal, return C(1) / x;)
UNARY(Neg, return wrapNeg<C>(x);)
struct Abs {
  template <class C> CGC_INLINE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return std::fabs(x);
    else if constexpr (std::is_signed_v<C>)
      return x < C(0) ? wrapNeg<C>(x) : x;
    else
      return x;
  }
};
struct Sign {
  template <class C> CGC_INLINE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return x > C(0) ? C(1) : (x < C(0) ? C(-1) : (x != x ? x : C(0)));
    else if constexpr (std::is_signed_v<C>)
      return C((x > C(0)) - (x < C(0)));
    else
      return C(x > C(0));
  }
};
UNARY(Floor, return std::floor(x);)
UNARY(Ceil, return std::ceil(x);)
UNARY(Round, return std::nearbyint(x);) // ties to even in the default mode
UNARY(Sin, return std::sin(x);)
UNARY(Cos, return std::cos(x);)
UNARY(Tan, return std::tan(x);)
UNARY(Asin, return std::asin(x);)
UNARY(Acos, return std::acos(x);)
UNARY(Atan, return std::atan(x);)
UNARY(Sinh, return std::sinh(x);)
UNARY(Cosh, return std::cosh(x);)
UNARY(Asinh, return std::asinh(x);)
UNARY(Acosh, return std::acosh(x);)
UNARY(Atanh, return std::atanh(x);)
UNARY(Softplus, return softplusOf<C>(x);)
UNARY(Softsign, return x / (C(1) + std::fabs(x));)
struct HardSwish {
  template <class C> CGC_INLINE C operator()(C x) const {
    C t = x * C(1.0 / 6.0) + C(0.5);
    t = t < C(0) ? C(0) : (t > C(1) ? C(1) : t);
    return x * t;
  }
};
UNARY(Mish, return x * tanhOf<C>(softplusOf<C>(x));)
UNARY(Identity, return x;)
struct IsNaN {
  template <class C> CGC_INLINE bool operator()(C x) const { return x != x; }
};
struct Not {
  CGC_INLINE bool operator()(bool x) const { return !x; }
};

struct Gelu {
  bool tanhApprox = false;
  template <class C> CGC_INLINE C operator()(C x) const {
    if (tanhApprox) {
      C inner = C(0.7978845608028654) * (x + C(0.044715) * x * x * x);
      return C(0.5) * x * (C(1) + tanhOf<C>(inner));
    }
    return C(0.5) * x * (C(1) + erfOf<C>(x * C(0.7071067811865476)));
  }
};
struct LeakyRelu {
  double alpha = 0.01;
  template <class C> CGC_INLINE C operator()(C x) const { return x >= C(0) ? x : C(alpha) * x; }
};
struct Elu {
  double alpha = 1.0;
  template <class C> CGC_INLINE C operator()(C x) const {
    return x >= C(0) ? x : C(alpha) * expm1Of<C>(x);
  }
};
struct Selu {
  double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
  template <class C> CGC_INLINE C operator()(C x) const {
    return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * expm1Of<C>(x));
  }
};
struct Celu {
  double alpha = 1.0;
  template <class C> CGC_INLINE C operator()(C x) const {
    C neg = C(alpha) * expm1Of<C>(x / C(alpha));
    C pos = x > C(0) ? x : C(0);
    return pos + (neg < C(0) ? neg : C(0));
  }
};
struct HardSigmoid {
  double alpha = 0.2, beta = 0.5;
  template <class C> CGC_INLINE C operator()(C x) const {
    C t = C(alpha) * x + C(beta);
    return t < C(0) ? C(0) : (t > C(1) ? C(1) : t);
  }
};
struct ThresholdedRelu {
  double alpha = 1.0;
  template <class C> CGC_INLINE C operator()(C x) const { return x > C(alpha) ? x : C(0); }
};
struct Shrink {
  double bias = 0.0, lambd = 0.5;
  template <class C> CGC_INLINE C operator()(C x) const {
    return x < C(-lambd) ? x + C(bias) : (x > C(lambd) ? x - C(bias) : C(0));
  }
};
/// Clip with bounds already in the compute type's range (see makeClip).
template <class C> struct Clip {
  C lo, hi;
  CGC_INLINE C operator()(C x) const {
    C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};
struct IsInf {
  bool positive = true, negative = true;
  template <class C> CGC_INLINE bool operator()(C x) const {
    const C inf = std::numeric_limits<C>::infinity();
    return (positive && x == inf) || (negative && x == -inf);
  }
};

// Binary
#define BINARY(NAME, EXPR)                                                      \
  struct NAME {                                                                 \
    template <class C> CGC_INLINE auto operator()(C a, C b) const { EXPR }      \
  };
BINARY(Add, return wrapAdd<C>(a, b);)
BINARY(Sub, return wrapSub<C>(a, b);)
BINARY(Mul, return wrapMul<C>(a, b);)
struct Div {
  template <class C> CGC_INLINE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return a / b;
    } else {
      // Division by zero is undefined in ONNX; 0 here instead of a trap.
      if (b == C(0))
        return C(0);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1))
          return wrapNeg<C>(a);
      return C(a / b);
    }
  }
};
struct Max {
  template <class C> CGC_INLINE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return floatMax(a, b);
    else
      return a > b ? a : b;
  }
};
struct Min {
  template <class C> CGC_INLINE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return floatMin(a, b);
    else
      return a < b ? a : b;
  }
};
BINARY(Equal, return bool(a == b);)
BINARY(Less, return bool(a < b);)
BINARY(LessOrEqual, return bool(a <= b);)
BINARY(Greater, return bool(a > b);)
BINARY(GreaterOrEqual, return bool(a >= b);)
BINARY(And, return bool(a && b);)
BINARY(Or, return bool(a || b);)
BINARY(Xor, return bool(a != b);)
struct Mod {
  bool fmod = false;
  template <class C> CGC_INLINE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(a, b);
    } else {
      if (b == C(0))
        return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1))
          return C(0);
        C r = C(a % b);
        if (!fmod && r != C(0) && ((r < C(0)) != (b < C(0))))
          r = C(r + b);
        return r;
      } else {
        return C(a % b);
      }
    }
  }
};
struct BitShift {
  bool left = true;
  template <class C> CGC_INLINE C operator()(C a, C b) const {
    if (b >= C(sizeof(C) * 8))
      return C(0);
    return left ? C(a << b) : C(a >> b);
  }
};
struct PRelu {
  template <class C> CGC_INLINE C operator()(C x, C slope) const {
    return x < C(0) ? wrapMul<C>(slope, x) : x;
  }
};

template <class C> CGC_INLINE C intPow(C base, int64_t e) {
  if (e < 0) {
    if constexpr (std::is_signed_v<C>) {
      if (base == C(1))
        return C(1);
      if (base == C(-1))
        return (e & 1) ? C(-1) : C(1);
    } else {
      if (base == C(1))
        return C(1);
    }
    return C(0); // |1 / base^|e|| < 1 truncates to 0 (and 1/0 is undefined)
  }
  C result = C(1);
  while (e) {
    if (e & 1)
      result = wrapMul<C>(result, base);
    base = wrapMul<C>(base, base);
    e >>= 1;
  }
  return result;
}

/// base ^ exponent with different compute types for the two operands.
struct Pow {
  template <class C, class E> CGC_INLINE C operator()(C a, E b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return C(std::pow(a, C(b)));
    } else if constexpr (std::is_floating_point_v<E>) {
      double r = std::pow(double(a), double(b));
      return convert<C>(r);
    } else {
      if constexpr (std::is_unsigned_v<E>)
        return intPow<C>(a, b > E(INT64_MAX) ? INT64_MAX : int64_t(b));
      else
        return intPow<C>(a, int64_t(b));
    }
  }
};

//===----------------------------------------------------------------------===//
// Row functions
//===----------------------------------------------------------------------===//

template <class TO, class TI, class Op>
CGC_INLINE void unaryBody(const Op &op, char *const *p, const int64_t *s, int64_t n) {
  TO *out = reinterpret_cast<TO *>(p[0]);
  const TI *in = reinterpret_cast<const TI *>(p[1]);
  if (s[0] == int64_t(sizeof(TO)) && s[1] == int64_t(sizeof(TI))) {
    if constexpr (std::is_same_v<TO, TI>) {
      // In place (epilogues, planner-aliased buffers): one pointer, so the
      // vectorized loop needs no overlap check (which exact aliasing fails).
      if (static_cast<const void *>(out) == static_cast<const void *>(in)) {
#pragma clang loop interleave_count(2)
        for (int64_t i = 0; i < n; ++i)
          out[i] = store<TO>(op(load(out[i])));
        return;
      }
    }
#pragma clang loop interleave_count(2)
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<TO>(op(load(in[i])));
  } else if (s[0] == int64_t(sizeof(TO)) && s[1] == 0) {
    TO v = store<TO>(op(load(in[0])));
    for (int64_t i = 0; i < n; ++i)
      out[i] = v;
  } else {
    char *o = p[0];
    const char *a = p[1];
    for (int64_t i = 0; i < n; ++i, o += s[0], a += s[1])
      *reinterpret_cast<TO *>(o) = store<TO>(op(load(*reinterpret_cast<const TI *>(a))));
  }
}

template <class TO, class TA, class TB, class Op>
CGC_INLINE void binaryBody(const Op &op, char *const *p, const int64_t *s, int64_t n) {
  TO *out = reinterpret_cast<TO *>(p[0]);
  const TA *a = reinterpret_cast<const TA *>(p[1]);
  const TB *b = reinterpret_cast<const TB *>(p[2]);
  const int64_t so = sizeof(TO), sa = sizeof(TA), sb = sizeof(TB);
  const void *o = out;
  if (s[0] == so && s[1] == sa && s[2] == sb) {
    if constexpr (std::is_same_v<TO, TA>) {
      if (o == static_cast<const void *>(a) && o != static_cast<const void *>(b)) {
        for (int64_t i = 0; i < n; ++i)
          out[i] = store<TO>(op(load(out[i]), load(b[i])));
        return;
      }
    }
    if constexpr (std::is_same_v<TO, TB>) {
      if (o == static_cast<const void *>(b) && o != static_cast<const void *>(a)) {
        for (int64_t i = 0; i < n; ++i)
          out[i] = store<TO>(op(load(a[i]), load(out[i])));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<TO>(op(load(a[i]), load(b[i])));
  } else if (s[0] == so && s[1] == sa && s[2] == 0) {
    auto bv = load(b[0]);
    if constexpr (std::is_same_v<TO, TA>) {
      if (o == static_cast<const void *>(a)) {
        for (int64_t i = 0; i < n; ++i)
          out[i] = store<TO>(op(load(out[i]), bv));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<TO>(op(load(a[i]), bv));
  } else if (s[0] == so && s[1] == 0 && s[2] == sb) {
    auto av = load(a[0]);
    if constexpr (std::is_same_v<TO, TB>) {
      if (o == static_cast<const void *>(b)) {
        for (int64_t i = 0; i < n; ++i)
          out[i] = store<TO>(op(av, load(out[i])));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      out[i] = store<TO>(op(av, load(b[i])));
  } else {
    char *o = p[0];
    const char *x = p[1], *y = p[2];
    for (int64_t i = 0; i < n; ++i, o += s[0], x += s[1], y += s[2])
      *reinterpret_cast<TO *>(o) = store<TO>(op(load(*reinterpret_cast<const TA *>(x)),
                                                 load(*reinterpret_cast<const TB *>(y))));
  }
}

template <class T>
CGC_INLINE void whereBody(char *const *p, const int64_t *s, int64_t n) {
  T *out = reinterpret_cast<T *>(p[0]);
  const Bool *c = reinterpret_cast<const Bool *>(p[1]);
  const T *x = reinterpret_cast<const T *>(p[2]);
  const T *y = reinterpret_cast<const T *>(p[3]);
  const int64_t st = sizeof(T);
  if (s[0] == st && s[1] == 1 && s[2] == st && s[3] == st) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = c[i].v ? x[i] : y[i];
  } else {
    char *o = p[0];
    const char *cc = p[1], *xx = p[2], *yy = p[3];
    for (int64_t i = 0; i < n; ++i, o += s[0], cc += s[1], xx += s[2], yy += s[3])
      *reinterpret_cast<T *>(o) = reinterpret_cast<const Bool *>(cc)->v
                                      ? *reinterpret_cast<const T *>(xx)
                                      : *reinterpret_cast<const T *>(yy);
  }
}

template <class Op> CGC_TARGET_AVX512 inline __m512 transcendental16(__m512 x) {
  if constexpr (std::is_same_v<Op, Swish>)
    return swish16(x);
  else if constexpr (std::is_same_v<Op, Sigmoid>)
    return sigmoid16(x);
  else
    return erf16(x);
}

template <class TO, class TI, class Op>
CGC_TARGET_AVX512 void unaryRowAvx512(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  constexpr bool registers =
      std::is_same_v<Op, Sigmoid> || std::is_same_v<Op, Swish> || std::is_same_v<Op, Erf>;
  if constexpr (registers && std::is_same_v<TO, float> && std::is_same_v<TI, float>) {
    // Swish, sigmoid (EfficientNet's epilogues) and erf (BERT's GELU) on
    // logistic.h's registers, 18-20 operations per vector: 0.154-0.156 ns
    // per element in cache, where the autovectorized fastmath versions took
    // 0.29 (swish) and 0.41 (erf). Strided rows keep fastmath's.
    if (s[0] == 4 && s[1] == 4) {
      float *out = reinterpret_cast<float *>(p[0]);
      const float *in = reinterpret_cast<const float *>(p[1]);
      int64_t i = 0;
      // Masked loads and stores only for the tail: they are slow on AMD.
      for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, transcendental16<Op>(_mm512_loadu_ps(in + i)));
      if (i < n) {
        const __mmask16 m = __mmask16((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m,
                              transcendental16<Op>(_mm512_maskz_loadu_ps(m, in + i)));
      }
      return;
    }
  }
  unaryBody<TO, TI>(*static_cast<const Op *>(ctx), p, s, n);
}
template <class TO, class TI, class Op>
void unaryRowBase(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  unaryBody<TO, TI>(*static_cast<const Op *>(ctx), p, s, n);
}
template <class TO, class TA, class TB, class Op>
CGC_TARGET_AVX512 void binaryRowAvx512(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  binaryBody<TO, TA, TB>(*static_cast<const Op *>(ctx), p, s, n);
}
template <class TO, class TA, class TB, class Op>
void binaryRowBase(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  binaryBody<TO, TA, TB>(*static_cast<const Op *>(ctx), p, s, n);
}
/// x * x: Pow's row function squares where the exponent is one value 2.
struct Square {
  template <class C, class E> CGC_INLINE C operator()(C a, E) const { return a * a; }
};
/// Pow on a float base. A row whose exponent is one broadcast value 2 (the
/// square in a decomposed layer norm or variance) runs as x * x, which
/// vectorizes: it is the correctly rounded square, as pow's result is at
/// best, and agrees with pow on NaN, +-0 and +-inf. std::pow per element cost
/// ~8 ns: ViT-B/16 exported at opset 14 spent 1.24 ms on each layer norm's
/// Pow of 197 x 768 elements, 31 ms per run at 1 thread.
template <class TO, class TA, class TB>
CGC_INLINE void powBody(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  if (s[2] == 0 && double(load(*reinterpret_cast<const TB *>(p[2]))) == 2.0)
    binaryBody<TO, TA, TB>(Square{}, p, s, n);
  else
    binaryBody<TO, TA, TB>(*static_cast<const Pow *>(ctx), p, s, n);
}
template <class TO, class TA, class TB>
CGC_TARGET_AVX512 void powRowAvx512(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  powBody<TO, TA, TB>(ctx, p, s, n);
}
template <class TO, class TA, class TB>
void powRowBase(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  powBody<TO, TA, TB>(ctx, p, s, n);
}
template <class T>
CGC_TARGET_AVX512 void whereRowAvx512(const void *, char *const *p, const int64_t *s, int64_t n) {
  whereBody<T>(p, s, n);
}
template <class T> void whereRowBase(const void *, char *const *p, const int64_t *s, int64_t n) {
  whereBody<T>(p, s, n);
}

template <class TO, class TI, class Op> void setUnary(ElementwiseOp &e, const Op &op) {
  e.row = cpuHasAvx512() ? &unaryRowAvx512<TO, TI, Op> : &unaryRowBase<TO, TI, Op>;
  e.ctx = std::make_shared<Op>(op);
}
template <class TO, class TA, class TB, class Op> void setBinary(ElementwiseOp &e, const Op &op) {
  e.row = cpuHasAvx512() ? &binaryRowAvx512<TO, TA, TB, Op> : &binaryRowBase<TO, TA, TB, Op>;
  e.ctx = std::make_shared<Op>(op);
}

//===----------------------------------------------------------------------===//
// Op table
//===----------------------------------------------------------------------===//

enum class Result { Same, Bool };

/// How to build one unary op: its dtype class, result kind, relative cost
/// and a builder that sets the row function for a dtype.
struct UnarySpec {
  DTypeClass cls;
  Result result;
  bool expensive;
  void (*build)(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &r);
};

template <class Op, DTypeClass Cls> void buildSimpleUnary(ElementwiseOp &e, cgc_dtype_t dtype,
                                                         const DescReader &) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (Cls == DTypeClass::Float) {
      if constexpr (isFloatType<T>())
        setUnary<T, T>(e, Op{});
    } else if constexpr (Cls == DTypeClass::Signed) {
      if constexpr (isFloatType<T>() || (isIntType<T>() && std::is_signed_v<T>))
        setUnary<T, T>(e, Op{});
    } else if constexpr (Cls == DTypeClass::Numeric) {
      if constexpr (!std::is_same_v<T, Bool>)
        setUnary<T, T>(e, Op{});
    } else if constexpr (Cls == DTypeClass::Any) {
      setUnary<T, T>(e, Op{});
    }
  });
}

template <class Op> void buildFloatToBool(ElementwiseOp &e, cgc_dtype_t dtype, const Op &op) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      setUnary<Bool, T>(e, op);
  });
}

template <class Op> void buildFloatParam(ElementwiseOp &e, cgc_dtype_t dtype, const Op &op) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isFloatType<T>())
      setUnary<T, T>(e, op);
  });
}

void buildGelu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, Gelu{r.getString("approximate", "none", {"none", "tanh"}) == "tanh"});
}
void buildLeakyRelu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, LeakyRelu{r.getFloat("alpha", 0.01)});
}
void buildElu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, Elu{r.getFloat("alpha", 1.0)});
}
void buildSelu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, Selu{r.getFloat("alpha", 1.67326319217681884765625),
                             r.getFloat("gamma", 1.05070102214813232421875)});
}
void buildCelu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  double alpha = r.getFloat("alpha", 1.0);
  if (alpha == 0)
    r.error("attribute 'alpha' must not be 0");
  buildFloatParam(e, d, Celu{alpha});
}
void buildHardSigmoid(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, HardSigmoid{r.getFloat("alpha", 0.2), r.getFloat("beta", 0.5)});
}
void buildThresholdedRelu(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, ThresholdedRelu{r.getFloat("alpha", 1.0)});
}
void buildShrink(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatParam(e, d, Shrink{r.getFloat("bias", 0.0), r.getFloat("lambd", 0.5)});
}
void buildIsNaN(ElementwiseOp &e, cgc_dtype_t d, const DescReader &) {
  buildFloatToBool(e, d, IsNaN{});
}
void buildIsInf(ElementwiseOp &e, cgc_dtype_t d, const DescReader &r) {
  buildFloatToBool(e, d, IsInf{r.getBool("detect_positive", true), r.getBool("detect_negative", true)});
}
void buildNot(ElementwiseOp &e, cgc_dtype_t, const DescReader &) { setUnary<Bool, Bool>(e, Not{}); }

void buildClip(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &r) {
  std::optional<double> lo = r.getOptionalFloat("min"), hi = r.getOptionalFloat("max");
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    if constexpr (!std::is_same_v<T, Bool>) {
      Clip<C> op;
      if constexpr (std::is_floating_point_v<C>) {
        op.lo = lo ? C(*lo) : -std::numeric_limits<C>::infinity();
        op.hi = hi ? C(*hi) : std::numeric_limits<C>::infinity();
        if constexpr (!std::is_same_v<T, C>) {
          // Bounds as the storage type would hold them.
          op.lo = load(store<T>(op.lo));
          op.hi = load(store<T>(op.hi));
        }
      } else {
        // Integer bounds: the integers inside [min, max], saturated.
        op.lo = lo ? convert<C>(std::ceil(*lo)) : std::numeric_limits<C>::min();
        op.hi = hi ? convert<C>(std::floor(*hi)) : std::numeric_limits<C>::max();
        if (lo && std::isnan(*lo))
          op.lo = std::numeric_limits<C>::min();
        if (hi && std::isnan(*hi))
          op.hi = std::numeric_limits<C>::max();
      }
      setUnary<T, T>(e, op);
    }
  });
}

const std::unordered_map<OpKind, UnarySpec> &unaryOps() {
  using D = DTypeClass;
  static const std::unordered_map<OpKind, UnarySpec> table = {
      {OpKind::Relu, {D::Signed, Result::Same, false, buildSimpleUnary<Relu, D::Signed>}},
      {OpKind::Sigmoid, {D::Float, Result::Same, true, buildSimpleUnary<Sigmoid, D::Float>}},
      {OpKind::Swish, {D::Float, Result::Same, true, buildSimpleUnary<Swish, D::Float>}},
      {OpKind::Tanh, {D::Float, Result::Same, true, buildSimpleUnary<Tanh, D::Float>}},
      {OpKind::Erf, {D::Float, Result::Same, true, buildSimpleUnary<Erf, D::Float>}},
      {OpKind::Exp, {D::Float, Result::Same, true, buildSimpleUnary<Exp, D::Float>}},
      {OpKind::Log, {D::Float, Result::Same, true, buildSimpleUnary<Log, D::Float>}},
      {OpKind::Sqrt, {D::Float, Result::Same, false, buildSimpleUnary<Sqrt, D::Float>}},
      {OpKind::Reciprocal, {D::Float, Result::Same, false, buildSimpleUnary<Reciprocal, D::Float>}},
      {OpKind::Neg, {D::Signed, Result::Same, false, buildSimpleUnary<Neg, D::Signed>}},
      {OpKind::Abs, {D::Numeric, Result::Same, false, buildSimpleUnary<Abs, D::Numeric>}},
      {OpKind::Sign, {D::Numeric, Result::Same, false, buildSimpleUnary<Sign, D::Numeric>}},
      {OpKind::Floor, {D::Float, Result::Same, false, buildSimpleUnary<Floor, D::Float>}},
      {OpKind::Ceil, {D::Float, Result::Same, false, buildSimpleUnary<Ceil, D::Float>}},
      {OpKind::Round, {D::Float, Result::Same, false, buildSimpleUnary<Round, D::Float>}},
      {OpKind::Sin, {D::Float, Result::Same, true, buildSimpleUnary<Sin, D::Float>}},
      {OpKind::Cos, {D::Float, Result::Same, true, buildSimpleUnary<Cos, D::Float>}},
      {OpKind::Tan, {D::Float, Result::Same, true, buildSimpleUnary<Tan, D::Float>}},
      {OpKind::Asin, {D::Float, Result::Same, true, buildSimpleUnary<Asin, D::Float>}},
      {OpKind::Acos, {D::Float, Result::Same, true, buildSimpleUnary<Acos, D::Float>}},
      {OpKind::Atan, {D::Float, Result::Same, true, buildSimpleUnary<Atan, D::Float>}},
      {OpKind::Sinh, {D::Float, Result::Same, true, buildSimpleUnary<Sinh, D::Float>}},
      {OpKind::Cosh, {D::Float, Result::Same, true, buildSimpleUnary<Cosh, D::Float>}},
      {OpKind::Asinh, {D::Float, Result::Same, true, buildSimpleUnary<Asinh, D::Float>}},
      {OpKind::Acosh, {D::Float, Result::Same, true, buildSimpleUnary<Acosh, D::Float>}},
      {OpKind::Atanh, {D::Float, Result::Same, true, buildSimpleUnary<Atanh, D::Float>}},
      {OpKind::Softplus, {D::Float, Result::Same, true, buildSimpleUnary<Softplus, D::Float>}},
      {OpKind::Softsign, {D::Float, Result::Same, false, buildSimpleUnary<Softsign, D::Float>}},
      {OpKind::HardSwish, {D::Float, Result::Same, false, buildSimpleUnary<HardSwish, D::Float>}},
      {OpKind::Mish, {D::Float, Result::Same, true, buildSimpleUnary<Mish, D::Float>}},
      {OpKind::IsNaN, {D::Float, Result::Bool, false, buildIsNaN}},
      {OpKind::Not, {D::Bool, Result::Same, false, buildNot}},
      {OpKind::Identity, {D::Any, Result::Same, false, buildSimpleUnary<Identity, D::Any>}},
      {OpKind::Gelu, {D::Float, Result::Same, true, buildGelu}},
      {OpKind::LeakyRelu, {D::Float, Result::Same, false, buildLeakyRelu}},
      {OpKind::Elu, {D::Float, Result::Same, true, buildElu}},
      {OpKind::Selu, {D::Float, Result::Same, true, buildSelu}},
      {OpKind::Celu, {D::Float, Result::Same, true, buildCelu}},
      {OpKind::HardSigmoid, {D::Float, Result::Same, false, buildHardSigmoid}},
      {OpKind::ThresholdedRelu, {D::Float, Result::Same, false, buildThresholdedRelu}},
      {OpKind::Shrink, {D::Float, Result::Same, false, buildShrink}},
      {OpKind::Clip, {D::Numeric, Result::Same, false, buildClip}},
      {OpKind::IsInf, {D::Float, Result::Bool, false, buildIsInf}},
  };
  return table;
}

struct BinarySpec {
  DTypeClass cls;
  Result result;
  void (*build)(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &r);
};

template <class Op, DTypeClass Cls, Result R>
void buildSimpleBinary(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &) {
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr bool ok = Cls == DTypeClass::Any ||
                        (Cls == DTypeClass::Numeric && !std::is_same_v<T, Bool>) ||
                        (Cls == DTypeClass::Bool && std::is_same_v<T, Bool>) ||
                        (Cls == DTypeClass::Signed &&
                         (isFloatType<T>() || (isIntType<T>() && std::is_signed_v<T>)));
    if constexpr (ok) {
      if constexpr (R == Result::Bool)
        setBinary<Bool, T, T>(e, Op{});
      else
        setBinary<T, T, T>(e, Op{});
    }
  });
}

void buildMod(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &r) {
  bool fmod = r.getBool("fmod", false);
  if (!fmod && dtypeIn(dtype, DTypeClass::Float))
    r.error(cat("floating-point mod (", dtypeName(dtype), ") requires fmod = true"));
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, Bool>)
      setBinary<T, T, T>(e, Mod{fmod});
  });
}

void buildBitShift(ElementwiseOp &e, cgc_dtype_t dtype, const DescReader &r) {
  std::string dir = r.getString("direction", std::nullopt, {"left", "right"});
  if (!dtypeIn(dtype, DTypeClass::Unsigned))
    r.error(cat("bit_shift requires unsigned integers, got ", dtypeName(dtype)));
  visitDType(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (isIntType<T>() && std::is_unsigned_v<T>)
      setBinary<T, T, T>(e, BitShift{dir == "left"});
  });
}

const std::unordered_map<OpKind, BinarySpec> &binaryOps() {
  using D = DTypeClass;
  static const std::unordered_map<OpKind, BinarySpec> table = {
      {OpKind::Add, {D::Numeric, Result::Same, buildSimpleBinary<Add, D::Numeric, Result::Same>}},
      {OpKind::Sub, {D::Numeric, Result::Same, buildSimpleBinary<Sub, D::Numeric, Result::Same>}},
      {OpKind::Mul, {D::Numeric, Result::Same, buildSimpleBinary<Mul, D::Numeric, Result::Same>}},
      {OpKind::Div, {D::Numeric, Result::Same, buildSimpleBinary<Div, D::Numeric, Result::Same>}},
      {OpKind::Max, {D::Numeric, Result::Same, buildSimpleBinary<Max, D::Numeric, Result::Same>}},
      {OpKind::Min, {D::Numeric, Result::Same, buildSimpleBinary<Min, D::Numeric, Result::Same>}},
      {OpKind::Equal, {D::Any, Result::Bool, buildSimpleBinary<Equal, D::Any, Result::Bool>}},
      {OpKind::Less, {D::Numeric, Result::Bool, buildSimpleBinary<Less, D::Numeric, Result::Bool>}},
      {OpKind::LessOrEqual,
       {D::Numeric, Result::Bool, buildSimpleBinary<LessOrEqual, D::Numeric, Result::Bool>}},
      {OpKind::Greater, {D::Numeric, Result::Bool, buildSimpleBinary<Greater, D::Numeric, Result::Bool>}},
      {OpKind::GreaterOrEqual,
       {D::Numeric, Result::Bool, buildSimpleBinary<GreaterOrEqual, D::Numeric, Result::Bool>}},
      {OpKind::And, {D::Bool, Result::Same, buildSimpleBinary<And, D::Bool, Result::Same>}},
      {OpKind::Or, {D::Bool, Result::Same, buildSimpleBinary<Or, D::Bool, Result::Same>}},
      {OpKind::Xor, {D::Bool, Result::Same, buildSimpleBinary<Xor, D::Bool, Result::Same>}},
      {OpKind::Mod, {D::Numeric, Result::Same, buildMod}},
      {OpKind::BitShift, {D::Integer, Result::Same, buildBitShift}},
  };
  return table;
}

/// Checks the output operand against the expected type.
void checkResult(const DescReader &r, cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
  r.expectOutputs(1, 1);
  const KernelOperand &out = r.output(0);
  if (out.dtype != dtype)
    r.error(cat("output has element type ", dtypeName(out.dtype), "; expected ", dtypeName(dtype)));
  r.expectShape(out, "output", shape);
}

std::vector<int64_t> broadcastOrFail(const DescReader &r, const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b) {
  std::vector<int64_t> shape;
  if (!broadcastShapes(a, b, shape))
    r.error(cat("shapes ", shapeStr(a), " and ", shapeStr(b), " are not broadcast-compatible"));
  return shape;
}

void buildCast(ElementwiseOp &e, cgc_dtype_t from, cgc_dtype_t to) {
  visitDType(from, [&](auto fromTag) {
    using F = typename decltype(fromTag)::type;
    visitDType(to, [&](auto toTag) {
      using T = typename decltype(toTag)::type;
      struct CastOp {
        CGC_INLINE Compute<T> operator()(Compute<F> x) const {
          return load(convert<T>(store<F>(x)));
        }
      };
      setUnary<T, F>(e, CastOp{});
    });
  });
}

void buildPow(ElementwiseOp &e, cgc_dtype_t base, cgc_dtype_t exponent) {
  visitDType(base, [&](auto baseTag) {
    using B = typename decltype(baseTag)::type;
    visitDType(exponent, [&](auto expTag) {
      using X = typename decltype(expTag)::type;
      if constexpr (isFloatType<B>() && !std::is_same_v<X, Bool>) {
        e.row = cpuHasAvx512() ? &powRowAvx512<B, B, X> : &powRowBase<B, B, X>;
        e.ctx = std::make_shared<Pow>();
      } else if constexpr (!std::is_same_v<B, Bool> && !std::is_same_v<X, Bool>) {
        setBinary<B, B, X>(e, Pow{});
      }
    });
  });
}

void buildWhere(ElementwiseOp &e, cgc_dtype_t dtype) {
  // Selection moves bytes: one instantiation per element size.
  switch (cgc_dtype_size(dtype)) {
  case 1: e.row = cpuHasAvx512() ? &whereRowAvx512<uint8_t> : &whereRowBase<uint8_t>; break;
  case 2: e.row = cpuHasAvx512() ? &whereRowAvx512<uint16_t> : &whereRowBase<uint16_t>; break;
  case 4: e.row = cpuHasAvx512() ? &whereRowAvx512<uint32_t> : &whereRowBase<uint32_t>; break;
  case 8: e.row = cpuHasAvx512() ? &whereRowAvx512<uint64_t> : &whereRowBase<uint64_t>; break;
  }
}

} // namespace

bool isElementwiseOp(OpKind op) {
  return unaryOps().count(op) || binaryOps().count(op) || op == OpKind::Cast ||
         op == OpKind::Pow || op == OpKind::PRelu || op == OpKind::Where;
}

ElementwiseOp makeElementwiseOp(const KernelDesc &desc) {
  DescReader r(desc);
  checkOperands(desc);
  ElementwiseOp e;
  if (auto it = unaryOps().find(desc.kind()); it != unaryOps().end()) {
    const UnarySpec &spec = it->second;
    r.expectInputs(1, 1);
    const KernelOperand &in = r.input(0, "input");
    r.expectDType(in, "input", spec.cls);
    spec.build(e, in.dtype, r);
    e.inDTypes = {in.dtype};
    e.outDType = spec.result == Result::Bool ? CGC_DTYPE_BOOL : in.dtype;
    e.outShape = in.shape;
    e.grain = spec.expensive ? 4096 : 32768;
  } else if (auto it = binaryOps().find(desc.kind()); it != binaryOps().end()) {
    const BinarySpec &spec = it->second;
    r.expectInputs(2, 2);
    const KernelOperand &a = r.input(0, "lhs"), &b = r.input(1, "rhs");
    r.expectDType(a, "lhs", spec.cls);
    r.expectSameDType(a, "lhs", b, "rhs");
    spec.build(e, a.dtype, r);
    e.inDTypes = {a.dtype, b.dtype};
    e.outDType = spec.result == Result::Bool ? CGC_DTYPE_BOOL : a.dtype;
    e.outShape = broadcastOrFail(r, a.shape, b.shape);
  } else if (desc.kind() == OpKind::Cast) {
    r.expectInputs(1, 1);
    const KernelOperand &in = r.input(0, "input");
    cgc_dtype_t to = r.getDType("to");
    buildCast(e, in.dtype, to);
    e.inDTypes = {in.dtype};
    e.outDType = to;
    e.outShape = in.shape;
  } else if (desc.kind() == OpKind::Pow) {
    r.expectInputs(2, 2);
    const KernelOperand &a = r.input(0, "base"), &b = r.input(1, "exponent");
    r.expectDType(a, "base", DTypeClass::Numeric);
    r.expectDType(b, "exponent", DTypeClass::Numeric);
    buildPow(e, a.dtype, b.dtype);
    e.inDTypes = {a.dtype, b.dtype};
    e.outDType = a.dtype;
    e.outShape = broadcastOrFail(r, a.shape, b.shape);
    e.grain = 4096;
  } else if (desc.kind() == OpKind::PRelu) {
    r.expectInputs(2, 2);
    const KernelOperand &x = r.input(0, "input"), &slope = r.input(1, "slope");
    r.expectDType(x, "input", DTypeClass::Signed);
    r.expectSameDType(x, "input", slope, "slope");
    std::vector<int64_t> shape = broadcastOrFail(r, x.shape, slope.shape);
    if (shape != x.shape)
      r.error(cat("slope shape ", shapeStr(slope.shape), " does not broadcast to the input shape ",
                  shapeStr(x.shape)));
    buildSimpleBinary<PRelu, DTypeClass::Signed, Result::Same>(e, x.dtype, r);
    e.inDTypes = {x.dtype, slope.dtype};
    e.outDType = x.dtype;
    e.outShape = x.shape;
  } else if (desc.kind() == OpKind::Where) {
    r.expectInputs(3, 3);
    const KernelOperand &c = r.input(0, "condition"), &x = r.input(1, "x"), &y = r.input(2, "y");
    r.expectDType(c, "condition", DTypeClass::Bool);
    r.expectSameDType(x, "x", y, "y");
    buildWhere(e, x.dtype);
    e.ctx = nullptr;
    e.inDTypes = {c.dtype, x.dtype, y.dtype};
    e.outDType = x.dtype;
    e.outShape = broadcastOrFail(r, c.shape, broadcastOrFail(r, x.shape, y.shape));
  } else {
    r.error("not an elementwise op");
  }
  if (!e.row)
    r.error(cat("element type ", dtypeName(e.inDTypes.empty() ? CGC_DTYPE_INVALID : e.inDTypes[0]),
                " is not supported"));
  checkResult(r, e.outDType, e.outShape);
  return e;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

namespace {

class ElementwiseKernel final : public KernelBase {
public:
  ElementwiseKernel(const KernelDesc &desc, ElementwiseOp op) : op_(std::move(op)) {
    std::vector<std::vector<int64_t>> strides;
    std::vector<size_t> sizes;
    const KernelOperand &out = desc.outputs[0];
    strides.push_back(out.effectiveStrides());
    sizes.push_back(cgc_dtype_size(out.dtype));
    for (const auto &in : desc.inputs) {
      strides.push_back(broadcastStrides(*in, out.shape));
      sizes.push_back(cgc_dtype_size(in->dtype));
    }
    plan_ = LoopPlan(out.shape, strides, sizes);
    numInputs_ = int(desc.inputs.size());
    description_ = cat(desc.op.substr(7), " ", dtypeName(out.dtype), " ", shapeStr(out.shape),
                       plan_.rank() <= 1 ? " (contiguous)" : " (strided)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    char *bases[kMaxOperands];
    bases[0] = static_cast<char *>(args.outputs[0]);
    for (int i = 0; i < numInputs_; ++i)
      bases[1 + i] = const_cast<char *>(static_cast<const char *>(args.inputs[i]));
    plan_.run(pool, bases, op_.row, op_.ctx.get(), op_.grain);
  }

private:
  ElementwiseOp op_;
  LoopPlan plan_;
  int numInputs_ = 0;
};

std::unique_ptr<Kernel> makeElementwiseKernel(const KernelDesc &desc, const KernelOptions &) {
  ElementwiseOp op = makeElementwiseOp(desc);
  return std::make_unique<ElementwiseKernel>(desc, std::move(op));
}

} // namespace

//===----------------------------------------------------------------------===//
// Epilogue
//===----------------------------------------------------------------------===//

Epilogue::Epilogue(const std::vector<int64_t> &shape, cgc_dtype_t dtype,
                   const std::vector<KernelDesc> &chain)
    : Epilogue(shape, dtype, chain, contiguousStrides(shape), [&] {
        std::vector<size_t> order(shape.size());
        for (size_t d = 0; d < order.size(); ++d)
          order[d] = d;
        return order;
      }()) {}

Epilogue::Epilogue(const std::vector<int64_t> &shape, cgc_dtype_t dtype,
                   const std::vector<KernelDesc> &chain, const std::vector<int64_t> &valueStrides,
                   const std::vector<size_t> &order) {
  std::vector<bool> seen(shape.size(), false);
  bool permutation = order.size() == shape.size() && valueStrides.size() == shape.size();
  for (size_t d : order) {
    permutation = permutation && d < shape.size() && !seen[d];
    if (permutation)
      seen[d] = true;
  }
  if (!permutation)
    fail(cat("internal error: epilogue order/strides do not match the shape ", shapeStr(shape)));
  // Dimensions (and every operand's strides) in position order.
  auto permute = [&](const std::vector<int64_t> &v) {
    std::vector<int64_t> r(order.size());
    for (size_t i = 0; i < order.size(); ++i)
      r[i] = v[order[i]];
    return r;
  };
  const std::vector<int64_t> posShape = permute(shape), strides = permute(valueStrides);
  size_t elem = cgc_dtype_size(dtype);
  for (const KernelDesc &desc : chain) {
    if (desc.kind() == OpKind::ErfGelu) {
      // The value, then k1..k3 (one float each) as extra operands.
      Step step;
      step.erfGelu = true;
      step.multiply = checkErfGelu(desc); // throws DescError with the reason
      if (desc.inputs[0]->shape != shape || dtype != CGC_DTYPE_FLOAT32)
        fail(cat(desc.op, ": input 0 is ", dtypeName(desc.inputs[0]->dtype), " ",
                 shapeStr(desc.inputs[0]->shape), " but the value it continues is ",
                 dtypeName(dtype), " ", shapeStr(shape)));
      for (int i = 0; i < 3; ++i)
        step.extraIndex.push_back(int(numExtra_++));
      step.plan = LoopPlan(posShape, {strides, strides}, {elem, elem}, /*reorder=*/false);
      steps_.push_back(std::move(step));
      continue;
    }
    if (!isElementwiseOp(desc.kind()))
      fail(cat(desc.op, " is not an elementwise op"));
    if (desc.inputs.empty() || !desc.inputs[0])
      fail(cat(desc.op, ": the epilogue's running value must be input 0"));
    const KernelOperand &running = *desc.inputs[0];
    if (running.shape != shape || running.dtype != dtype)
      fail(cat(desc.op, ": input 0 is ", dtypeName(running.dtype), " ", shapeStr(running.shape),
               " but the value it continues is ", dtypeName(dtype), " ", shapeStr(shape)));
    Step step;
    step.op = makeElementwiseOp(desc);
    if (step.op.outDType != dtype || step.op.outShape != shape)
      fail(cat(desc.op, ": changes the value to ", dtypeName(step.op.outDType), " ",
               shapeStr(step.op.outShape), "; an epilogue keeps ", dtypeName(dtype), " ",
               shapeStr(shape)));
    std::vector<std::vector<int64_t>> opStrides = {strides, strides};
    std::vector<size_t> sizes = {elem, elem};
    for (size_t i = 1; i < desc.inputs.size(); ++i) {
      opStrides.push_back(permute(broadcastStrides(*desc.inputs[i], shape)));
      sizes.push_back(cgc_dtype_size(desc.inputs[i]->dtype));
      step.extraIndex.push_back(int(numExtra_++));
    }
    // Keep the position order so that block ranges map to positions (no
    // reordering of dimensions).
    step.plan = LoopPlan(posShape, opStrides, sizes, /*reorder=*/false);
    steps_.push_back(std::move(step));
  }
}

namespace {
struct ErfGeluRowArgs {
  float k1, k2, k3;
  bool multiply;
};

/// An epilogue's erf_gelu over one row of the value, in place.
void erfGeluEpilogueRow(const void *ctx, char *const *p, const int64_t *s, int64_t n) {
  const auto &a = *static_cast<const ErfGeluRowArgs *>(ctx);
  if (s[0] == int64_t(sizeof(float)) && s[1] == int64_t(sizeof(float))) {
    erfGeluRow(reinterpret_cast<const float *>(p[1]), reinterpret_cast<float *>(p[0]), n, a.k1,
               a.k2, a.k3, a.multiply);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    erfGeluRow(reinterpret_cast<const float *>(p[1] + i * s[1]),
               reinterpret_cast<float *>(p[0] + i * s[0]), 1, a.k1, a.k2, a.k3, a.multiply);
}
} // namespace

void Epilogue::apply(char *data, const void *const *extra, int64_t begin, int64_t end) const {
  apply(data, data, extra, begin, end);
}

void Epilogue::apply(char *data, const char *source, const void *const *extra, int64_t begin,
                     int64_t end) const {
  for (const Step &step : steps_) {
    char *input = &step == &steps_.front() ? const_cast<char *>(source) : data;
    if (step.erfGelu) {
      char *bases[kMaxOperands] = {data, input};
      const ErfGeluRowArgs args{*static_cast<const float *>(extra[step.extraIndex[0]]),
                                *static_cast<const float *>(extra[step.extraIndex[1]]),
                                *static_cast<const float *>(extra[step.extraIndex[2]]),
                                step.multiply};
      step.plan.runRange(bases, erfGeluEpilogueRow, &args, begin, end);
      continue;
    }
    char *bases[kMaxOperands] = {data, input};
    for (size_t i = 0; i < step.extraIndex.size(); ++i)
      bases[2 + i] = const_cast<char *>(static_cast<const char *>(extra[step.extraIndex[i]]));
    step.plan.runRange(bases, step.op.row, step.op.ctx.get(), begin, end);
  }
}

namespace {

/// Elementwise fusion with no anchor (makeElementwiseChainKernel): the
/// head and its chain as one Epilogue whose first op reads the head's
/// input 0, run block by block over the output so that every op after the
/// first finds the block in cache.
class ElementwiseChainKernel final : public KernelBase {
public:
  ElementwiseChainKernel(const KernelDesc &head, const std::vector<KernelDesc> &chain) {
    const KernelOperand &out = chain.back().outputs[0];
    const KernelOperand &source = *head.inputs[0];
    if (source.shape != out.shape || source.dtype != out.dtype ||
        source.effectiveStrides() != out.effectiveStrides())
      fail(cat(head.op, ": input 0 (", dtypeName(source.dtype), " ", shapeStr(source.shape),
               ") is not laid out as the chain's result (", dtypeName(out.dtype), " ",
               shapeStr(out.shape), "): no running value to start from"));
    std::vector<KernelDesc> all;
    all.push_back(head);
    all.insert(all.end(), chain.begin(), chain.end());
    const std::vector<int64_t> strides = out.effectiveStrides();
    // Positions in order of decreasing stride: contiguous blocks in memory.
    std::vector<size_t> order(out.shape.size());
    for (size_t d = 0; d < order.size(); ++d)
      order[d] = d;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return strides[a] > strides[b]; });
    epilogue_ = Epilogue(out.shape, out.dtype, all, strides, order);
    elements_ = 1;
    for (int64_t d : out.shape)
      elements_ *= d;
    elementBytes_ = cgc_dtype_size(out.dtype);
    outSpan_ = size_t(out.byteSpan());
    for (size_t i = 1; i < head.inputs.size(); ++i)
      extraSpans_.push_back(head.inputs[i] ? size_t(head.inputs[i]->byteSpan()) : 0);
    for (const KernelDesc &op : chain)
      for (size_t i = 1; i < op.inputs.size(); ++i)
        extraSpans_.push_back(op.inputs[i] ? size_t(op.inputs[i]->byteSpan()) : 0);
    description_ = cat("elementwise chain ", head.op.substr(7));
    for (const KernelDesc &op : chain)
      description_ += cat(" -> ", op.op.substr(7));
    description_ += cat(" ", dtypeName(out.dtype), " ", shapeStr(out.shape),
                        " (one pass, no anchor)");
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    char *out = static_cast<char *>(args.outputs[0]);
    const char *source = static_cast<const char *>(args.inputs[0]);
    const void *const *extra = args.inputs + 1;
    // A later op reading bytes the chain writes (a residual placed where
    // the result goes) would see them already overwritten: then the chain
    // runs into scratch first. Reading the source where the result goes is
    // fine: each position is read before it is written.
    bool overlaps = false;
    for (size_t i = 0; i < extraSpans_.size(); ++i) {
      const char *e = static_cast<const char *>(extra[i]);
      overlaps |= e && e < out + outSpan_ && out < e + extraSpans_[i];
    }
    Scratch scratch;
    char *target = out;
    if (overlaps) {
      scratch.allocate(outSpan_);
      target = scratch.as<char>();
    }
    // Blocks of ~16K elements: each op's operands for a block stay in L2.
    constexpr int64_t kBlock = 16384;
    const int64_t blocks = (elements_ + kBlock - 1) / kBlock;
    pool.run(size_t(blocks), [&](size_t b) {
      const int64_t begin = int64_t(b) * kBlock, end = std::min(elements_, begin + kBlock);
      epilogue_.apply(target, source, extra, begin, end);
    });
    if (overlaps)
      std::memcpy(out, target, outSpan_);
  }

  std::string describe() const override { return description_; }
  /// The head's input 0 may be the result's bytes (read before written).
  int inPlaceInput() const override { return 0; }

private:
  Epilogue epilogue_;
  int64_t elements_ = 0;
  size_t elementBytes_ = 0, outSpan_ = 0;
  std::vector<size_t> extraSpans_;
  std::string description_;
};

} // namespace

std::unique_ptr<Kernel> makeElementwiseChainKernel(const KernelDesc &head,
                                                   const std::vector<KernelDesc> &chain) {
  if (chain.empty())
    fail(cat(head.op, ": an elementwise chain needs an op after its head"));
  if (head.outputs.size() != 1 || head.inputs.empty() || !head.inputs[0])
    fail(cat(head.op, ": a chain's head has one output and an input 0"));
  return std::make_unique<ElementwiseChainKernel>(head, chain);
}

void registerElementwiseOps(std::vector<OpEntry> &ops) {
  for (const auto &[op, spec] : unaryOps())
    ops.push_back({op, makeElementwiseKernel});
  for (const auto &[op, spec] : binaryOps())
    ops.push_back({op, makeElementwiseKernel});
  for (OpKind op : {OpKind::Cast, OpKind::Pow, OpKind::PRelu, OpKind::Where})
    ops.push_back({op, makeElementwiseKernel});
}

LeadingClamp leadingClamp(const std::vector<KernelDesc> &chain, const std::vector<int64_t> &shape) {
  LeadingClamp c;
  if (chain.empty() || chain[0].inputs.size() != 1)
    return c;
  if (chain[0].kind() == OpKind::Relu) {
    c.lo = 0.0f, c.zero = 0.0f;
  } else if (chain[0].kind() == OpKind::Clip) {
    DescReader r(chain[0]);
    std::optional<double> lo = r.getOptionalFloat("min"), hi = r.getOptionalFloat("max");
    c.lo = lo ? float(*lo) : -std::numeric_limits<float>::infinity();
    c.hi = hi ? float(*hi) : std::numeric_limits<float>::infinity();
  } else {
    return c;
  }
  // Check the op as its own kernel would (dtype, shape).
  ElementwiseOp op = makeElementwiseOp(chain[0]);
  if (op.outDType != CGC_DTYPE_FLOAT32 || op.outShape != shape)
    fail(cat(chain[0].op, ": an epilogue keeps float32 ", shapeStr(shape)));
  c.ops = 1;
  c.name = chain[0].op.substr(7);
  return c;
}

} // namespace cgc::cpu
