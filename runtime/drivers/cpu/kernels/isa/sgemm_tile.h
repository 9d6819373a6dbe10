//===- sgemm_tile.h - The packed GEMM's register-tile pieces -----*- C++ -*-===//
//
// The parts of a register tile that the classic product (sgemm.cpp) and
// Strassen's (strassen.cpp) share: the K loop that fills the MR x NV
// accumulators from rows of A and a packed panel of B, and the epilogue ops
// applied to them. Private to cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_SGEMM_TILE_H
#define CGC_CPU_KERNELS_SGEMM_TILE_H

#include "sgemm.h"

#include <immintrin.h>

#include <algorithm>

namespace cgc::cpu::tile_detail {

using Args = PackedSgemm::Args;

// The AVX-512 level of CGC_TARGET_AVX512 and prefetchw, on every function of
// the tile (a helper with other target features would not inline into it).
#define CGC_SGEMM_TARGET                                                        \
  __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi,bmi2,lzcnt,"     \
                        "popcnt,prfchw")))
/// The tile's helpers: inlined into it always (a call would spill its
/// accumulators).
#define CGC_SGEMM_INLINE CGC_SGEMM_TARGET inline __attribute__((always_inline))
using Kind = SgemmOp::Kind;

/// The erf GELU (SgemmOp::Kind::ErfGelu, the last op) on `rows` rows of
/// `cols` columns of C from (row, col), in place (sgemm_gelu.cpp). Out of
/// line on purpose: the GELU's code and constants inlined into the tile
/// functions made them spill in their K loops (BERT's Strassen products
/// 1.7x slower, with or without a GELU).
void erfGeluRows(const Args &g, const SgemmOp &op, int64_t row, int64_t col, int64_t rows,
                 int64_t cols);

/// x op y for the binary op K.
template <Kind K> CGC_SGEMM_INLINE __m512 binary(__m512 x, __m512 y) {
  if constexpr (K == Kind::Add)
    return _mm512_add_ps(x, y);
  else if constexpr (K == Kind::Sub)
    return _mm512_sub_ps(x, y);
  else if constexpr (K == Kind::Mul)
    return _mm512_mul_ps(x, y);
  else
    return _mm512_div_ps(x, y);
}

/// The binary op K of `op` on the MR x NV accumulators of the tile at
/// (row, col).
template <Kind K, int MR, int NV>
CGC_SGEMM_INLINE void applyBinary(const Args &g, const SgemmOp &op, __m512 (&acc)[MR][NV],
                                  int64_t row, int64_t col, __mmask16 last) {
  auto mask = [&](int v) { return v == NV - 1 ? last : __mmask16(0xffff); };
  const float *base = g.operands[op.operand] + row * op.rowStride;
  if (op.rowStride == 0) {
    // One operand row for the whole tile (a bias): NV loads.
    __m512 y[NV];
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      y[v] = op.colStride == 0 ? _mm512_set1_ps(*base)
                               : _mm512_maskz_loadu_ps(mask(v), base + col + 16 * v);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = binary<K>(acc[i][v], y[v]);
    return;
  }
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    const float *p = base + i * op.rowStride;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) {
      const __m512 y = op.colStride == 0 ? _mm512_set1_ps(*p)
                                         : _mm512_maskz_loadu_ps(mask(v), p + col + 16 * v);
      acc[i][v] = binary<K>(acc[i][v], y);
    }
  }
}

/// Applies `op` to the MR x NV accumulators of the tile at (row, col). The
/// switch on the op's kind is outside the loops over the accumulators: per
/// accumulator it cost a third of a 16-deep tile's time (MobileNetV2's
/// 16->96 1x1 convolution with bias and relu6: 256 -> 180 us).
template <int MR, int NV>
CGC_SGEMM_INLINE void applyOp(const Args &g, const SgemmOp &op, __m512 (&acc)[MR][NV],
                              int64_t row, int64_t col, __mmask16 last) {
  switch (op.kind) {
  case Kind::Scale: {
    const __m512 alpha = _mm512_set1_ps(op.alpha);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_mul_ps(acc[i][v], alpha);
    return;
  }
  case Kind::Relu: {
    const __m512 alpha = _mm512_set1_ps(op.alpha), zero = _mm512_setzero_ps();
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v) {
        const __mmask16 negative = _mm512_cmp_ps_mask(acc[i][v], zero, _CMP_LT_OQ);
        acc[i][v] = _mm512_mask_mul_ps(acc[i][v], negative, acc[i][v], alpha);
      }
    return;
  }
  case Kind::Clip: {
    // max/min return their second operand when either is NaN: NaN stays.
    const __m512 lo = _mm512_set1_ps(op.alpha), hi = _mm512_set1_ps(op.beta);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_min_ps(hi, _mm512_max_ps(lo, acc[i][v]));
    return;
  }
  case Kind::Linear: {
    const __m512 alpha = _mm512_set1_ps(op.alpha), beta = _mm512_set1_ps(op.beta);
#pragma clang loop unroll(full)
    for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
      for (int v = 0; v < NV; ++v)
        acc[i][v] = _mm512_fmadd_ps(acc[i][v], alpha, beta);
    return;
  }
  case Kind::ErfGelu: // finishTile applies it to the stored tile
    return;
  case Kind::Add:
    return applyBinary<Kind::Add>(g, op, acc, row, col, last);
  case Kind::Sub:
    return applyBinary<Kind::Sub>(g, op, acc, row, col, last);
  case Kind::Mul:
    return applyBinary<Kind::Mul>(g, op, acc, row, col, last);
  case Kind::Div:
    return applyBinary<Kind::Div>(g, op, acc, row, col, last);
  }
}

/// Step p (< pfLines) of a K loop of `k` steps that prefetches `pfLines`
/// cache lines from `pf`: line p, and line p + k when there are more than k.
CGC_SGEMM_INLINE void prefetchShare(const char *pf, int64_t p, int64_t k, int64_t pfLines) {
  _mm_prefetch(pf + 64 * p, _MM_HINT_T0);
  if (p + k < pfLines)
    _mm_prefetch(pf + 64 * (p + k), _MM_HINT_T0);
}

/// Panel rows for accumulate(): row p of a packed panel at bp + p * width.
struct PackedRows {
  const float *bp;
  int64_t width;
  template <int NV> CGC_SGEMM_INLINE void load(int64_t p, __m512 (&b)[NV]) const {
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      b[v] = _mm512_load_ps(bp + p * width + 16 * v);
  }
};

/// Step p of accumulate()'s K loop.
template <int MR, int NV, class Rows>
CGC_SGEMM_INLINE void kStep(__m512 (&acc)[MR][NV], const float *a, int64_t lda,
                            const Rows &rows, int64_t p) {
  __m512 b[NV];
  rows.template load<NV>(p, b);
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    const __m512 x = _mm512_set1_ps(a[i * lda + p]);
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_fmadd_ps(x, b[v], acc[i][v]);
  }
}

/// acc = the MR rows of A at `a` (row stride `lda`) times the `k` x 16 NV
/// panel whose rows `rows.load<NV>(p, b)` gives (PackedRows: a packed
/// panel); prefetches the `pfLines` (at most 2k) cache lines from `pf` on the
/// way (a share of the next panel).
///
/// The steps past the prefetches run four to an iteration: one loop
/// iteration per step spent a third of its instructions on the counter,
/// the prefetch test and the row addresses (the 6x64 tile: 44 instructions
/// per 24 FMAs). On the Xeon VM (Granite Rapids, 2 FMA ports), bench-kernels
/// at 1 thread: BERT's 128x768x768 179 -> 187 GFLOP/s, ResNet-50's
/// 196x256x1024 with its weights from DRAM 0.64 -> 0.59 ms; whole models
/// (alternating processes): ResNet-50 0.97x at 1 thread and 0.93x at 2,
/// ResNeXt-50 0.95x, BERT 0.96x. This needs sgemm.cpp and strassen.cpp
/// compiled without LLVM's machine scheduler (CMakeLists.txt): with it the
/// unrolled loops of the 10x32 and 12x32 tiles spilled their accumulators.
template <int MR, int NV, class Rows>
CGC_SGEMM_INLINE void
accumulate(__m512 (&acc)[MR][NV], const float *a, int64_t lda, const Rows &rows, int64_t k,
           const char *pf, int64_t pfLines) {
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i)
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v)
      acc[i][v] = _mm512_setzero_ps();
  const int64_t prefetching = std::min(k, pfLines);
  int64_t p = 0;
  for (; p < prefetching; ++p) {
    prefetchShare(pf, p, k, pfLines);
    kStep<MR, NV>(acc, a, lda, rows, p);
  }
#pragma clang loop unroll_count(4)
  for (; p < k; ++p)
    kStep<MR, NV>(acc, a, lda, rows, p);
}

/// Applies ops [0, opCount) to the tile at (row, col), then stores it to C
/// (the last vector holding the columns of `lastCols`).
template <int MR, int NV>
CGC_SGEMM_INLINE void
finishTile(const Args &g, const SgemmOp *ops, size_t opCount, __m512 (&acc)[MR][NV], int64_t row,
           int64_t col, int lastCols) {
  const __mmask16 last = __mmask16((1u << lastCols) - 1);
  for (size_t o = 0; o < opCount; ++o)
    applyOp<MR, NV>(g, ops[o], acc, row, col, last);
  const bool gelu = opCount > 0 && ops[opCount - 1].kind == Kind::ErfGelu;
#pragma clang loop unroll(full)
  for (int i = 0; i < MR; ++i) {
    float *c = g.c + (row + i) * g.ldc + col;
#pragma clang loop unroll(full)
    for (int v = 0; v < NV; ++v) {
      if (v == NV - 1 && lastCols != 16)
        _mm512_mask_storeu_ps(c + 16 * v, last, acc[i][v]);
      else
        _mm512_storeu_ps(c + 16 * v, acc[i][v]);
    }
  }
  if (gelu) // the tile is stored: nothing lives across the call
    erfGeluRows(g, ops[opCount - 1], row, col, MR, 16 * (NV - 1) + lastCols);
}

} // namespace cgc::cpu::tile_detail

#endif // CGC_CPU_KERNELS_SGEMM_TILE_H
