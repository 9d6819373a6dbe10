//===- CGCOpDialect.cpp - The cgc_op dialect ------------------------------===//

#include "cgc_op/IR/CGCOpDialect.h"
#include "cgc/IR/CGCDialect.h"
#include "cgc_op/IR/CGCOpOps.h"

#include "mlir/Bytecode/BytecodeImplementation.h"

using namespace mlir;
using namespace cgc::op;

#include "cgc_op/IR/CGCOpDialect.cpp.inc"

namespace {
/// cgc_op shares the CGC IR version with the other CGC dialects.
struct CGCOpBytecodeInterface : public BytecodeDialectInterface {
  CGCOpBytecodeInterface(Dialect *dialect) : BytecodeDialectInterface(dialect) {}

  void writeVersion(DialectBytecodeWriter &writer) const override {
    cgc::writeIRVersion(writer, getDialect()->getNamespace());
  }
  std::unique_ptr<DialectVersion>
  readVersion(DialectBytecodeReader &reader) const override {
    return cgc::readIRVersion(reader, getDialect()->getNamespace());
  }
};
} // namespace

void CGCOpDialect::initialize() {
  registerOps();
  addInterfaces<CGCOpBytecodeInterface>();
}
