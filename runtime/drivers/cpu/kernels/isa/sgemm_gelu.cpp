//===- sgemm_gelu.cpp - The packed GEMM's erf GELU epilogue ---------------===//
//
// Out of sgemm.cpp so that only the register tiles are compiled without
// LLVM's machine scheduler (CMakeLists.txt); the GELU's polynomial keeps
// the usual instruction scheduling.
//
//===----------------------------------------------------------------------===//

#include "logistic.h"
#include "sgemm_tile.h"

namespace cgc::cpu::tile_detail {

[[gnu::noinline]] CGC_SGEMM_TARGET void erfGeluRows(const Args &g, const SgemmOp &op,
                                                   int64_t row, int64_t col, int64_t rows,
                                                   int64_t cols) {
  const float *const *k = g.operands + op.operand;
  const __m512 k1 = _mm512_set1_ps(*k[0]), k2 = _mm512_set1_ps(*k[1]),
               k3 = _mm512_set1_ps(*k[2]);
  for (int64_t i = 0; i < rows; ++i) {
    float *c = g.c + (row + i) * g.ldc + col;
    if (op.alpha != 0)
      erfGeluSpan<true>(c, c, cols, k1, k2, k3);
    else
      erfGeluSpan<false>(c, c, cols, k1, k2, k3);
  }
}

} // namespace cgc::cpu::tile_detail
