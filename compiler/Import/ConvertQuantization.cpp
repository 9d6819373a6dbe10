//===- ConvertQuantization.cpp ------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {

void registerQuantizationConverters(ConverterRegistry &registry) {}

} // namespace cgc::import
