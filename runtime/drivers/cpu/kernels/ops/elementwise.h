//===- elementwise.h - Elementwise ops as row functions ---------*- C++ -*-===//
//
// Every elementwise cgc_op op compiles to a row function (strided.h) over
// (output, inputs...). Kernels for the ops themselves pair one with a
// LoopPlan; fused kernels use them as epilogues applied to blocks of an
// anchor's output while it is in cache.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_ELEMENTWISE_H
#define CGC_CPU_KERNELS_ELEMENTWISE_H

#include "strided.h"

#include <string_view>

namespace cgc::cpu {

struct ElementwiseOp {
  RowFn row = nullptr;
  std::shared_ptr<const void> ctx; // the functor's parameters
  /// Elements per parallel chunk that make a split worth it (lower for
  /// transcendental ops).
  int64_t grain = 32768;
  cgc_dtype_t outDType = CGC_DTYPE_INVALID;
  std::vector<cgc_dtype_t> inDTypes;
  /// Output shape: broadcast of the input shapes (inputs as given).
  std::vector<int64_t> outShape;
};

/// True for ops makeElementwiseOp compiles.
bool isElementwiseOp(OpKind op);

/// Checks `desc` (arity, dtypes, attributes, broadcast shapes, output type)
/// and compiles its row function. Throws DescError.
ElementwiseOp makeElementwiseOp(const KernelDesc &desc);

/// Applies a chain of elementwise ops in place to blocks of a tensor of
/// `shape` (contiguous, `dtype`): op k reads the running value and its extra
/// operands. Used by kernels that produce their output blockwise.
class Epilogue {
public:
  /// `chain[k].inputs[0]` is the running value (shape `shape`, dtype
  /// `dtype`); the others are extra operands, numbered in order across the
  /// chain. Throws DescError if an op changes the shape or dtype.
  Epilogue(const std::vector<int64_t> &shape, cgc_dtype_t dtype,
           const std::vector<KernelDesc> &chain);
  /// The same for a running value stored with element strides
  /// `valueStrides` (any layout, e.g. channels-last), whose positions count
  /// in the order `order` of its dimensions (outermost first): {0, 2, 3, 1}
  /// numbers an N x C x H x W value in channels-last order, so that one
  /// output row of a channels-last kernel is one range of positions. Extra
  /// operands keep their own strides (a per-channel vector, a residual in
  /// any layout).
  Epilogue(const std::vector<int64_t> &shape, cgc_dtype_t dtype,
           const std::vector<KernelDesc> &chain, const std::vector<int64_t> &valueStrides,
           const std::vector<size_t> &order);
  Epilogue() = default;
  bool empty() const { return steps_.empty(); }
  size_t numExtraOperands() const { return numExtra_; }
  /// Applies the chain to elements [begin, end) (row-major positions, or in
  /// the order given to the constructor) of `data`; `extra[i]` is the
  /// address of extra operand i.
  void apply(char *data, const void *const *extra, int64_t begin, int64_t end) const;
  /// The same with the first op reading its input 0 from `source` (laid out
  /// as the running value; may be `data` itself) instead of from `data`:
  /// a chain that starts at an elementwise op rather than after an anchor.
  void apply(char *data, const char *source, const void *const *extra, int64_t begin,
             int64_t end) const;

private:
  struct Step {
    ElementwiseOp op;
    LoopPlan plan;
    std::vector<int> extraIndex; // per input after the first
    /// An erf_gelu (gelu.cpp): its k1, k2, k3 are the extra operands, read
    /// when the step runs; `plan` covers the value alone.
    bool erfGelu = false, multiply = false;
  };
  std::vector<Step> steps_;
  size_t numExtra_ = 0;
};

/// One kernel for elementwise op `head` and the elementwise `chain` after it
/// (each reading the previous result as input 0; elementwise fusion with no
/// anchor): every op runs on a block of the output while it is in cache,
/// one pass over memory instead of one per op. KernelArgs::inputs: the
/// head's inputs, then each chain op's inputs after its first. Throws
/// DescError with the reason when they cannot be one kernel (an op that
/// changes the shape or dtype, a head whose input 0 is not laid out as its
/// output).
std::unique_ptr<Kernel> makeElementwiseChainKernel(const KernelDesc &head,
                                                   const std::vector<KernelDesc> &chain);

/// A clip or relu leading a fused chain, as a clamp a kernel applies to its
/// accumulators before it stores them: x -> min(hi, max(lo, x)) + zero,
/// as the elementwise kernels compute the op (NaN stays NaN: vmaxps and
/// vminps return their second operand when one is NaN; relu(-0) is +0 with
/// zero = +0, while -0 + -0 changes nothing). No clamp: (-inf, inf, -0).
struct LeadingClamp {
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();
  float zero = -0.0f;
  size_t ops = 0;   // chain ops it stands for: 0 or 1
  std::string name; // "relu" or "clip" (empty without one)
};
/// The clamp of chain[0] if it is a unary relu or clip; throws DescError if
/// that op does not keep float32 `shape`.
LeadingClamp leadingClamp(const std::vector<KernelDesc> &chain, const std::vector<int64_t> &shape);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_ELEMENTWISE_H
