//===- ExchangeTest.cpp - Target exchanges through bytes ------------------===//

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Fallback/FallbackTarget.h"
#include "compiler/Targets/File/FileTarget.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>

using namespace mlir;

namespace {

class ExchangeTest : public ::testing::Test {
protected:
  ExchangeTest() {
    DialectRegistry registry;
    cgc::registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

constexpr const char *kSubgraphs = R"mlir(
cgc.module {
  cgc.subgraph @small attributes {origin = "t", pattern = "reluPattern"} {
    cgc.functional_definition private @smallFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
  cgc.subgraph @large attributes {origin = "t", pattern = "reluPattern"} {
    cgc.functional_definition private @largeFunctional(%x: !cgc.tensor<64x!cgc.float32>) -> !cgc.tensor<64x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<64x!cgc.float32>) -> !cgc.tensor<64x!cgc.float32>
      cgc.return %0 : !cgc.tensor<64x!cgc.float32>
    }
  }
  cgc.subgraph @undeclared attributes {origin = "t", pattern = "nothing"} {
    cgc.functional_definition private @undeclaredFunctional(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
}
)mlir";

// The size-query protocol of D3D12_FEATURE_DATA_MLIR_EXCHANGE.
TEST_F(ExchangeTest, SizeQueryProtocol) {
  cgc::TargetHandle fallback = cgc::createFallbackTarget();
  size_t size = 0;
  ASSERT_EQ(fallback.exchange(cgc::interfaces::kSubgraphDeclarationRequest,
                              nullptr, 0, nullptr, &size),
            cgc::kS_OK);
  ASSERT_GT(size, cgc::kContainerHeaderSize);
  // Too small: the size again, E_NOT_SUFFICIENT_BUFFER, nothing written.
  std::vector<uint8_t> small(size - 1, 0xAB);
  size_t smallSize = small.size();
  ASSERT_EQ(fallback.exchange(cgc::interfaces::kSubgraphDeclarationRequest,
                              nullptr, 0, small.data(), &smallSize),
            cgc::kE_NOT_SUFFICIENT_BUFFER);
  EXPECT_EQ(smallSize, size);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(),
                          [](uint8_t b) { return b == 0xAB; }));
  // Large enough: the answer, a container tagged CGC_SUBGRAPH_DECLARATION.
  std::vector<uint8_t> out(size);
  size_t outSize = out.size();
  ASSERT_EQ(fallback.exchange(cgc::interfaces::kSubgraphDeclarationRequest,
                              nullptr, 0, out.data(), &outSize),
            cgc::kS_OK);
  std::string error;
  OwningOpRef<cgc::ModuleOp> patterns = cgc::readMLIRContainer(
      &context, out.data(), outSize, cgc::interfaces::kSubgraphDeclaration,
      error);
  ASSERT_TRUE(patterns) << error;
  EXPECT_EQ(llvm::range_size(
                patterns->getBody()->getOps<cgc::pattern::PatternOp>()),
            1u);
  // An interface the target does not answer.
  EXPECT_EQ(fallback.exchange(cgc::interfaces::kInput, nullptr, 0, nullptr,
                              &size),
            cgc::kDXGI_ERROR_UNSUPPORTED);
}

// Containers that must be rejected, each with its own message.
TEST_F(ExchangeTest, BadContainersAreRejected) {
  std::string error;
  OwningOpRef<cgc::ModuleOp> module =
      cgc::parseCGCModule(&context, kSubgraphs, error);
  ASSERT_TRUE(module) << error;
  std::vector<uint8_t> good = cgc::writeMLIRContainer(
      *module, cgc::interfaces::kSubgraphSpecializationRequest);
  EXPECT_TRUE(cgc::readMLIRContainer(
      &context, good.data(), good.size(),
      cgc::interfaces::kSubgraphSpecializationRequest, error))
      << error;

  // Tagged with another known interface.
  EXPECT_FALSE(cgc::readMLIRContainer(&context, good.data(), good.size(),
                                      cgc::interfaces::kSubgraphDeclaration,
                                      error));
  EXPECT_NE(error.find("expected an 'MLIR' part tagged "
                       "CGC_SUBGRAPH_DECLARATION, got "
                       "CGC_SUBGRAPH_SPECIALIZATION_REQUEST"),
            std::string::npos)
      << error;

  // Tagged with a GUID nobody knows.
  cgc::Guid unknown = *cgc::Guid::parse("{01234567-89AB-CDEF-0123-456789ABCDEF}");
  cgc::ContainerWriter writer;
  writer.addMLIRPart(unknown, "bytes");
  std::vector<uint8_t> strange = writer.finish();
  EXPECT_FALSE(cgc::readMLIRContainer(&context, strange.data(), strange.size(),
                                      cgc::interfaces::kSubgraphDeclaration,
                                      error));
  EXPECT_NE(error.find("unknown MLIR interface GUID "
                       "{01234567-89AB-CDEF-0123-456789ABCDEF}"),
            std::string::npos)
      << error;

  // An extra part of an unknown kind.
  cgc::ContainerWriter extra;
  extra.addMLIRPart(cgc::interfaces::kSubgraphDeclaration, "x");
  extra.addPart(cgc::makeFourCC('X', 'Y', 'Z', 'W'), "?");
  std::vector<uint8_t> withExtra = extra.finish();
  EXPECT_FALSE(cgc::readMLIRContainer(&context, withExtra.data(),
                                      withExtra.size(),
                                      cgc::interfaces::kSubgraphDeclaration,
                                      error));
  EXPECT_NE(error.find("XYZW"), std::string::npos) << error;

  // Truncated, and tampered with (the digest no longer matches).
  EXPECT_FALSE(cgc::readMLIRContainer(
      &context, good.data(), good.size() - 7,
      cgc::interfaces::kSubgraphSpecializationRequest, error));
  EXPECT_FALSE(error.empty());
  std::vector<uint8_t> tampered = good;
  tampered.back() ^= 0x5A;
  error.clear();
  EXPECT_FALSE(cgc::readMLIRContainer(
      &context, tampered.data(), tampered.size(),
      cgc::interfaces::kSubgraphSpecializationRequest, error));
  EXPECT_NE(error.find("digest"), std::string::npos) << error;

  // Valid container, bytes that are not MLIR.
  cgc::ContainerWriter junk;
  junk.addMLIRPart(cgc::interfaces::kSubgraphDeclaration, "not mlir at all");
  std::vector<uint8_t> junkBytes = junk.finish();
  EXPECT_FALSE(cgc::readMLIRContainer(&context, junkBytes.data(),
                                      junkBytes.size(),
                                      cgc::interfaces::kSubgraphDeclaration,
                                      error));
  EXPECT_NE(error.find("cannot parse the MLIR"), std::string::npos) << error;
}

// The file target's specialization answers, through the exchange.
TEST_F(ExchangeTest, FileTargetSpecialization) {
  std::string path = ::testing::TempDir() + "/cgc-exchange-test-patterns.mlir";
  {
    std::ofstream file(path);
    file << R"mlir(
cgc.module @t {
  cgc_pattern.pattern @reluPattern {
    %x = cgc_pattern.input
    %r = cgc_pattern.op ["cgc_op.relu"](%x)
    cgc_pattern.yield %r
  }
  cgc_pattern.reject_when @reluPattern "more than 16 elements" {input = 0 : i64, min_elements = 17 : i64}
}
)mlir";
  }
  std::string error;
  std::optional<cgc::TargetHandle> target = cgc::createFileTarget(path, error);
  ASSERT_TRUE(target) << error;
  EXPECT_EQ(target->name, "t");

  OwningOpRef<cgc::ModuleOp> request =
      cgc::parseCGCModule(&context, kSubgraphs, error);
  ASSERT_TRUE(request) << error;
  llvm::StringMap<cgc::SpecializationVerdict> verdicts;
  ASSERT_TRUE(cgc::requestSpecialization(*target, *request, verdicts, error))
      << error;
  EXPECT_TRUE(verdicts["small"].accepted);
  EXPECT_FALSE(verdicts["large"].accepted);
  EXPECT_EQ(verdicts["large"].reason, "more than 16 elements");
  EXPECT_FALSE(verdicts["undeclared"].accepted);
  EXPECT_NE(verdicts["undeclared"].reason.find("not declared by target 't'"),
            std::string::npos);

  // The declaration holds the patterns only, not the rejection rules.
  OwningOpRef<cgc::ModuleOp> declaration =
      cgc::requestDeclaration(&context, *target, error);
  ASSERT_TRUE(declaration) << error;
  EXPECT_TRUE(declaration->getBody()
                  ->getOps<cgc::pattern::RejectWhenOp>()
                  .empty());
  std::remove(path.c_str());
}

// The fallback accepts what the kernel lowering can lower.
TEST_F(ExchangeTest, FallbackAcceptsLowerableSubgraphs) {
  std::string error;
  OwningOpRef<cgc::ModuleOp> request =
      cgc::parseCGCModule(&context, kSubgraphs, error);
  ASSERT_TRUE(request) << error;
  llvm::StringMap<cgc::SpecializationVerdict> verdicts;
  ASSERT_TRUE(cgc::requestSpecialization(cgc::createFallbackTarget(), *request,
                                         verdicts, error))
      << error;
  EXPECT_EQ(verdicts.size(), 3u);
  for (auto &entry : verdicts)
    EXPECT_TRUE(entry.second.accepted) << entry.first().str() << ": "
                                       << entry.second.reason;
}

// Declarations carry the CGC IR version in bytecode: a reader refuses a
// newer major version of the pattern dialect, naming both versions.
TEST_F(ExchangeTest, PatternBytecodeCarriesTheIRVersion) {
  std::string error;
  OwningOpRef<cgc::ModuleOp> patterns = cgc::readMLIRContainer(
      &context, nullptr, 0, cgc::interfaces::kSubgraphDeclaration, error);
  EXPECT_FALSE(patterns);
  cgc::TargetHandle fallback = cgc::createFallbackTarget();
  patterns = cgc::requestDeclaration(&context, fallback, error);
  ASSERT_TRUE(patterns) << error;

  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  BytecodeWriterConfig config;
  config.setDialectVersion("cgc_pattern",
                           std::make_unique<cgc::IRVersion>(
                               cgc::IRVersion::current().major + 1, 0, 0));
  ASSERT_TRUE(succeeded(writeBytecodeToFile(*patterns, os, config)));
  OwningOpRef<cgc::ModuleOp> newer =
      cgc::parseCGCModule(&context, bytes, error);
  EXPECT_FALSE(newer);
  EXPECT_NE(error.find("'cgc_pattern' dialect bytecode has IR version 2.0.0, "
                       "newer than the 1.1.0 this build supports"),
            std::string::npos)
      << error;
}

} // namespace
