//===- row_dots.h - Row dot products: a matrix-vector product ---*- C++ -*-===//
//
// y[i * yStride] = dot(A[i, :], x) for the rows of a row-major matrix whose
// rows are contiguous: the product of one row with a B stored N x K (a
// Linear layer's weight at batch 1). Every weight is read once, in order,
// with no packed copy: the product is bound by the memory bandwidth.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_ROW_DOTS_H
#define CGC_CPU_KERNELS_ROW_DOTS_H

#include <cstdint>

namespace cgc::cpu {

/// Rows [0, count) of `rows` (row i at rows + i * rowStride, k contiguous
/// floats) dotted with the k floats of `x`, into y[i * yStride]. AVX-512:
/// four rows at a time, two 16-lane accumulators per row, the tail masked.
/// Call only where cpuHasAvx512().
void dotRowsAvx512(const float *rows, int64_t rowStride, int64_t count, const float *x,
                   int64_t k, float *y, int64_t yStride);

/// The combination of the k rows of a matrix whose columns [0, count) are
/// contiguous (row j at rows + j * rowStride) weighted by x:
/// y[i] = sum_j x[j] * rows[j * rowStride + i] for i in [0, count) (y
/// contiguous): the product of one row with a B stored K x N, B read row by
/// row in storage order. AVX-512: 128 columns at a time in registers.
void combineRowsAvx512(const float *rows, int64_t rowStride, int64_t count, const float *x,
                       int64_t k, float *y);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_ROW_DOTS_H
