//===- FallbackTarget.cpp - The target of last resort ---------------------===//

#include "compiler/Targets/Fallback/FallbackTarget.h"

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Common/KernelLowering.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/MLIRContext.h"

#include <limits>
#include <memory>
#include <mutex>

using namespace mlir;

namespace cgc {

namespace {

/// The declaration: any cgc_op layer, below every other pattern. Subgraphs
/// are named after the layer they hold.
constexpr const char *kDeclaration = R"mlir(
cgc.module @fallback {
  cgc_pattern.pattern @layer attributes {priority = -9223372036854775808 : i64, naming = "ops"} {
    %layer = cgc_pattern.op ["any"] {open}
    cgc_pattern.yield %layer
  }
}
)mlir";

struct FallbackState {
  MLIRContext context;
  std::vector<uint8_t> declaration;
  std::mutex mutex;
  std::vector<uint8_t> lastRequest, lastAnswer;

  FallbackState() {
    context.loadDialect<CGCDialect, op::CGCOpDialect,
                        pattern::CGCPatternDialect>();
    std::string error;
    OwningOpRef<ModuleOp> module = parseCGCModule(&context, kDeclaration, error);
    if (module)
      declaration = writeMLIRContainer(*module, interfaces::kSubgraphDeclaration);
  }

  static SpecializationVerdict decide(SubgraphOp subgraph) {
    bool lowered = false;
    std::string error = captureFirstError(subgraph.getContext(), [&] {
      lowered = succeeded(lowerSubgraphToKernelProgram(subgraph));
    });
    if (lowered)
      return {true, ""};
    return {false, error.empty() ? "kernel lowering failed" : error};
  }

  int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                   void *out, size_t *outSize) {
    if (interface == interfaces::kSubgraphDeclarationRequest)
      return declaration.empty() ? kE_FAIL
                                 : answerExchange(declaration, out, outSize);
    if (interface != interfaces::kSubgraphSpecializationRequest)
      return kDXGI_ERROR_UNSUPPORTED;
    std::lock_guard<std::mutex> lock(mutex);
    auto bytes = static_cast<const uint8_t *>(in);
    std::vector<uint8_t> request(bytes, bytes + (in ? inSize : 0));
    if (request != lastRequest || lastAnswer.empty()) {
      std::string error;
      std::vector<uint8_t> answer =
          answerSpecialization(&context, in, inSize, decide, error);
      if (answer.empty())
        return kE_INVALIDARG;
      lastRequest = std::move(request);
      lastAnswer = std::move(answer);
    }
    return answerExchange(lastAnswer, out, outSize);
  }
};

} // namespace

TargetHandle createFallbackTarget() {
  static std::shared_ptr<FallbackState> state =
      std::make_shared<FallbackState>();
  TargetHandle handle;
  handle.name = kFallbackTargetName.str();
  handle.exchange = [](const Guid &interface, const void *in, size_t inSize,
                       void *out, size_t *outSize) {
    return state->exchange(interface, in, inSize, out, outSize);
  };
  return handle;
}

} // namespace cgc
