//===- gemv.h - Products of one row with a B stored N x K -------*- C++ -*-===//
//
// A matmul or gemm with one row (M = 1, no batch) whose B has contiguous rows
// along K (B stored N x K, a Linear layer's weight: gemm with transpose_b)
// is a matrix-vector product: each result is the dot product of one row of
// B with A's row. The kernel streams B once in storage order (isa/row_dots.h),
// with no packed copy of it: nothing is prepared on the first run, no second
// copy of the weights is held, and the product runs at the memory's
// bandwidth. gemm's alpha and C and the elementwise chain after the product
// are applied to each block of results while it is in cache.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_GEMV_ALGORITHM_H
#define CGC_CPU_KERNELS_GEMV_ALGORITHM_H

#include "common.h"

#include <optional>

namespace cgc::cpu {

/// The product's shape and where its operands lie.
struct RowProduct {
  int64_t n = 0, k = 0;
  /// B stored K x N (rows along N contiguous) rather than N x K.
  bool bByRows = false;
  int64_t bRowStride = 0; // elements between B's stored rows
  int64_t yStride = 0;    // elements between results (1 when bByRows)
  double alpha = 1, beta = 1;
  std::optional<KernelOperand> c; // gemm's C, broadcast to [1, N]
  KernelOperand output;           // the last op's result (the chain's value)
};

/// Empty if the product of `anchor` with these facts runs as row dot
/// products, else why not.
/// `layout`: B's stored rows are contiguous (B stored N x K, or K x N with
/// a contiguous result) and A's row is.
std::string rowProductMismatch(bool float32, bool oneRow, bool layout, bool haveAvx512);

/// The kernel: inputs a, b[, c], then the chain's extra operands from
/// `firstExtra` on. Throws DescError if the chain does not apply to the
/// result (an op that changes its shape or dtype).
std::unique_ptr<Kernel> makeRowProduct(const RowProduct &product,
                                       const std::vector<KernelDesc> &chain, size_t firstExtra,
                                       const std::string &what);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_GEMV_ALGORITHM_H
