//===- OpKindTest.cpp - cgc/op_kind.h against the registered ops ---------===//
//
// cgc/op_kind.h is generated from the ODS definitions by reading the .td
// file (cmake/GenerateOpKinds.cmake): every cgc_op op the dialect registers
// must have its enumerator and round-trip through its name, and every
// enumerator must be a registered op or one of the kernel library's own.
//
//===----------------------------------------------------------------------===//

#include "cgc/op_kind.h"
#include "compiler/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

#include <iterator>
#include <set>
#include <string>

namespace {

TEST(OpKind, EveryRegisteredCgcOpOpHasItsEnumerator) {
  mlir::DialectRegistry registry;
  cgc::registerAllDialects(registry);
  mlir::MLIRContext context;
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  std::set<std::string> registered;
  for (mlir::RegisteredOperationName op : context.getRegisteredOperations()) {
    llvm::StringRef name = op.getStringRef();
    if (!name.starts_with("cgc_op."))
      continue;
    registered.insert(name.str());
    cgc::OpKind kind = cgc::opKindOf(std::string_view(name.data(), name.size()));
    EXPECT_NE(kind, cgc::OpKind::Unknown) << name.str() << " has no OpKind";
    EXPECT_EQ(cgc::opName(kind), std::string_view(name.data(), name.size()));
  }
  EXPECT_GT(registered.size(), 100u);
  // The kernel library's own ops (fused forms no ODS definition declares).
  const std::set<std::string> kernelLibrary = {"cgc_op.erf_gelu", "cgc_op.swish"};
  size_t enumerators = 0;
  for (const auto &entry : cgc::detail::kOpKindNames) {
    ++enumerators;
    std::string name(entry.name);
    EXPECT_TRUE(registered.count(name) || kernelLibrary.count(name))
        << name << " is an OpKind but no registered op";
  }
  EXPECT_EQ(enumerators, registered.size() + kernelLibrary.size());
  EXPECT_EQ(cgc::opKindOf("cgc_op.no_such_op"), cgc::OpKind::Unknown);
  EXPECT_EQ(cgc::opKindOf("relu"), cgc::OpKind::Unknown);
  EXPECT_TRUE(cgc::opName(cgc::OpKind::Unknown).empty());
}

} // namespace
