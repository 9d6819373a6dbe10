//===- CGCOpShapes.h - Shared shape functions of cgc_op ---------*- C++ -*-===//
//
// Shape functions shared by op classes. Each validates its operands and
// attributes, reports problems at `location`, and appends the inferred result
// types (always non-constant tensors).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_OP_IR_CGCOPSHAPES_H
#define CGC_OP_IR_CGCOPSHAPES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace cgc::op {

using Loc = std::optional<mlir::Location>;

/// Numpy-style multidirectional broadcast of two shapes; fails (with a
/// diagnostic) if a pair of dimensions is neither equal nor 1.
llvm::LogicalResult broadcastShapes(Loc location, llvm::ArrayRef<int64_t> a,
                                    llvm::ArrayRef<int64_t> b,
                                    llvm::SmallVectorImpl<int64_t> &result);

/// The integers of an I64ArrayAttr.
llvm::SmallVector<int64_t> getI64Array(mlir::ArrayAttr attr);

llvm::LogicalResult
inferUnaryElementwise(Loc location, mlir::Type input, bool boolResult,
                      llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult
inferBinaryElementwise(Loc location, mlir::Type lhs, mlir::Type rhs,
                       bool boolResult,
                       llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult inferReduction(Loc location, mlir::Type input,
                                   mlir::ArrayAttr axes, bool keepdims,
                                   llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult
inferArgReduction(Loc location, mlir::Type input, int64_t axis, bool keepdims,
                  llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult
inferAxisPreserving(Loc location, mlir::Type input, int64_t axis,
                    llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult inferGlobalPool(Loc location, mlir::Type input,
                                    llvm::SmallVectorImpl<mlir::Type> &inferred);

} // namespace cgc::op

#endif // CGC_OP_IR_CGCOPSHAPES_H
