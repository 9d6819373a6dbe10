//===- ExchangeTest.cpp - The cpu target's MLIR_EXCHANGE ------------===//
//
// The exchange of the JIT table (what the driver answers to
// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE)) and of the registry's
// `cpu` target: declaration bytes, the size-query protocol,
// specialization verdicts and CGC_CPU_PATTERNS.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "compiler/Targets/Cpu/CpuTarget.h"
#include "compiler/Targets/Registry.h"
#include "jit.h"

#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <unistd.h>

using namespace mlir;

namespace cgc::test {
namespace {

class CpuExchange : public ::testing::Test {
protected:
  CpuExchange() {
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  static int32_t call(const Guid &interface, const std::vector<uint8_t> &in,
                      std::vector<uint8_t> &out) {
    const cpu::JitInterface *jit = cpu::getJitInterface();
    size_t size = 0;
    const void *data = in.empty() ? nullptr : in.data();
    int32_t hr = jit->exchange(interface, data, in.size(), nullptr, &size);
    if (hr != kS_OK)
      return hr;
    out.assign(size, 0);
    hr = jit->exchange(interface, data, in.size(), out.data(), &size);
    out.resize(size);
    return hr;
  }

  OwningOpRef<ModuleOp> declaration() {
    std::vector<uint8_t> bytes;
    EXPECT_EQ(call(interfaces::kSubgraphDeclarationRequest, {}, bytes), kS_OK);
    std::string error;
    OwningOpRef<ModuleOp> module = readMLIRContainer(
        &context, bytes.data(), bytes.size(), interfaces::kSubgraphDeclaration,
        error);
    EXPECT_TRUE(module) << error;
    return module;
  }

  /// Sends the cgc.subgraphs of `text` and returns subgraph -> verdict
  /// ("" for accepted, else the reason).
  std::map<std::string, std::string> specialize(const std::string &text) {
    std::string error;
    OwningOpRef<ModuleOp> request = parseCGCModule(&context, text, error);
    EXPECT_TRUE(request) << error;
    std::map<std::string, std::string> verdicts;
    if (!request)
      return verdicts;
    std::vector<uint8_t> answer;
    EXPECT_EQ(call(interfaces::kSubgraphSpecializationRequest,
                   writeMLIRContainer(*request,
                                      interfaces::kSubgraphSpecializationRequest),
                   answer),
              kS_OK);
    OwningOpRef<ModuleOp> module = readMLIRContainer(
        &context, answer.data(), answer.size(),
        interfaces::kSubgraphSpecialization, error);
    EXPECT_TRUE(module) << error;
    if (!module)
      return verdicts;
    for (Operation &op : *module->getBody()) {
      if (auto accept = dyn_cast<pattern::AcceptOp>(op))
        verdicts[accept.getSubgraph().str()] = "";
      else if (auto reject = dyn_cast<pattern::RejectOp>(op))
        verdicts[reject.getSubgraph().str()] = reject.getReason().str();
      else
        ADD_FAILURE() << "unexpected op in the answer";
    }
    return verdicts;
  }

  static std::string print(Operation *op) {
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    return text;
  }

  MLIRContext context;
};

//===----------------------------------------------------------------------===//
// Declaration
//===----------------------------------------------------------------------===//

TEST_F(CpuExchange, DeclarationRoundTripsTheBuiltInPatterns) {
  ScopedEnv env(kCpuPatternsEnvVar, nullptr);
  OwningOpRef<ModuleOp> declared = declaration();
  ASSERT_TRUE(declared);
  std::string error;
  OwningOpRef<ModuleOp> builtin =
      parseCGCModule(&context, getCpuBuiltinPatterns(), error);
  ASSERT_TRUE(builtin) << error;
  EXPECT_EQ(print(*declared), print(*builtin));
  std::vector<std::string> names;
  for (auto p : declared->getBody()->getOps<pattern::PatternOp>())
    names.push_back(p.getSymName().str());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "anchorEpilogue", "anchorSwish", "convolution", "weightedProduct",
                       "pooling", "resize", "concat", "channelShuffle", "flatten", "slice",
                       "batchNorm", "layoutTranspose", "layerNorm", "activationScale",
                       "elementwiseChain", "transposedMatMulB", "transposedMatMulA",
                       "transposedMatMulAB", "anchorBiasGeluErf", "anchorGeluErf",
                       "attentionScores", "attentionContext"}));
}

TEST_F(CpuExchange, SizeQueryProtocol) {
  ScopedEnv env(kCpuPatternsEnvVar, nullptr);
  const cpu::JitInterface *jit = cpu::getJitInterface();
  const Guid &request = interfaces::kSubgraphDeclarationRequest;
  size_t size = 0;
  ASSERT_EQ(jit->exchange(request, nullptr, 0, nullptr, &size), kS_OK);
  ASSERT_GT(size, kContainerHeaderSize);

  // Too small: only the size is stored, nothing written, and the result is
  // E_NOT_SUFFICIENT_BUFFER (distinguishable from success).
  std::vector<uint8_t> small(size - 1, 0xcd);
  size_t smallSize = small.size();
  EXPECT_EQ(jit->exchange(request, nullptr, 0, small.data(), &smallSize),
            kE_NOT_SUFFICIENT_BUFFER);
  EXPECT_EQ(smallSize, size);
  EXPECT_TRUE(std::all_of(small.begin(), small.end(),
                          [](uint8_t b) { return b == 0xcd; }));

  // Large enough: written, and the size is what was written.
  std::vector<uint8_t> big(size + 16, 0xcd);
  size_t bigSize = big.size();
  EXPECT_EQ(jit->exchange(request, nullptr, 0, big.data(), &bigSize), kS_OK);
  EXPECT_EQ(bigSize, size);
  EXPECT_EQ(big[size], 0xcd);
  std::string error;
  ContainerReader reader;
  EXPECT_TRUE(reader.open(big.data(), bigSize, error)) << error;

  // No place for the size.
  EXPECT_EQ(jit->exchange(request, nullptr, 0, nullptr, nullptr), kE_INVALIDARG);
}

TEST_F(CpuExchange, UnknownInterfacesAreUnsupported) {
  const cpu::JitInterface *jit = cpu::getJitInterface();
  const Guid made = *Guid::parse("{01234567-89AB-CDEF-0123-456789ABCDEF}");
  for (const Guid *g : {&interfaces::kInput, &interfaces::kOutput,
                        &interfaces::kSubgraphPartition,
                        &interfaces::kSubgraphDeclaration,
                        &interfaces::kSubgraphSpecialization, &made}) {
    size_t size = 123;
    EXPECT_EQ(jit->exchange(*g, nullptr, 0, nullptr, &size),
              kDXGI_ERROR_UNSUPPORTED)
        << g->str();
    EXPECT_EQ(size, 123u);
  }
}

//===----------------------------------------------------------------------===//
// Specialization
//===----------------------------------------------------------------------===//

constexpr const char *kRequest = R"mlir(
cgc.module {
  cgc.subgraph @convolutionRelu attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<1x8x6x6x!cgc.float32>, %w: !cgc.tensor<constant 8x8x3x3x!cgc.float32>, %b: !cgc.tensor<constant 8x!cgc.float32>) -> !cgc.tensor<1x8x6x6x!cgc.float32> {
      %0 = cgc_op.convolution(%x, %w, %b) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x8x6x6x!cgc.float32>, !cgc.tensor<constant 8x8x3x3x!cgc.float32>, !cgc.tensor<constant 8x!cgc.float32>) -> !cgc.tensor<1x8x6x6x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x8x6x6x!cgc.float32>) -> !cgc.tensor<1x8x6x6x!cgc.float32>
      cgc.return %1 : !cgc.tensor<1x8x6x6x!cgc.float32>
    }
  }
  cgc.subgraph @vectorMatmulRelu attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @g(%v: !cgc.tensor<4x!cgc.float32>, %m: !cgc.tensor<constant 5x4x!cgc.float32>) -> !cgc.tensor<5x!cgc.float32> {
      %0 = cgc_op.matmul(%m, %v) : (!cgc.tensor<constant 5x4x!cgc.float32>, !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<5x!cgc.float32>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<5x!cgc.float32>) -> !cgc.tensor<5x!cgc.float32>
      cgc.return %1 : !cgc.tensor<5x!cgc.float32>
    }
  }
  cgc.subgraph @transposeMatmul attributes {origin = "cpu", pattern = "transposedMatMulB"} {
    cgc.functional_definition private @h(%a: !cgc.tensor<1x2x8x16x!cgc.float32>, %k: !cgc.tensor<1x2x8x16x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32> {
      %t = cgc_op.transpose(%k) {perm = [0, 1, 3, 2]} : (!cgc.tensor<1x2x8x16x!cgc.float32>) -> !cgc.tensor<1x2x16x8x!cgc.float32>
      %0 = cgc_op.matmul(%a, %t) : (!cgc.tensor<1x2x8x16x!cgc.float32>, !cgc.tensor<1x2x16x8x!cgc.float32>) -> !cgc.tensor<1x2x8x8x!cgc.float32>
      cgc.return %0 : !cgc.tensor<1x2x8x8x!cgc.float32>
    }
  }
  cgc.subgraph @undeclared attributes {origin = "cpu", pattern = "somethingElse"} {
    cgc.functional_definition private @i(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
}
)mlir";

TEST_F(CpuExchange, SpecializationAsksTheKernelLibrary) {
  ScopedEnv env(kCpuPatternsEnvVar, nullptr);
  auto verdicts = specialize(kRequest);
  ASSERT_EQ(verdicts.size(), 4u);
  EXPECT_NE(verdicts["undeclared"].find(
                "pattern 'somethingElse' is not declared by target 'cpu'"),
            std::string::npos)
      << verdicts["undeclared"];
  if (!cpu_target::haveKernelLibrary()) {
    EXPECT_NE(verdicts["convolutionRelu"].find("has no kernels"),
              std::string::npos);
    return;
  }
  EXPECT_EQ(verdicts["convolutionRelu"], "");
  EXPECT_EQ(verdicts["transposeMatmul"], "");
  // The pattern cannot see operand ranks; the kernel library can.
  EXPECT_NE(verdicts["vectorMatmulRelu"].find(
                "kernel 0 (cgc_op.matmul) does not fuse with cgc_op.relu"),
            std::string::npos)
      << verdicts["vectorMatmulRelu"];
  EXPECT_NE(verdicts["vectorMatmulRelu"].find("1-D"), std::string::npos)
      << verdicts["vectorMatmulRelu"];
}

TEST_F(CpuExchange, MalformedSpecializationRequestsFail) {
  const cpu::JitInterface *jit = cpu::getJitInterface();
  const Guid &request = interfaces::kSubgraphSpecializationRequest;
  size_t size = 0;
  EXPECT_EQ(jit->exchange(request, nullptr, 0, nullptr, &size), kE_INVALIDARG);
  std::vector<uint8_t> junk = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(jit->exchange(request, junk.data(), junk.size(), nullptr, &size),
            kE_INVALIDARG);
  // A container tagged with another interface.
  std::string error;
  OwningOpRef<ModuleOp> module = parseCGCModule(&context, kRequest, error);
  ASSERT_TRUE(module) << error;
  std::vector<uint8_t> wrong =
      writeMLIRContainer(*module, interfaces::kSubgraphDeclaration);
  EXPECT_EQ(jit->exchange(request, wrong.data(), wrong.size(), nullptr, &size),
            kE_INVALIDARG);
  // A good container whose every byte after the header is truncated away.
  std::vector<uint8_t> good =
      writeMLIRContainer(*module, interfaces::kSubgraphSpecializationRequest);
  for (size_t cut = 0; cut < good.size(); cut += 7)
    EXPECT_EQ(jit->exchange(request, good.data(), cut, nullptr, &size),
              kE_INVALIDARG)
        << cut;
}

//===----------------------------------------------------------------------===//
// CGC_CPU_PATTERNS
//===----------------------------------------------------------------------===//

constexpr const char *kHalfConvReluAdd = R"mlir(
cgc.module {
  cgc.subgraph @convReluAdd attributes {origin = "cpu", pattern = "convReluAdd"} {
    cgc.functional_definition private @f(%x: !cgc.tensor<1x4x6x6x!cgc.float16>, %w: !cgc.tensor<constant 4x4x3x3x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16> {
      %0 = cgc_op.convolution(%x, %w) {start_padding = [1, 1], end_padding = [1, 1], strides = [1, 1], dilations = [1, 1]} : (!cgc.tensor<1x4x6x6x!cgc.float16>, !cgc.tensor<constant 4x4x3x3x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
      %1 = cgc_op.relu(%0) : (!cgc.tensor<1x4x6x6x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
      %2 = cgc_op.add(%1, %x) : (!cgc.tensor<1x4x6x6x!cgc.float16>, !cgc.tensor<1x4x6x6x!cgc.float16>) -> !cgc.tensor<1x4x6x6x!cgc.float16>
      cgc.return %2 : !cgc.tensor<1x4x6x6x!cgc.float16>
    }
  }
  cgc.subgraph @anchorEpilogue attributes {origin = "cpu", pattern = "anchorEpilogue"} {
    cgc.functional_definition private @g(%x: !cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32> {
      %0 = cgc_op.relu(%x) : (!cgc.tensor<4x!cgc.float32>) -> !cgc.tensor<4x!cgc.float32>
      cgc.return %0 : !cgc.tensor<4x!cgc.float32>
    }
  }
}
)mlir";

TEST_F(CpuExchange, PatternsFileReplacesTheDeclaration) {
  ScopedEnv env(kCpuPatternsEnvVar,
                CGC_SOURCE_DIR "/examples/patterns/conv-relu-add.mlir");
  OwningOpRef<ModuleOp> declared = declaration();
  ASSERT_TRUE(declared);
  std::vector<std::string> names;
  for (auto p : declared->getBody()->getOps<pattern::PatternOp>())
    names.push_back(p.getSymName().str());
  EXPECT_EQ(names, (std::vector<std::string>{"convReluAdd"}));

  auto verdicts = specialize(kHalfConvReluAdd);
  // The built-in patterns are not declared now.
  EXPECT_NE(verdicts["anchorEpilogue"].find("not declared"), std::string::npos)
      << verdicts["anchorEpilogue"];
  if (cpu_target::haveKernelLibrary()) {
    // The file does not constrain the element type; the fused kernel does.
    EXPECT_NE(verdicts["convReluAdd"].find("does not fuse"), std::string::npos)
        << verdicts["convReluAdd"];
    EXPECT_NE(verdicts["convReluAdd"].find("float16"), std::string::npos)
        << verdicts["convReluAdd"];
  }
}

TEST_F(CpuExchange, PatternsFileRulesRejectAndStayPrivate) {
  std::string path = ::testing::TempDir() + "/cpu-rules-" +
                     std::to_string(getpid()) + ".mlir";
  {
    std::FILE *f = std::fopen(path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(R"mlir(
cgc.module @rules {
  cgc_pattern.pattern @convReluAdd {
    %x = cgc_pattern.input
    %w = cgc_pattern.input {constant = true}
    %r = cgc_pattern.input
    %c = cgc_pattern.op ["cgc_op.convolution"](%x, %w)
    %a = cgc_pattern.op ["cgc_op.relu"](%c)
    %s = cgc_pattern.op ["cgc_op.add"](%a, %r) {commutative}
    cgc_pattern.yield %s
  }
  cgc_pattern.reject_when @convReluAdd "no half precision here" {input = 0 : i64, element_types = [!cgc.float16]}
}
)mlir",
               f);
    std::fclose(f);
  }
  ScopedEnv env(kCpuPatternsEnvVar, path.c_str());
  OwningOpRef<ModuleOp> declared = declaration();
  ASSERT_TRUE(declared);
  EXPECT_TRUE(declared->getBody()->getOps<pattern::RejectWhenOp>().empty());
  auto verdicts = specialize(kHalfConvReluAdd);
  EXPECT_EQ(verdicts["convReluAdd"], "no half precision here");
  std::remove(path.c_str());
}

TEST_F(CpuExchange, BadPatternsFileFailsTheExchange) {
  ScopedEnv env(kCpuPatternsEnvVar, "/nonexistent/patterns.mlir");
  size_t size = 0;
  EXPECT_EQ(cpu::getJitInterface()->exchange(
                interfaces::kSubgraphDeclarationRequest, nullptr, 0, nullptr,
                &size),
            kE_FAIL);
  // The registry's target says why.
  std::string error;
  EXPECT_FALSE(createCpuTarget("", error));
  EXPECT_NE(error.find("CGC_CPU_PATTERNS"), std::string::npos) << error;
  EXPECT_NE(error.find("/nonexistent/patterns.mlir"), std::string::npos) << error;
}

//===----------------------------------------------------------------------===//
// The registry's `cpu` target
//===----------------------------------------------------------------------===//

TEST_F(CpuExchange, RegistryTargetAnswersLikeTheDriver) {
  ScopedEnv env(kCpuPatternsEnvVar, nullptr);
  std::string error;
  std::optional<TargetHandle> target = resolveTarget(
      "cpu:" CGC_SOURCE_DIR "/examples/patterns/conv-relu-add.mlir", error);
  ASSERT_TRUE(target) << error;
  EXPECT_EQ(target->name, "cpu");
  OwningOpRef<ModuleOp> fromFile = requestDeclaration(&context, *target, error);
  ASSERT_TRUE(fromFile) << error;
  EXPECT_EQ(llvm::range_size(fromFile->getBody()->getOps<pattern::PatternOp>()), 1u);

  std::optional<TargetHandle> builtin = createCpuTarget("", error);
  ASSERT_TRUE(builtin) << error;
  std::vector<uint8_t> viaRegistry, viaJit;
  ASSERT_EQ(callExchange(*builtin, interfaces::kSubgraphDeclarationRequest, {},
                         viaRegistry, error),
            kS_OK)
      << error;
  ASSERT_EQ(call(interfaces::kSubgraphDeclarationRequest, {}, viaJit), kS_OK);
  EXPECT_EQ(viaRegistry, viaJit);

  EXPECT_FALSE(resolveTarget("cpu:/nonexistent.mlir", error));
  EXPECT_NE(error.find("/nonexistent.mlir"), std::string::npos) << error;
}

} // namespace
} // namespace cgc::test
