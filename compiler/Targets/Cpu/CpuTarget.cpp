//===- CpuTarget.cpp - The CPU driver's target ------------===//

#include "compiler/Targets/Cpu/CpuTarget.h"

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Common/KernelLowering.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

using namespace mlir;

namespace cgc {

llvm::StringRef getCpuBuiltinPatterns() {
  static const char text[] =
#include "compiler/Targets/Cpu/CpuPatterns.inc"
      ;
  return llvm::StringRef(text, sizeof(text) - 1);
}

namespace {

/// Everything the target keeps, in its own MLIR context: the compiler
/// reaches it through bytes only.
struct CpuTargetState {
  MLIRContext context{MLIRContext::Threading::DISABLED};
  /// The patterns and, for a file, its rejection rules.
  OwningOpRef<ModuleOp> patterns;
  /// "the built-in patterns" or "patterns file 'X'".
  std::string source;
  /// The declaration and the (cached) specialization answers.
  DeclaredPatternsExchange exchanger;

  CpuTargetState() {
    context.loadDialect<CGCDialect, op::CGCOpDialect,
                        pattern::CGCPatternDialect>();
  }

  bool load(StringRef text, std::string &error) {
    std::string why;
    patterns = parseCGCModule(&context, text, why);
    if (!patterns) {
      error = source + ": " + why;
      return false;
    }
    for (Operation &op : *patterns->getBody())
      if (!isa<pattern::PatternOp, pattern::RejectWhenOp>(op)) {
        error = source + " holds a '" + op.getName().getStringRef().str() +
                "'; it may hold cgc_pattern.pattern and "
                "cgc_pattern.reject_when only";
        return false;
      }
    if (patterns->getBody()->getOps<pattern::PatternOp>().empty()) {
      error = source + " declares no pattern";
      return false;
    }
    // The declaration holds the patterns only; rejection rules stay here.
    OwningOpRef<ModuleOp> declared = patterns->clone();
    for (Operation &op : llvm::make_early_inc_range(*declared->getBody()))
      if (isa<pattern::RejectWhenOp>(op))
        op.erase();
    exchanger.declaration = writeMLIRContainer(*declared, interfaces::kSubgraphDeclaration);
    return true;
  }

  /// The file's rejection rules for `patternName` (as the file target reads
  /// them): the first rule whose selected tensor satisfies all its
  /// constraints.
  std::optional<std::string> ruleRejection(SubgraphOp subgraph,
                                           StringRef patternName) {
    FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
    ArrayRef<Type> inputs = definition.getArgumentTypes();
    ArrayRef<Type> outputs = definition.getResultTypes();
    for (auto rule : patterns->getBody()->getOps<pattern::RejectWhenOp>()) {
      if (rule.getPattern() != patternName)
        continue;
      SmallVector<Type> selected;
      if (IntegerAttr index = rule.getInputAttr()) {
        if (index.getInt() < static_cast<int64_t>(inputs.size()))
          selected.push_back(inputs[index.getInt()]);
      } else if (IntegerAttr index = rule.getOutputAttr()) {
        if (index.getInt() < static_cast<int64_t>(outputs.size()))
          selected.push_back(outputs[index.getInt()]);
      } else {
        selected.append(inputs.begin(), inputs.end());
        selected.append(outputs.begin(), outputs.end());
      }
      for (Type type : selected) {
        std::string why;
        if (pattern::satisfiesValueConstraints(rule, cast<TensorLikeType>(type),
                                               -1, why))
          return rule.getReason().str();
      }
    }
    return std::nullopt;
  }

  SpecializationVerdict decide(SubgraphOp subgraph) {
    auto patternName = subgraph->getAttrOfType<StringAttr>("pattern");
    if (!patternName)
      return {false, "the subgraph names no pattern"};
    Operation *declared =
        SymbolTable::lookupSymbolIn(*patterns, patternName.getValue());
    if (!declared || !isa<pattern::PatternOp>(declared))
      return {false, "pattern '" + patternName.getValue().str() +
                         "' is not declared by target 'cpu' (" + source +
                         ")"};
    if (std::optional<std::string> reason =
            ruleRejection(subgraph, patternName.getValue()))
      return {false, *reason};

    // What the driver's JIT would build for this subgraph, then what its
    // kernel library makes of it.
    FailureOr<KernelProgram> program = failure();
    std::string error = captureFirstError(subgraph.getContext(), [&] {
      program = lowerSubgraphToKernelProgram(subgraph);
    });
    if (failed(program))
      return {false, error.empty() ? "kernel lowering failed" : error};
    cpu_target::optimizeKernelProgram(*program);
    cpu_target::KernelCheck check = cpu_target::checkKernelProgram(*program);
    if (!check.ok)
      return {false, check.reason};
    return {true, ""};
  }

  int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                   void *out, size_t *outSize) {
    return exchanger.exchange(
        interface, in, inSize, out, outSize, &context,
        [&](SubgraphOp subgraph) { return decide(subgraph); });
  }
};

std::shared_ptr<CpuTargetState> createState(StringRef patternsPath,
                                                  std::string &error) {
  auto state = std::make_shared<CpuTargetState>();
  if (patternsPath.empty()) {
    state->source = "the built-in patterns";
    if (!state->load(getCpuBuiltinPatterns(), error))
      return nullptr;
    return state;
  }
  state->source = "patterns file '" + patternsPath.str() + "'";
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(patternsPath);
  if (!file) {
    error = "cannot read patterns file '" + patternsPath.str() +
            "': " + file.getError().message();
    return nullptr;
  }
  if (!state->load((*file)->getBuffer(), error))
    return nullptr;
  return state;
}

TargetHandle makeHandle(std::shared_ptr<CpuTargetState> state) {
  TargetHandle handle;
  handle.name = kCpuTargetName.str();
  handle.exchange = [state](const Guid &interface, const void *in,
                            size_t inSize, void *out, size_t *outSize) {
    return state->exchange(interface, in, inSize, out, outSize);
  };
  return handle;
}

std::string patternsFromEnvironment() {
  const char *value = std::getenv(kCpuPatternsEnvVar);
  return value ? value : "";
}

} // namespace

std::optional<TargetHandle> createCpuTarget(StringRef patternsPath,
                                                  std::string &error) {
  std::string path =
      patternsPath.empty() ? patternsFromEnvironment() : patternsPath.str();
  std::shared_ptr<CpuTargetState> state = createState(path, error);
  if (!state) {
    if (patternsPath.empty() && !path.empty())
      error = std::string("target 'cpu' (") + kCpuPatternsEnvVar +
              "): " + error;
    return std::nullopt;
  }
  return makeHandle(std::move(state));
}

int32_t cpuDriverExchange(const Guid &interface, const void *in,
                                size_t inSize, void *out, size_t *outSize) {
  if (interface != interfaces::kSubgraphDeclarationRequest &&
      interface != interfaces::kSubgraphSpecializationRequest)
    return kDXGI_ERROR_UNSUPPORTED;
  // One state per declaration source, created on first use and kept for the
  // process (a driver answers many exchanges).
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<CpuTargetState>> states;
  std::string path = patternsFromEnvironment();
  std::shared_ptr<CpuTargetState> state;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = states.find(path);
    if (it != states.end()) {
      state = it->second;
    } else {
      std::string error;
      state = createState(path, error);
      if (!state) {
        llvm::errs() << "CPU driver: " << kCpuPatternsEnvVar
                     << ": " << error << "\n";
        return kE_FAIL;
      }
      states[path] = state;
    }
  }
  return state->exchange(interface, in, inSize, out, outSize);
}

} // namespace cgc
