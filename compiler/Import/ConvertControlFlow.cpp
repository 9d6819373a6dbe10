//===- ConvertControlFlow.cpp ------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {

void registerControlFlowConverters(ConverterRegistry &registry) {}

} // namespace cgc::import
