//===- BytecodeVersionTest.cpp - CGC IR versions in bytecode --------------===//

#include "cgc/IR/CGCDialect.h"
#include "cgc/IR/CGCOps.h"
#include "compiler/InitAll.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

constexpr const char *kModule = R"mlir(
cgc.module {
  cgc.entry_point @main(%in: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
    %w = cgc.constant("w") : !cgc.tensor<constant 4x!cgc.float32>
    %0 = cgc_op.add(%in, %w) : (!cgc.tensor<4x!cgc.float32>, !cgc.tensor<constant 4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
    cgc.return %0 : !cgc.tensor<4x!cgc.float32>
  }
}
)mlir";

class BytecodeVersionTest : public ::testing::Test {
protected:
  BytecodeVersionTest() {
    DialectRegistry registry;
    cgc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    ParserConfig config(&context);
    module = parseSourceString(kModule, config);
  }

  /// Writes `module` as bytecode, claiming `version` for `dialect` (or the
  /// current version when `dialect` is empty).
  std::string write(StringRef dialect = "",
                    cgc::IRVersion version = cgc::IRVersion::current()) {
    std::string bytes;
    llvm::raw_string_ostream os(bytes);
    BytecodeWriterConfig config;
    if (!dialect.empty())
      config.setDialectVersion(
          dialect, std::make_unique<cgc::IRVersion>(version));
    EXPECT_TRUE(succeeded(writeBytecodeToFile(module.get(), os, config)));
    return bytes;
  }

  /// Reads bytecode back; returns the diagnostics emitted.
  std::string read(const std::string &bytes, bool expectSuccess) {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    Block block;
    auto buffer = llvm::MemoryBuffer::getMemBuffer(bytes, "bytecode",
                                                   /*RequiresNullTerminator=*/false);
    ParserConfig config(&context);
    LogicalResult result = readBytecodeFile(*buffer, &block, config);
    EXPECT_EQ(succeeded(result), expectSuccess) << diagnostics;
    return diagnostics;
  }

  MLIRContext context;
  OwningOpRef<Operation *> module;
};

TEST_F(BytecodeVersionTest, CurrentVersionRoundTrips) {
  ASSERT_TRUE(module);
  std::string bytes = write();
  EXPECT_TRUE(isBytecode(*llvm::MemoryBuffer::getMemBuffer(bytes, "", false)));
  read(bytes, /*expectSuccess=*/true);
}

TEST_F(BytecodeVersionTest, NewerMinorVersionIsAccepted) {
  ASSERT_TRUE(module);
  cgc::IRVersion current = cgc::IRVersion::current();
  read(write("cgc", cgc::IRVersion(current.major, current.minor + 1, 0)),
       /*expectSuccess=*/true);
}

TEST_F(BytecodeVersionTest, NewerMajorVersionIsRejected) {
  ASSERT_TRUE(module);
  cgc::IRVersion current = cgc::IRVersion::current();
  for (StringRef dialect : {"cgc", "cgc_op"}) {
    std::string diagnostics =
        read(write(dialect, cgc::IRVersion(current.major + 1, 0, 0)),
             /*expectSuccess=*/false);
    EXPECT_NE(diagnostics.find("'" + dialect.str() +
                               "' dialect bytecode has IR version " +
                               std::to_string(current.major + 1) + ".0.0"),
              std::string::npos)
        << diagnostics;
    EXPECT_NE(diagnostics.find("newer than the " + current.str()),
              std::string::npos)
        << diagnostics;
  }
}

} // namespace
