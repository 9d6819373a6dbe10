//===- bytecode_fuzzer.cpp - The untrusted MLIR bytecode reader -----------===//
//
// readUntrustedBytecode (what drivers, targets and the runtime's exchanges
// read from other processes and files) on any bytes.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/UntrustedBytecode.h"

#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    cgc::registerAllDialects(*r);
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  Block block;
  (void)cgc::readUntrustedBytecode(
      llvm::MemoryBufferRef(StringRef(reinterpret_cast<const char *>(data), size), "fuzz"),
      &block, &context);
  return 0;
}
