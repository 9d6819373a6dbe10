//===- ConvertRNN.cpp ------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {

void registerRNNConverters(ConverterRegistry &registry) {}

} // namespace cgc::import
