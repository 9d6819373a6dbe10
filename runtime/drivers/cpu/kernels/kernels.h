//===- kernels.h - The CPU driver's kernel library ----*- C++ -*-===//
//
// Executes cgc_op layers described by KernelDesc (cgc/kernel_program.h) on the
// CPU. A kernel is created once, when a state object or pipeline is created
// and all shapes are known (oneDNN primitives are built and weights may be
// prepared then), and run many times with the addresses of its operands.
// No MLIR: the library runs from kernel programs alone.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_H
#define CGC_CPU_KERNELS_H

#include "cgc/kernel_program.h"
#include "thread_pool.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace cgc::cpu {

/// Addresses of a kernel's operands, in KernelDesc order: `inputs[i]` is the
/// first byte of input i (nullptr for an absent optional input), `outputs[i]`
/// likewise. Strides and shapes come from the KernelDesc.
struct KernelArgs {
  const void *const *inputs = nullptr;
  void *const *outputs = nullptr;
};

/// What Kernel::run throws when its operands' values are invalid: an index
/// operand outside its dimension (gather, gather_elements, scatter_elements,
/// scatter_nd). The message names the op, the index, where it is in the
/// indices and the dimension. The run stops; the driver reports the command
/// list's execution as failed with this message (docs/runtime.md).
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws RunError for `index` read at flat position `position` of an index
/// operand of shape `indicesShape`, outside dimension `axis` of size `size`.
[[noreturn]] void throwIndexOutOfRange(std::string_view op, int64_t index,
                                       int64_t position,
                                       const std::vector<int64_t> &indicesShape,
                                       int64_t axis, int64_t size);

class Kernel {
public:
  virtual ~Kernel() = default;
  /// Runs the kernel; work may be split across `pool`. Must be safe to call
  /// concurrently on different operands.
  virtual void run(const KernelArgs &args, ThreadPool &pool) const = 0;
  /// A short description for profiles ("convolution 3x3 s1 +relu (oneDNN)").
  virtual std::string describe() const = 0;
  /// An input (KernelArgs order) that may be the same bytes as output 0
  /// (same shape, dtype and strides) and is cheaper so: a convolution
  /// accumulating its residual in place reads and writes it once instead of
  /// copying it into the result first. The executor may then place the two
  /// in one temporary (program.cpp). -1: none.
  virtual int inPlaceInput() const { return -1; }
  /// The implementations the selection preferred to this one and why each
  /// did not take the op ("Winograd: not a 3x3 ...; ..."), for profiles;
  /// empty when it was the first choice or the op has one kernel.
  std::string passedOver;
};

/// Facts about a kernel's operands that the KernelDesc does not carry.
struct KernelOptions {
  /// constantInputs[i] (inputs in KernelArgs order, extra epilogue operands
  /// of a fused kernel included): input i is a constant, i.e. its bytes never
  /// change while it is bound at a given address (the contract of constant
  /// memrefs). Kernels may then prepare it (oneDNN's blocked weight layout
  /// for a convolution, packed B for gemm/matmul) on the first run at an
  /// address and reuse the result at that address. Inputs not marked are
  /// read afresh on every run. Missing entries mean false.
  std::vector<bool> constantInputs;

  bool isConstant(size_t input) const {
    return input < constantInputs.size() && constantInputs[input];
  }
};

/// Creates the kernel of one op. Fails with a message naming the op and what
/// is unsupported (op, dtype, strides, attribute value).
std::unique_ptr<Kernel> createKernel(const KernelDesc &desc, std::string &error);
std::unique_ptr<Kernel> createKernel(const KernelDesc &desc,
                                     const KernelOptions &options,
                                     std::string &error);

/// Whether `desc` is an elementwise op: it may head a chain of the
/// elementwise ops after it, fused into one kernel by createFusedKernel
/// (elementwise fusion with no anchor; setting elementwise-chains).
bool isElementwiseChainHead(const KernelDesc &desc);

/// Creates one kernel computing `anchor` followed by the elementwise
/// `epilogue` ops: epilogue[i] takes the previous result as inputs[0]; its
/// other inputs (a residual, a per-channel scale) are extra operands, passed
/// after the anchor's inputs in KernelArgs::inputs, in order. Only the last
/// op's outputs are written. Returns nullptr with a reason if this anchor and
/// chain cannot be fused (the caller then runs the ops one by one).
std::unique_ptr<Kernel> createFusedKernel(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          std::string &reason);
std::unique_ptr<Kernel> createFusedKernel(const KernelDesc &anchor,
                                          const std::vector<KernelDesc> &epilogue,
                                          const KernelOptions &options,
                                          std::string &reason);

/// Creates one kernel computing `expand` (a 1x1 convolution) followed by
/// the elementwise `expandChain`, whose result only `depthwise` (a
/// depthwise convolution) reads, then `depthwise` followed by
/// `depthwiseChain`: the expanded value is never stored
/// (expand_depthwise.h). KernelArgs::inputs: `expand`'s inputs, the extra
/// operands of `expandChain`, `depthwise`'s inputs after the first, the
/// extra operands of `depthwiseChain`. Only the last op's output is
/// written. With `pool` (a global_avg_pool of that output), the kernel
/// writes the pool's result too, as output 1 (see createDepthwisePool).
/// Returns nullptr with a reason if the ops do not fuse (the caller then
/// runs them as separate kernels).
std::unique_ptr<Kernel> createExpandDepthwise(const KernelDesc &expand,
                                              const std::vector<KernelDesc> &expandChain,
                                              const KernelDesc &depthwise,
                                              const std::vector<KernelDesc> &depthwiseChain,
                                              const KernelOptions &options, std::string &reason,
                                              const KernelDesc *pool = nullptr);

/// The convolutions of an inverted residual block (MobileNetV2's) that one
/// kernel may compute: a depthwise convolution with its elementwise chain,
/// after an optional expansion (a 1x1 convolution and its chain, whose
/// result only the depthwise convolution reads) and before an optional
/// projection (a 1x1 convolution, and its chain, that alone reads the
/// depthwise chain's result).
struct DepthwiseBlock {
  const KernelDesc *expand = nullptr;
  std::vector<KernelDesc> expandChain;
  const KernelDesc *depthwise = nullptr;
  std::vector<KernelDesc> depthwiseChain;
  const KernelDesc *project = nullptr;
  std::vector<KernelDesc> projectChain;
};

/// Creates one kernel computing `block`, which has an expansion, a
/// projection or both: neither the expanded value nor the depthwise result
/// is stored (expand_depthwise.h). KernelArgs::inputs: [the expansion's
/// inputs, its chain's extra operands,] the depthwise convolution's inputs
/// (after the first with an expansion), its chain's extra operands[, the
/// projection's inputs after the first, its chain's extra operands]. Only
/// the last op's output is written. Returns nullptr with a reason if the
/// ops do not fuse (the caller then runs them as separate kernels).
std::unique_ptr<Kernel> createDepthwiseBlock(const DepthwiseBlock &block,
                                             const KernelOptions &options, std::string &reason);

/// Creates one kernel computing the depthwise convolution `anchor` followed
/// by the elementwise `chain` and `pool`, a global average pool of the
/// chain's result (which others read too): outputs the chain's result, then
/// the pool's (the channel sums come from each band of rows while it is in
/// cache). Inputs as createFusedKernel's. Returns nullptr with a reason if
/// they do not fuse (the caller then runs the pool as its own kernel).
std::unique_ptr<Kernel> createDepthwisePool(const KernelDesc &anchor,
                                            const std::vector<KernelDesc> &chain,
                                            const KernelDesc &pool, const KernelOptions &options,
                                            std::string &reason);

/// True if createKernel knows the op name (dtype/attribute support may still
/// fail).
bool hasKernel(std::string_view op);
/// Every op name the library implements, sorted.
std::vector<std::string> supportedOps();

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_H
