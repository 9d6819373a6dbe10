//===- Driver.cpp - The cgc-compile driver --------------------------------===//
//
// Command-line parsing (CLI11, which reports errors with exceptions: this
// file is compiled with -fexceptions) and the session.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include "compiler/Import/Locations.h"
#include "compiler/InitAll.h"
#include "compiler/Targets/Common/UntrustedBytecode.h"
#include "cgc/version.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/Operation.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

using namespace mlir;

namespace cgc::tool {

Session::Session() {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerImportDialects(registry);
  context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
}

bool Session::inputIsCGCIR() const {
  StringRef extension = llvm::sys::path::extension(inputPath);
  return extension == ".mlir" || extension == ".mlirbc";
}

FailureOr<ImportedModel *> Session::getImportedModel() {
  if (imported)
    return &*imported;
  if (importFailed)
    return failure();
  StringRef extension = llvm::sys::path::extension(inputPath);
  if (inputIsCGCIR()) {
    // CGC IR written earlier (text or bytecode): parsed and verified; its
    // constants are named but their bytes are not in the file.
    // Bytecode is read as untrusted input (UntrustedBytecode.h): a corrupted
    // file must not hang or crash the compiler.
    ParserConfig config(context.get());
    Block block;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(inputPath);
    bool bytecode = file && isBytecode((*file)->getMemBufferRef());
    if (file && extension == ".mlirbc" && !bytecode) {
      emitError(UnknownLoc::get(context.get()))
          << inputPath
          << ": not MLIR bytecode (it does not start with the bytecode "
             "magic 'ML\\xEFR'); text IR goes in a .mlir file";
      importFailed = true;
      return failure();
    }
    if (bytecode ? failed(readUntrustedBytecode((*file)->getMemBufferRef(),
                                                &block, context.get()))
                 : failed(parseSourceFile(inputPath, &block, config))) {
      importFailed = true;
      return failure();
    }
    auto module = block.empty() ? cgc::ModuleOp()
                                : dyn_cast<cgc::ModuleOp>(block.front());
    if (!module || block.getOperations().size() != 1) {
      emitError(UnknownLoc::get(context.get()))
          << inputPath << " must hold one cgc.module";
      importFailed = true;
      return failure();
    }
    module->remove();
    imported.emplace();
    imported->module = module;
    return &*imported;
  }
  FailureOr<ImportedModel> model =
      importONNX(inputPath, importOptions, *context);
  if (failed(model)) {
    importFailed = true;
    return failure();
  }
  imported = std::move(*model);
  return &*imported;
}

std::unique_ptr<llvm::raw_ostream> Session::openOutput(bool binary) {
  if (outputPath == "-")
    return std::make_unique<llvm::raw_fd_ostream>(1, /*shouldClose=*/false);
  std::error_code error;
  auto os = std::make_unique<llvm::raw_fd_ostream>(
      outputPath, error,
      binary ? llvm::sys::fs::OF_None : llvm::sys::fs::OF_TextWithCRLF);
  if (error) {
    llvm::errs() << outputPath << ": error: cannot write: " << error.message()
                 << "\n";
    return nullptr;
  }
  return os;
}

LogicalResult Session::writeIR(Operation *op) {
  std::unique_ptr<llvm::raw_ostream> os = openOutput(emitBytecode);
  if (!os)
    return failure();
  if (emitBytecode)
    return writeBytecodeToFile(op, *os);
  OpPrintingFlags flags;
  if (printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  op->print(*os, flags);
  *os << "\n";
  return success();
}

int Driver::run(int argc, char **argv) {
  Session session;
  CLI::App app{"cgc-compile: compile an ONNX model with cgc.\n\n"
               "Reads a model (.onnx; .onnxtxt for ONNX's text syntax; .mlir "
               "or .mlirbc for CGC IR) and writes the stage chosen with "
               "--emit."};
  app.add_option("model", session.inputPath, "The ONNX model to compile")
      ->required();
  app.add_option("-o,--output", session.outputPath,
                 "Where to write the result ('-' for stdout)");
  std::vector<std::string> names;
  std::string stageHelp = "What to produce:";
  for (const EmitStage &stage : stages) {
    names.push_back(stage.name);
    stageHelp += "\n  " + stage.name + (stage.takesValue ? "=N" : "") + ": " +
                 stage.help;
  }
  auto findStage = [this](const std::string &emit) -> const EmitStage * {
    for (const EmitStage &stage : stages) {
      if (!stage.takesValue && emit == stage.name)
        return &stage;
      if (stage.takesValue && emit.rfind(stage.name + "=", 0) == 0 &&
          emit.size() > stage.name.size() + 1)
        return &stage;
    }
    return nullptr;
  };
  app.add_option("--emit", session.emit, stageHelp)
      ->check(CLI::Validator(
          [&](std::string &value) -> std::string {
            return findStage(value) ? "" : "unknown stage '" + value + "'";
          },
          "STAGE"))
      ->default_str(session.emit);
  app.add_flag("--emit-bytecode", session.emitBytecode,
               "Write MLIR bytecode instead of text");
  app.add_flag("--print-locations", session.printLocations,
               "Print each op's location (its ONNX node) with text IR");
  for (const OptionGroup &group : groups)
    group.addOptions(app, session);
  app.set_version_flag("--version",
                       std::string("cgc-compile " CGC_PROJECT_VERSION_STRING
                                   " (CGC IR ") +
                           std::to_string(CGC_IR_VERSION_MAJOR) + "." +
                           std::to_string(CGC_IR_VERSION_MINOR) + "." +
                           std::to_string(CGC_IR_VERSION_PATCH) + ")");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    return app.exit(error);
  }
  for (const OptionGroup &group : groups) {
    std::string message = group.finish(session);
    if (!message.empty()) {
      llvm::errs() << "cgc-compile: error: " << message << "\n";
      return 2;
    }
  }

  // Every diagnostic names the ONNX node (or the file) it is about.
  ONNXDiagnosticHandler handler(&session.getContext());
  const EmitStage *stage = findStage(session.emit);
  if (!stage)
    return 1;
  if (stage->takesValue)
    session.emitValue = session.emit.substr(stage->name.size() + 1);
  return failed(stage->run(session)) ? 1 : 0;
}

} // namespace cgc::tool
