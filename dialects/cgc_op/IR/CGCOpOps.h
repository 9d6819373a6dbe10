//===- CGCOpOps.h - Abstract ML layers --------------------------*- C++ -*-===//

#ifndef CGC_OP_IR_CGCOPOPS_H
#define CGC_OP_IR_CGCOPOPS_H

#include "cgc/IR/CGCTypes.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "cgc_op/IR/CGCOpShapes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace cgc::op::OpTrait {
/// Marks ops that compute each output element from the input elements at the
/// same (broadcast) position. Target patterns use it ("any elementwise op").
template <typename ConcreteType>
class ElementwiseOp
    : public mlir::OpTrait::TraitBase<ConcreteType, ElementwiseOp> {};
} // namespace cgc::op::OpTrait

namespace cgc::op {
/// True if `op` is a cgc_op op marked elementwise.
inline bool isElementwise(mlir::Operation *op) {
  return op->hasTrait<OpTrait::ElementwiseOp>();
}
} // namespace cgc::op

#define GET_OP_CLASSES
#include "cgc_op/IR/CGCOpOps.h.inc"

#endif // CGC_OP_IR_CGCOPOPS_H
