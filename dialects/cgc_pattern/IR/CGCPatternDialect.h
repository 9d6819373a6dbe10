//===- CGCPatternDialect.h - The cgc_pattern dialect ------------*- C++ -*-===//

#ifndef CGC_PATTERN_IR_CGCPATTERNDIALECT_H
#define CGC_PATTERN_IR_CGCPATTERNDIALECT_H

#include "cgc/IR/CGCDialect.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "mlir/IR/Dialect.h"

#include "cgc_pattern/IR/CGCPatternDialect.h.inc"

#endif // CGC_PATTERN_IR_CGCPATTERNDIALECT_H
