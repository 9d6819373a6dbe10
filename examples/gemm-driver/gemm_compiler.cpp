//===- gemm_compiler.cpp - The gemm driver's compiler ---------------------===//

#include "gemm_compiler.h"
#include "gemm_kernels.h"

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Common/KernelLowering.h"
#include "cgc/IR/CGCDialect.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "cgc_pattern/IR/CGCPatternDialect.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <mutex>

using namespace mlir;

namespace gemm {
namespace {

/// What the driver declares: a matrix product, then at most two epilogue
/// layers (a bias or residual add, an activation) of the same shape.
constexpr const char kDeclaration[] = R"mlir(
cgc.module @gemm {
  cgc_pattern.pattern @matmulEpilogue attributes {priority = 20 : i64, naming = "ops"} {
    %m = cgc_pattern.op ["cgc_op.matmul", "cgc_op.gemm"] {open, element_types = [!cgc.float32]}
    %e = cgc_pattern.chain ["cgc_op.add", "cgc_op.relu", "cgc_op.sigmoid", "cgc_op.tanh"](%m) {keep_shape, max_length = 2 : i64}
    cgc_pattern.yield %e
  }
}
)mlir";

struct Compiler {
  MLIRContext context{MLIRContext::Threading::DISABLED};
  cgc::DeclaredPatternsExchange exchanger;
  std::mutex mutex; // the context is used by one thread at a time
  std::string error;

  Compiler() {
    context.loadDialect<cgc::CGCDialect, cgc::op::CGCOpDialect, cgc::pattern::CGCPatternDialect>();
    OwningOpRef<cgc::ModuleOp> module = cgc::parseCGCModule(&context, kDeclaration, error);
    if (module)
      exchanger.declaration =
          cgc::writeMLIRContainer(*module, cgc::interfaces::kSubgraphDeclaration);
  }

  static Compiler &get() {
    static Compiler compiler;
    return compiler;
  }
};

/// Every layer of `program` must be one the driver runs.
bool checkProgram(const cgc::KernelProgram &program, std::string &why) {
  for (const cgc::KernelDesc &kernel : program.kernels)
    if (!supports(kernel, why))
      return false;
  return true;
}

} // namespace

int32_t exchange(const cgc::Guid &mlirInterface, const void *in, size_t inSize, void *out,
                 size_t *outSize) {
  Compiler &c = Compiler::get();
  if (c.exchanger.declaration.empty())
    return cgc::kE_FAIL; // the built-in declaration does not parse: a build error
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.exchanger.exchange(
      mlirInterface, in, inSize, out, outSize, &c.context,
      [&](cgc::SubgraphOp subgraph) -> cgc::SpecializationVerdict {
        cgc::SpecializationVerdict verdict;
        FailureOr<cgc::KernelProgram> lowered;
        std::string why = cgc::captureFirstError(
            &c.context, [&] { lowered = cgc::lowerSubgraphToKernelProgram(subgraph); });
        if (failed(lowered)) {
          verdict.reason = "the gemm driver cannot lower it: " + why;
          return verdict;
        }
        if (!checkProgram(*lowered, why)) {
          verdict.reason = why;
          return verdict;
        }
        verdict.accepted = true;
        return verdict;
      });
}

bool compilePartition(const void *bytecode, size_t size, cgc::KernelProgram &program,
                      std::string &error) {
  Compiler &c = Compiler::get();
  std::lock_guard<std::mutex> lock(c.mutex);
  OwningOpRef<cgc::ModuleOp> module = cgc::parseCGCModule(
      &c.context, StringRef(static_cast<const char *>(bytecode), size), error);
  if (!module) {
    error = "cannot read the Partition IR: " + error;
    return false;
  }
  std::string why = cgc::captureFirstError(&c.context, [&] { (void)verify(*module); });
  if (!why.empty()) {
    error = "the Partition IR does not verify: " + why;
    return false;
  }
  cgc::KernelProgram lowered;
  if (!cgc::lowerPartitionModuleToKernelProgram(*module, lowered, error))
    return false;
  if (!checkProgram(lowered, error) || !lowered.validate(error))
    return false;
  program = std::move(lowered);
  return true;
}

} // namespace gemm
