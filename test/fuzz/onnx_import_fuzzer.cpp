//===- onnx_import_fuzzer.cpp - The ONNX importer on bytes ----------------===//
//
// importONNXBuffer (the importer the tools, the runtime's compile API and the
// Python package use) on any bytes: parse, checks, shape inference and the
// conversion to Input IR fail with a diagnostic or succeed, never crash.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/Importer.h"
#include "compiler/InitAll.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry();
    cgc::registerAllDialects(*r);
    cgc::registerImportDialects(*r);
    return r;
  }();
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  cgc::ImportOptions options;
  // Outputs with data-dependent rows allowed, as cgc-run and Python allow
  // them: NonMaxSuppression and the ops after it reach the conversion.
  options.dataDependentRows = true;
  auto bytes = llvm::MemoryBuffer::getMemBuffer(
      StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx",
      /*RequiresNullTerminator=*/false);
  (void)cgc::importONNXBuffer(std::move(bytes), "fuzz.onnx", options, context);
  return 0;
}
