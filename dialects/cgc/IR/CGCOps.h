//===- CGCOps.h - Structural ops of the cgc dialect -------------*- C++ -*-===//

#ifndef CGC_IR_CGCOPS_H
#define CGC_IR_CGCOPS_H

#include "cgc/IR/CGCDialect.h"
#include "cgc/IR/CGCTypes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace cgc {
class EntryPointOp;
class ProgramOp;
class SubgraphOp;
class FunctionalDefinitionOp;
} // namespace cgc

#define GET_OP_CLASSES
#include "cgc/IR/CGCOps.h.inc"

#endif // CGC_IR_CGCOPS_H
