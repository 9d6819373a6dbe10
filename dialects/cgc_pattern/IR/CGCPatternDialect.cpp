//===- CGCPatternDialect.cpp - The cgc_pattern dialect --------------------===//

#include "cgc_pattern/IR/CGCPatternDialect.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/Bytecode/BytecodeImplementation.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace cgc::pattern;

#include "cgc_pattern/IR/CGCPatternDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "cgc_pattern/IR/CGCPatternTypes.cpp.inc"

namespace {
/// cgc_pattern shares the CGC IR version with the other CGC dialects.
struct CGCPatternBytecodeInterface : public BytecodeDialectInterface {
  CGCPatternBytecodeInterface(Dialect *dialect)
      : BytecodeDialectInterface(dialect) {}

  void writeVersion(DialectBytecodeWriter &writer) const override {
    cgc::writeIRVersion(writer, getDialect()->getNamespace());
  }
  std::unique_ptr<DialectVersion>
  readVersion(DialectBytecodeReader &reader) const override {
    return cgc::readIRVersion(reader, getDialect()->getNamespace());
  }
};
} // namespace

void CGCPatternDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "cgc_pattern/IR/CGCPatternTypes.cpp.inc"
      >();
}

void CGCPatternDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "cgc_pattern/IR/CGCPatternOps.cpp.inc"
      >();
  addInterfaces<CGCPatternBytecodeInterface>();
}
