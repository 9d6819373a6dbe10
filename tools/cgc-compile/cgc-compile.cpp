//===- cgc-compile.cpp - Compile an ONNX model with cgc -------------------===//
//
// A thin main: each group of stages registers its --emit values and flags.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

int main(int argc, char **argv) {
  cgc::tool::Driver driver;
  cgc::tool::registerImportStages(driver);
  cgc::tool::registerLowerStages(driver);
  return driver.run(argc, argv);
}
