//===- CGCPatternOps.h - Ops of the cgc_pattern dialect ---------*- C++ -*-===//

#ifndef CGC_PATTERN_IR_CGCPATTERNOPS_H
#define CGC_PATTERN_IR_CGCPATTERNOPS_H

#include "cgc/IR/CGCOps.h"
#include "cgc/IR/CGCTypes.h"
#include "cgc_pattern/IR/CGCPatternDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"

#include <string>

#define GET_TYPEDEF_CLASSES
#include "cgc_pattern/IR/CGCPatternTypes.h.inc"

namespace cgc::pattern {
class YieldOp;
class ChainOp;
class MatchOp;
} // namespace cgc::pattern

#define GET_OP_CLASSES
#include "cgc_pattern/IR/CGCPatternOps.h.inc"

namespace cgc::pattern {

/// The op classes a `names` entry may hold instead of an op name.
constexpr llvm::StringLiteral kClassElementwise = "elementwise";
constexpr llvm::StringLiteral kClassAny = "any";

/// True if the cgc_op layer `op` is selected by the `names` list of a
/// cgc_pattern.op or cgc_pattern.chain.
bool matchesNames(mlir::ArrayAttr names, mlir::Operation *op);

/// Verifies the value-constraint attributes (element_types, ranks, shape,
/// dim_multiple, min/max_elements, contiguous, alignment) of a pattern op.
mlir::LogicalResult verifyValueConstraints(mlir::Operation *op);

/// Checks the shape and element constraints of `op` against a concrete
/// tensor or memref type. Layout constraints (contiguous, alignment) are
/// checked too when `type` is a memref: contiguity from its strides and
/// alignment against `byteOffset` (pass -1 when the offset is unknown).
/// On failure returns false and sets `why` to a sentence naming the
/// violated constraint.
bool satisfiesValueConstraints(mlir::Operation *op, cgc::TensorLikeType type,
                               int64_t byteOffset, std::string &why);

/// The byte alignment `op` requires of the memory of its value (1 if none).
int64_t getRequiredAlignment(mlir::Operation *op);

/// The attributes of `op` with every default-valued attribute it omits filled
/// in, as a sorted list (what an `attrs` constraint compares against).
mlir::DictionaryAttr getEffectiveAttributes(mlir::Operation *op);

} // namespace cgc::pattern

#endif // CGC_PATTERN_IR_CGCPATTERNOPS_H
