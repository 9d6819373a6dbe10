//===- KernelPrograms.h - The cpu target's kernel programs -*- C++ -*-===//
//
// What the cpu target does to a kernel program (cgc/kernel_program.h)
// after the generic lowering (compiler/Targets/Common/KernelLowering.h) and
// before the driver fuses and runs it, and the check its specialization
// answers rest on.
//
// No MLIR here: these work on kernel programs only.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_CPU_KERNELPROGRAMS_H
#define CGC_COMPILER_TARGETS_CPU_KERNELPROGRAMS_H

#include "cgc/kernel_program.h"

#include <cstddef>
#include <string>
#include <vector>

namespace cgc::cpu_target {

struct RewriteStats {
  /// bindings marked `internal` whose accesses now go to a temporary.
  unsigned internalTemporaries = 0;
  /// add/mul kernels whose operands were swapped so that the running value
  /// of an epilogue is their input 0.
  unsigned swappedOperands = 0;
  /// transpose kernels folded into the strides of a matmul/gemm operand.
  unsigned foldedTransposes = 0;
  /// sigmoid + mul pairs folded into one cgc_op.swish kernel.
  unsigned foldedSwish = 0;
  /// reshapes between dense tensors turned into views (removed).
  unsigned foldedReshapes = 0;
  /// transposes of a matmul/gemm result folded into the product's output
  /// strides.
  unsigned foldedResultTransposes = 0;
  /// x * (erf(x / k1) + k2) * k3 chains folded into one cgc_op.erf_gelu.
  unsigned foldedErfGelu = 0;
  /// temporaries no kernel uses any more, dropped.
  unsigned droppedTemporaries = 0;
  /// intermediates (temporaries, internal bindings) stored channels-last.
  unsigned channelsLast = 0;
  /// copy layers (transpose, slice, concat) whose readers (slices,
  /// transposes, splits) now copy from its inputs instead.
  unsigned foldedCopyChains = 0;
  /// transposes whose result the chosen layouts put in the same byte
  /// order as their input, removed: their readers read the input.
  unsigned foldedLayoutTransposes = 0;
  /// The rewrites would have swapped the order in which two bind points
  /// are accessed (reversedBindingOrder): the program was kept as it was,
  /// and the counts above are zero.
  bool keptForBindingOrder = false;
};

/// Names the first two bind points x and y, neither constant, that `before`
/// accesses x wholly before y, y's value starting there (its first access
/// writes it), and `after` the other way round; empty if none. The compiler
/// places a partition's values by its order of invocations, so such a y may
/// have x's bytes, and the driver (CompiledProgram::layoutFor) separates
/// accesses that share or interleave steps, not swapped ones.
std::string reversedBindingOrder(const KernelProgram &before, const KernelProgram &after);

/// Rewrites `program` (a valid one) into an equivalent program that the
/// CPU driver runs faster, and in less memory:
///
/// - Every access to a binding marked `internal` (only this program reads or
///   writes its bytes) goes to a new temporary of the same size instead; the
///   binding stays (bind points keep their number) but nothing touches it.
///   The driver keeps temporaries in its own per-run memory, planned by
///   lifetime over the kernels, rather than for the whole dispatch in the
///   caller's scratch, and the rewrites below, and the driver's fusion, that
///   need a program-private intermediate apply to it. First, so they do.
/// - `cgc_op.add` / `cgc_op.mul` whose second operand is the previous
///   kernel's result (a temporary) and whose first is not get their operands
///   swapped: the driver fuses an epilogue op only when the running value is
///   its input 0 (`add(residual, relu(conv(x)))` as written by many
///   exporters). Both ops are commutative, broadcasting included.
/// - A `cgc_op.transpose` whose result (a temporary) is read by nothing but
///   input 0 or 1 of one later `cgc_op.matmul` / `cgc_op.gemm` is removed and
///   that input becomes a strided view of the transpose's input, provided no
///   kernel in between writes bytes of that input.
/// - `s = sigmoid(x)` (a temporary only one later kernel reads) and
///   `mul(s, x)` / `mul(x, s)` of the same shape become one `cgc_op.swish`
///   (x * sigmoid(x), SiLU; a kernel-library op, not an ODS layer) at the
///   sigmoid's place, provided nothing in between writes x or touches the
///   product's bytes: the driver then fuses it into the anchor before it
///   (oneDNN's swish post-op) instead of running two kernels.
/// - A `cgc_op.reshape` between dense tensors is removed: its only reader
///   reads the source seen with the new shape, or the only writer of its
///   source (a temporary) writes the result seen with the old shape.
/// - A `cgc_op.transpose` of a dense temporary that only a matmul/gemm
///   writes is removed: the product writes the transpose's result through
///   permuted strides.
/// - `mul(mul(x, add(erf(div(x, k1)), k2)), k3)` on float32 (PyTorch's
///   GELU; `mul(x, k1)` first, operands of the commutative layers in either
///   order) with one-element k1..k3 and intermediates only the next layer
///   reads becomes one `cgc_op.erf_gelu(x, k1, k2, k3)` (a kernel-library
///   op: the same arithmetic in one pass; the constants' values are not
///   known here, so it is exact for any).
/// - Temporaries left unused are dropped (and the rest renumbered).
/// - Intermediates only this program touches (temporaries, bindings marked
///   `internal`) that a convolution reads as its input or writes, and that
///   only layout-agnostic kernels (convolution activations, pooling,
///   batch norm, elementwise ops) touch, always whole and dense, are stored
///   channels-last (N, spatial..., C): oneDNN's convolutions take that layout
///   as it is, so activations are not reordered around every convolution.
///   Same bytes, same size, only the strides of every access change.
/// - Last (the layouts are chosen by then): foldCopyChains; then a
///   `cgc_op.transpose` whose result (a temporary it alone writes, whole,
///   read only after it) now has its input's bytes in the same order (a
///   convolution's channels-last result permuted to [N, H, W, C], as
///   ConvNeXt's blocks do, or back) is removed and its readers read the
///   input, provided nothing up to the last of them writes the input; then
///   unused temporaries are dropped again.
RewriteStats optimizeKernelProgram(KernelProgram &program);

/// A transpose, slice or concat whose result (a temporary it alone writes,
/// whole and dense) only slices, transposes and splits read, each through
/// views that resolve against it, is removed: each reader becomes one copy
/// (`cgc_op.slice` of all of a view) per input of the removed layer that it
/// reads (per output, for a split), straight from that input, provided
/// nothing in between writes the input. A reader's view resolves if each of its dimensions steps one
/// dimension of the result by a fixed amount, or runs across whole rounds
/// of dimensions the result lays out one after the other (a reshape merged
/// them). Readers go first (the latest copy layer first), so a chain of
/// copies ends as one. Returns the number of layers removed.
unsigned foldCopyChains(KernelProgram &program);

/// One unit of execution in the CPU driver: a kernel, or an anchor
/// (convolution, matmul, gemm) with the elementwise kernels it absorbs.
struct FusionCandidate {
  size_t anchor = 0;
  /// The longest run of kernels after the anchor that the driver would try
  /// to fuse (empty: the anchor runs alone).
  std::vector<size_t> chain;
};

/// The anchors of `program` and the chains the CPU driver tries to
/// fuse with them, under the driver's rules (runtime/drivers/cpu/
/// program.cpp, CompiledProgram::create): the next kernel takes the current
/// result, a temporary nobody else reads, as input 0 and keeps the anchor's
/// shape.
std::vector<FusionCandidate> findFusionCandidates(const KernelProgram &program);

struct KernelCheck {
  bool ok = false;
  /// Why not, naming the kernel and op.
  std::string reason;
  /// Kernels the driver will run inside an anchor's fused kernel.
  size_t fusedKernels = 0;
};

/// Asks the CPU driver's kernel library whether it can run `program`
/// well: every kernel outside a fusion can be created, and every anchor that
/// has an epilogue chain fuses with at least its first op (it then runs the
/// longest prefix that fuses, as the driver does; the rest alone). Kernels
/// are really created (oneDNN primitives included) and discarded.
KernelCheck checkKernelProgram(const KernelProgram &program);

/// False in a build whose kernel library has no kernels yet (every check
/// then fails, saying so).
bool haveKernelLibrary();

} // namespace cgc::cpu_target

#endif // CGC_COMPILER_TARGETS_CPU_KERNELPROGRAMS_H
