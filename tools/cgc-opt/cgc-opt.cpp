//===- cgc-opt.cpp - The cgc optimizer driver -----------------------------===//
//
// mlir-opt for the CGC dialects: parses, verifies, runs passes and pipelines,
// and prints text or bytecode. CGC IR files hold a `cgc.module` at the top, so
// no implicit builtin.module is wrapped around it.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <vector>

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  cgc::registerAllDialects(registry);
  cgc::registerAllPasses();

  // CGC IR has its own top-level op; parse it as written.
  std::vector<char *> args(argv, argv + argc);
  static char noImplicitModule[] = "--no-implicit-module";
  args.insert(args.begin() + 1, noImplicitModule);
  int newArgc = static_cast<int>(args.size());
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      newArgc, args.data(), "CGC optimizer driver\n", registry));
}
