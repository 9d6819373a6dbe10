//===- KernelLowering.h - Partition IR to kernel programs -------*- C++ -*-===//
//
// The generic lowering of CGC Partition IR to the portable kernel program
// format (cgc/kernel_program.h): every cgc_op layer of the functional
// definitions a partition invokes becomes one KernelDesc, in execution order,
// over byte ranges of the partition's bind points and of temporaries.
//
// - Bindings are the partition's bind points, in order (name: the argument's
//   `cgc.name` attribute, else "bp<i>"; bytes: the memref's byte span).
// - Attributes are converted generically (integer -> Int, float -> Float,
//   bool -> Bool, string -> String, integer array -> Ints, float array ->
//   Floats, element TypeAttr -> DType), with every default-valued attribute
//   the op omits written explicitly, so kernels need not know ODS defaults.
// - Operands follow ODS operand order: a null entry for an absent optional
//   operand, variadic operands flattened. Results are flattened likewise.
// - Memref strides and byte offsets (cgc.view_memref inside a partition) are
//   carried into the operands.
// - Values produced and consumed inside a multi-layer subgraph live in
//   temporaries (one per value); a subgraph result that is an input, or a
//   value returned twice, is copied with a `cgc_op.identity` kernel.
//
// Anything that cannot be lowered fails with an error at the op that cannot
// be lowered (whose location is the ONNX node).
//
// This is the fallback target's "shader compiler" and what the CPU
// driver's JIT lowers Partition IR with.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_COMMON_KERNELLOWERING_H
#define CGC_COMPILER_TARGETS_COMMON_KERNELLOWERING_H

#include "cgc/IR/CGCOps.h"
#include "cgc/kernel_program.h"

#include "mlir/IR/Attributes.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace cgc {

/// Lowers a partition: its invokes in order. Errors are emitted as MLIR
/// diagnostics at the op that cannot be lowered.
mlir::FailureOr<KernelProgram> lowerPartitionToKernelProgram(PartitionOp partition);

/// Lowers one subgraph on its own: bindings are its inputs, then its outputs,
/// each a contiguous buffer (names "in<i>", "out<i>").
mlir::FailureOr<KernelProgram> lowerSubgraphToKernelProgram(SubgraphOp subgraph);

/// Lowers the single cgc.partition of a Partition IR module (as a driver
/// receives it), reporting the first error as text instead of a diagnostic.
bool lowerPartitionModuleToKernelProgram(ModuleOp module, KernelProgram &program,
                                         std::string &error);

/// Converts one attribute value; std::nullopt if it has no kernel form.
std::optional<AttrValue> convertKernelAttribute(mlir::Attribute attr);

/// The ODS operand layout of a cgc_op layer: one letter per ODS operand,
/// 'r' required, 'o' optional, 'v' variadic; std::nullopt for unknown ops.
std::optional<llvm::StringRef> getOperandLayout(llvm::StringRef opName);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_COMMON_KERNELLOWERING_H
