//===- CGCOpDialect.h - The cgc_op dialect ----------------------*- C++ -*-===//

#ifndef CGC_OP_IR_CGCOPDIALECT_H
#define CGC_OP_IR_CGCOPDIALECT_H

#include "cgc/IR/CGCDialect.h"
#include "mlir/IR/Dialect.h"

#include "cgc_op/IR/CGCOpDialect.h.inc"

#endif // CGC_OP_IR_CGCOPDIALECT_H
