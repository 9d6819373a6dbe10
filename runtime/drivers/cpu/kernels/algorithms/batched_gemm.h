//===- batched_gemm.h - Per-batch products on the packed GEMM ---*- C++ -*-===//
//
// A batched float32 matrix product whose B differs from batch to batch
// (attention's Q.K^T and P.V) on the packed GEMM of sgemm.h: each batch's B
// is packed into the thread's scratch on every run (K x N floats, in L1/L2;
// Q.K^T's transposed B by 16 x 16 transposes in registers, P.V's by row
// copies), the elementwise chain ops the GEMM's epilogue has (the scale,
// the mask, a bias, relu, clip) are applied to its register tiles, and a
// softmax over the last axis at the end of the chain runs on each block of
// rows right after the GEMM wrote them, while they are in cache. The scores
// of attention are then written once, as probabilities, where oneDNN's
// product, a pass for the chain and a pass for the softmax wrote them three
// times.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_BATCHED_GEMM_H
#define CGC_CPU_KERNELS_BATCHED_GEMM_H

#include "common.h"

namespace cgc::cpu {

/// The product's geometry, in elements: C(batch, i, j) = sum over p of
/// A(batch, i, p) B(batch, p, j). Batch strides are 0 where an operand
/// broadcasts.
struct BatchedGeometry {
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> batch; // the result's batch dimensions
  std::vector<int64_t> aBatchStr, bBatchStr, cBatchStr;
  int64_t am = 0, ak = 0, bk = 0, bn = 0, cm = 0, cn = 0;
};

/// Products with fewer rows stay on oneDNN: packing B (K x N floats) costs
/// about 1/M of the product's multiply-adds, so a decoder's single query
/// row would pay as much for the packing as for the product.
constexpr int64_t kBatchedPackedMinRows = 32;

/// The product `g` followed by `chain` (its ops' extra operands are the
/// kernel's inputs from `firstExtra` on, in order), for a B read afresh on
/// every run. Null with `reason` unless the CPU has AVX-512 (and
/// CGC_CPU_BATCHED_GEMM is not 0), A and C have unit column strides,
/// there are at least kBatchedPackedMinRows rows,
/// and the chain is elementwise ops the GEMM's epilogue applies, optionally
/// ending in a softmax over the last axis. `what` names the op in the
/// kernel's description.
std::unique_ptr<Kernel> makeBatchedPackedProduct(const BatchedGeometry &g,
                                                 const std::vector<KernelDesc> &chain,
                                                 size_t firstExtra, const std::string &what,
                                                 std::string &reason);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_BATCHED_GEMM_H
