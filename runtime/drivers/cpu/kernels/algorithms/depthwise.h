//===- depthwise.h - Direct depthwise convolution, channels-last -*- C++ -*-===//
//
// The direct kernel for 2-D float32 depthwise convolutions (channel
// multiplier 1) whose activations are channels-last, the layout the JIT gives
// a CNN's intermediates. conv.cpp decides when it runs (makeConv,
// createFusedConvolution); this file has the AVX-512 kernel. Private to
// cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_DEPTHWISE_H
#define CGC_CPU_KERNELS_DEPTHWISE_H

#include "elementwise.h"
#include "thread_pool.h"

namespace cgc::cpu {

/// A 2-D depthwise convolution: groups == input channels == output
/// channels. The output size implies the end padding.
struct DepthwiseGeometry {
  int64_t batch = 0, channels = 0;
  int64_t inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kernelH = 0, kernelW = 0;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padTop = 0, padLeft = 0;
  bool hasBias = false;
};

/// Empty if the channels-last depthwise kernel can run `anchor` (a
/// convolution with `g`'s geometry) writing a result laid out as `out`,
/// else why not: the CPU lacks AVX-512, an operand is not float32, the
/// input or the result does not have its channels innermost (stride 1) and
/// positive strides elsewhere.
std::string channelsLastDepthwiseMismatch(const DepthwiseGeometry &g, const KernelDesc &anchor,
                                          const KernelOperand &out);

/// True for the shapes the kernel has compile-time unrolled segments for
/// (kernels 3 or 5 wide, stride 1 or 2 and no dilation along W; any height,
/// vertical stride and dilation). Others run generic segments (runtime
/// loops over the taps), measured slower than oneDNN's nhwc kernel.
bool channelsLastDepthwiseUnrolled(const DepthwiseGeometry &g);

/// The kernel for `anchor` followed by `chain` (elementwise ops that keep
/// the shape and dtype; may be empty), applied to each output row while it
/// is in cache; the chain's extra operands are the inputs after the
/// anchor's. Weights and bias are prepared once per address when
/// `constantParams`. The description is `what` + " (direct depthwise,
/// channels-last AVX-512...)". Throws DescError (naming the op) when an op
/// of the chain cannot be an epilogue.
std::unique_ptr<Kernel> makeChannelsLastDepthwise(const DepthwiseGeometry &g,
                                                  const KernelDesc &anchor,
                                                  const std::vector<KernelDesc> &chain,
                                                  bool constantParams, const std::string &what);

/// Where a depthwise convolution reads its input: row ih of image n starts
/// at row(n, ih) (column 0, channel 0), its columns `pixel` floats apart,
/// channels innermost.
struct DepthwiseInput {
  FunctionRef<const float *(int64_t, int64_t)> row;
  int64_t pixel;
};

/// The channels-last depthwise kernel's work on output rows, for a kernel
/// that makes the input rows itself (expand_depthwise.h). Output rows are
/// numbered over all images: n * outH + oh.
class DepthwiseRows {
public:
  virtual ~DepthwiseRows() = default;
  virtual const DepthwiseGeometry &geometry() const = 0;
  /// "what+chain (direct depthwise, ..." without the closing parenthesis.
  virtual std::string describe() const = 0;
  /// The weights `w` and bias `b` (may be null) as the rows read them:
  /// prepared once per address when the parameters are constant, else into
  /// `scratch` on every call.
  virtual const float *prepare(const float *w, const float *b, Scratch &scratch) const = 0;
  /// Called with each band of output rows [b0, b1) once it is complete,
  /// chain included, while it is in cache.
  using BandDone = FunctionRef<void(int64_t, int64_t)>;
  /// Where a global average pool of the result fused into the kernel goes:
  /// the mean of channel c of image n to means[n * pN + c * pC].
  struct PoolOutput {
    float *means;
    int64_t pN, pC;
  };
  /// Runs `rows(begin, end, dst, done)` over every output row, in one
  /// contiguous piece per thread of `threads` (one piece below a minimum of
  /// `macs` multiply-adds). `dst` is `y`, or a staging copy laid out like it
  /// when an extra operand shares bytes with `y`: copied into `y`
  /// afterwards. With `pool`, `done` (for computeRows) adds each band's
  /// channels to the piece's own sums, and the means are written once
  /// every piece is done; without, `done` is null.
  virtual void forEachPiece(ThreadPool &threads, float *y, const void *const *extra,
                            int64_t macs, const PoolOutput *pool,
                            FunctionRef<void(int64_t, int64_t, float *, const BandDone *)> rows)
      const = 0;
  /// Output rows [begin, end) into `y`, the chain applied to each band of
  /// rows while it is in cache (`extra`: its operands, in order); `done`
  /// (may be null) sees each band after that. `y` holds the result from
  /// output row `firstRow` on, laid out as the result's strides say (a
  /// buffer for a few rows of it: 0 is the whole result); a `firstRow`
  /// other than 0 needs chainInRegisters().
  virtual void computeRows(const DepthwiseInput &in, const float *params, float *y,
                           const void *const *extra, int64_t begin, int64_t end,
                           const BandDone *done, int64_t firstRow = 0) const = 0;
  /// True if the whole chain (none, or a leading clip or relu) is applied
  /// to the accumulators before the store: no pass over `y` after it, and
  /// no extra operands.
  virtual bool chainInRegisters() const = 0;
};

/// Empty if `pool` is a float32 global_avg_pool of the whole `result` (N x
/// C x H x W) into [N, C, 1, 1], else why not.
std::string wholePoolMismatch(const KernelDesc &pool, const KernelOperand &result);

/// The rows of `anchor` followed by `chain`, as makeChannelsLastDepthwise
/// computes them; the anchor's input 0 only gives the geometry.
std::unique_ptr<DepthwiseRows> makeChannelsLastDepthwiseRows(const DepthwiseGeometry &g,
                                                             const KernelDesc &anchor,
                                                             const std::vector<KernelDesc> &chain,
                                                             bool constantParams,
                                                             const std::string &what);

/// The depthwise convolution `anchor` with its `chain`, whose result `pool`
/// (a global_avg_pool) also reads: one kernel writing both, the channel
/// sums taken from each band of rows while it is in cache (EfficientNet's
/// squeeze-excitation reads every depthwise result twice: the pool, then
/// the scaling). Outputs: the chain's result, then the pool's. Null with
/// `reason` if `pool` is not a float32 global_avg_pool of the whole result.
std::unique_ptr<Kernel> makeChannelsLastDepthwisePool(const DepthwiseGeometry &g,
                                                      const KernelDesc &anchor,
                                                      const std::vector<KernelDesc> &chain,
                                                      const KernelDesc &pool, bool constantParams,
                                                      const std::string &what,
                                                      std::string &reason);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_DEPTHWISE_H
