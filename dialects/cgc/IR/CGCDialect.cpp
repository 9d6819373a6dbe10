//===- CGCDialect.cpp - The cgc dialect -----------------------------------===//

#include "cgc/IR/CGCDialect.h"
#include "cgc/IR/CGCOps.h"
#include "cgc/IR/CGCTypes.h"
#include "cgc/version.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

#include "cgc/IR/CGCDialect.cpp.inc"

namespace cgc {

//===----------------------------------------------------------------------===//
// Versioning
//===----------------------------------------------------------------------===//

IRVersion IRVersion::current() {
  return IRVersion(CGC_IR_VERSION_MAJOR, CGC_IR_VERSION_MINOR,
                   CGC_IR_VERSION_PATCH);
}

std::string IRVersion::str() const {
  return llvm::formatv("{0}.{1}.{2}", major, minor, patch).str();
}

void cgc::writeIRVersion(DialectBytecodeWriter &writer, StringRef dialectName) {
  IRVersion version = IRVersion::current();
  if (FailureOr<const DialectVersion *> configured =
          writer.getDialectVersion(dialectName);
      succeeded(configured))
    version = *static_cast<const IRVersion *>(*configured);
  writer.writeVarInt(version.major);
  writer.writeVarInt(version.minor);
  writer.writeVarInt(version.patch);
}

std::unique_ptr<DialectVersion>
cgc::readIRVersion(DialectBytecodeReader &reader, StringRef dialectName) {
  uint64_t major, minor, patch;
  if (failed(reader.readVarInt(major)) || failed(reader.readVarInt(minor)) ||
      failed(reader.readVarInt(patch))) {
    reader.emitError() << "malformed '" << dialectName
                       << "' dialect version in bytecode";
    return nullptr;
  }
  auto version = std::make_unique<IRVersion>(major, minor, patch);
  IRVersion current = IRVersion::current();
  if (major > current.major) {
    reader.emitError() << "'" << dialectName << "' dialect bytecode has IR version "
                       << version->str() << ", newer than the "
                       << current.str()
                       << " this build supports; rebuild with a newer cgc";
    return nullptr;
  }
  return version;
}

namespace {
struct CGCBytecodeInterface : public BytecodeDialectInterface {
  CGCBytecodeInterface(Dialect *dialect) : BytecodeDialectInterface(dialect) {}

  void writeVersion(DialectBytecodeWriter &writer) const override {
    writeIRVersion(writer, getDialect()->getNamespace());
  }
  std::unique_ptr<DialectVersion>
  readVersion(DialectBytecodeReader &reader) const override {
    return readIRVersion(reader, getDialect()->getNamespace());
  }
};
} // namespace

} // namespace cgc

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

void cgc::CGCDialect::initialize() {
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "cgc/IR/CGCOps.cpp.inc"
      >();
  addInterfaces<CGCBytecodeInterface>();
}
