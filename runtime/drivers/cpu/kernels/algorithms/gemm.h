//===- gemm.h - A portable blocked GEMM for non-oneDNN types ----*- C++ -*-===//
//
// C = A x B over any element type, for the dtypes oneDNN does not multiply
// with the required semantics (float64; integers, which wrap modulo 2^n as
// numpy does). Operands are addressed by element strides, so transposed and
// broadcast views need no copies. Blocked as usual: B is packed per
// (KC x NC) block into NR-wide column panels, A per MR rows, and an MR x NR
// register tile accumulates in the accumulation type (double for float64,
// float for float32/16, unsigned 32/64-bit modular arithmetic for integers).
// The micro-kernel is compiled for AVX-512 and the baseline.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_GEMM_H
#define CGC_CPU_KERNELS_GEMM_H

#include "common.h"

namespace cgc::cpu {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  // Element strides: A(i, p) = a[i*am + p*ak], B(p, j) = b[p*bk + j*bn],
  // C(i, j) = c[i*cm + j*cn].
  int64_t am = 0, ak = 0, bk = 0, bn = 0, cm = 0, cn = 0;
};

/// C = A x B (C is overwritten). `pool` may be null (single-threaded).
template <class T>
void genericGemm(const GemmShape &s, const T *a, const T *b, T *c, ThreadPool *pool);

/// True if genericGemm is instantiated for this dtype (all but bool).
bool genericGemmSupports(cgc_dtype_t dtype);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_GEMM_H
