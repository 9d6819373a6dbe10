//===- cgc-opt.cpp - The cgc optimizer driver -----------------------------===//
//
// mlir-opt for the CGC dialects: parses, verifies, runs passes and pipelines,
// and prints text or bytecode. CGC IR files hold a `cgc.module` at the top, so
// no implicit builtin.module is wrapped around it.
//
// Bytecode input is read once through readUntrustedBytecode first: MLIR's
// reader can loop forever or overflow its stack on corrupted bytecode
// (UntrustedBytecode.h), and MlirOptMain has no hook for a reader of our own.
// Input that fails that read is reported and refused; input that passes it
// is handed to MlirOptMain unchanged. Bytecode on stdin is not checked.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/UntrustedBytecode.h"
#include "cgc/version.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

/// False (after reporting why) if `path` holds MLIR bytecode that the
/// bounded reader refuses; true for text and for readable bytecode.
static bool bytecodeIsReadable(llvm::StringRef path,
                               mlir::DialectRegistry &registry) {
  if (path == "-")
    return true; // Reading stdin here would consume it; not checked.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(path, &error);
  if (!file)
    return true; // MlirOptMain reports the missing file.
  if (!mlir::isBytecode(file->getMemBufferRef())) {
    // Parsed as text, random bytes would come back as the parser's echo of
    // the line it choked on.
    if (!path.ends_with(".mlirbc"))
      return true;
    llvm::errs() << path
                 << ": error: not MLIR bytecode (it does not start with the "
                    "bytecode magic 'ML\\xEFR'); text IR goes in a .mlir "
                    "file\n";
    return false;
  }
  mlir::MLIRContext context(registry);
  context.allowUnregisteredDialects();
  mlir::Block block;
  if (mlir::succeeded(cgc::readUntrustedBytecode(file->getMemBufferRef(),
                                                 &block, &context)))
    return true;
  llvm::errs() << path << ": error: cannot read this MLIR bytecode\n";
  return false;
}

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  cgc::registerAllDialects(registry);
  cgc::registerAllPasses();
  // MLIR's generic cleanups over cgc IR: --canonicalize applies the ops'
  // folders (cgc_op.identity, cast, reshape, transpose), --cse merges
  // duplicates.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();

  // CGC IR has its own top-level op; parse it as written.
  std::vector<char *> args(argv, argv + argc);
  static char noImplicitModule[] = "--no-implicit-module";
  args.insert(args.begin() + 1, noImplicitModule);
  int newArgc = static_cast<int>(args.size());
  llvm::cl::AddExtraVersionPrinter([](llvm::raw_ostream &os) {
    os << "cgc-opt " CGC_PROJECT_VERSION_STRING " (CGC IR "
       << CGC_IR_VERSION_MAJOR << "." << CGC_IR_VERSION_MINOR << "."
       << CGC_IR_VERSION_PATCH << ")\n";
  });
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      newArgc, args.data(), "CGC optimizer driver\n", registry);
  if (!bytecodeIsReadable(inputFilename, registry))
    return 1;
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      newArgc, args.data(), inputFilename, outputFilename, registry));
}
