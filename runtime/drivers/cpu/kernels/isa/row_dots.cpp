//===- row_dots.cpp - Row dot products on AVX-512 -------------------------===//

#include "row_dots.h"
#include "common.h"

#include <algorithm>
#include <immintrin.h>

namespace cgc::cpu {

namespace {

CGC_TARGET_AVX512 inline __mmask16 tailMask(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

/// Rows r0..r0+R-1 (R <= 4) of the block, each with two accumulators so
/// that consecutive fused multiply-adds do not wait on one another.
template <int R>
CGC_TARGET_AVX512 void dotBlock(const float *rows, int64_t rowStride, const float *x, int64_t k,
                                float *y, int64_t yStride) {
  __m512 acc0[R], acc1[R];
  for (int r = 0; r < R; ++r) {
    acc0[r] = _mm512_setzero_ps();
    acc1[r] = _mm512_setzero_ps();
  }
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    const __m512 x0 = _mm512_loadu_ps(x + j), x1 = _mm512_loadu_ps(x + j + 16);
    for (int r = 0; r < R; ++r) {
      const float *row = rows + r * rowStride + j;
      acc0[r] = _mm512_fmadd_ps(_mm512_loadu_ps(row), x0, acc0[r]);
      acc1[r] = _mm512_fmadd_ps(_mm512_loadu_ps(row + 16), x1, acc1[r]);
    }
  }
  for (; j < k; j += 16) {
    const __mmask16 m = tailMask(k - j);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + j);
    for (int r = 0; r < R; ++r)
      acc0[r] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, rows + r * rowStride + j), xv, acc0[r]);
  }
  for (int r = 0; r < R; ++r)
    y[r * yStride] = _mm512_reduce_add_ps(_mm512_add_ps(acc0[r], acc1[r]));
}

} // namespace

CGC_TARGET_AVX512 void dotRowsAvx512(const float *rows, int64_t rowStride, int64_t count,
                                     const float *x, int64_t k, float *y, int64_t yStride) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4)
    dotBlock<4>(rows + i * rowStride, rowStride, x, k, y + i * yStride, yStride);
  for (; i < count; ++i)
    dotBlock<1>(rows + i * rowStride, rowStride, x, k, y + i * yStride, yStride);
}

namespace {

/// Columns [0, 16 * V) (the last vector masked by `tail`) of the combination.
template <int V>
CGC_TARGET_AVX512 void combineBlock(const float *rows, int64_t rowStride, const float *x,
                                    int64_t k, float *y, __mmask16 tail) {
  __m512 acc[V];
  for (int v = 0; v < V; ++v)
    acc[v] = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; ++j) {
    const __m512 w = _mm512_set1_ps(x[j]);
    const float *row = rows + j * rowStride;
    for (int v = 0; v < V - 1; ++v)
      acc[v] = _mm512_fmadd_ps(_mm512_loadu_ps(row + 16 * v), w, acc[v]);
    acc[V - 1] =
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, row + 16 * (V - 1)), w, acc[V - 1]);
  }
  for (int v = 0; v < V - 1; ++v)
    _mm512_storeu_ps(y + 16 * v, acc[v]);
  _mm512_mask_storeu_ps(y + 16 * (V - 1), tail, acc[V - 1]);
}

} // namespace

CGC_TARGET_AVX512 void combineRowsAvx512(const float *rows, int64_t rowStride, int64_t count,
                                         const float *x, int64_t k, float *y) {
  int64_t i = 0;
  for (; i + 128 <= count; i += 128)
    combineBlock<8>(rows + i, rowStride, x, k, y + i, 0xFFFF);
  while (i < count) {
    const int64_t left = count - i;
    const int64_t vectors = std::min<int64_t>((left + 15) / 16, 8);
    const int64_t width = std::min<int64_t>(left, 16 * vectors);
    const __mmask16 tail = tailMask(width - 16 * (vectors - 1));
    switch (vectors) {
    case 1: combineBlock<1>(rows + i, rowStride, x, k, y + i, tail); break;
    case 2: combineBlock<2>(rows + i, rowStride, x, k, y + i, tail); break;
    case 3: combineBlock<3>(rows + i, rowStride, x, k, y + i, tail); break;
    case 4: combineBlock<4>(rows + i, rowStride, x, k, y + i, tail); break;
    case 5: combineBlock<5>(rows + i, rowStride, x, k, y + i, tail); break;
    case 6: combineBlock<6>(rows + i, rowStride, x, k, y + i, tail); break;
    case 7: combineBlock<7>(rows + i, rowStride, x, k, y + i, tail); break;
    default: combineBlock<8>(rows + i, rowStride, x, k, y + i, tail); break;
    }
    i += width;
  }
}

} // namespace cgc::cpu
