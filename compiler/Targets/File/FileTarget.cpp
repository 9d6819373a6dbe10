//===- FileTarget.cpp - A target whose patterns come from a file ----------===//

#include "compiler/Targets/File/FileTarget.h"

#include "compiler/Targets/Common/Exchange.h"
#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <memory>

using namespace mlir;

namespace cgc {

namespace {

/// Everything the target keeps: it lives in its own MLIR context, so the
/// compiler reaches it through bytes only.
struct FileTargetState {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::string name;
  /// The declaration and the (cached) specialization answers.
  DeclaredPatternsExchange exchanger;

  FileTargetState() {
    context.loadDialect<CGCDialect, op::CGCOpDialect,
                        pattern::CGCPatternDialect>();
  }

  SpecializationVerdict decide(SubgraphOp subgraph) {
    auto patternName = subgraph->getAttrOfType<StringAttr>("pattern");
    if (!patternName)
      return {false, "the subgraph names no pattern"};
    auto pattern = SymbolTable::lookupSymbolIn(*module, patternName);
    if (!pattern || !isa<pattern::PatternOp>(pattern))
      return {false, "pattern '" + patternName.getValue().str() +
                         "' is not declared by target '" + name + "'"};
    FunctionalDefinitionOp definition = subgraph.getFunctionalDefinition();
    ArrayRef<Type> inputs = definition.getArgumentTypes();
    ArrayRef<Type> outputs = definition.getResultTypes();
    for (auto rule : module->getBody()->getOps<pattern::RejectWhenOp>()) {
      if (rule.getPattern() != patternName.getValue())
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
          return {false, rule.getReason().str()};
      }
    }
    return {true, ""};
  }

  int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                   void *out, size_t *outSize) {
    return exchanger.exchange(
        interface, in, inSize, out, outSize, &context,
        [&](SubgraphOp subgraph) { return decide(subgraph); });
  }
};

} // namespace

std::optional<TargetHandle> createFileTarget(StringRef path,
                                             std::string &error) {
  auto state = std::make_shared<FileTargetState>();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file) {
    error = "cannot read patterns file '" + path.str() +
            "': " + file.getError().message();
    return std::nullopt;
  }
  std::string why;
  state->module = parseCGCModule(&state->context, (*file)->getBuffer(), why);
  if (!state->module) {
    error = "patterns file '" + path.str() + "': " + why;
    return std::nullopt;
  }
  for (Operation &op : *state->module->getBody())
    if (!isa<pattern::PatternOp, pattern::RejectWhenOp>(op)) {
      error = "patterns file '" + path.str() + "' holds a '" +
              op.getName().getStringRef().str() +
              "'; it may hold cgc_pattern.pattern and cgc_pattern.reject_when "
              "only";
      return std::nullopt;
    }
  if (state->module->getBody()->getOps<pattern::PatternOp>().empty()) {
    error = "patterns file '" + path.str() + "' declares no pattern";
    return std::nullopt;
  }
  if (std::optional<StringRef> name = state->module->getSymName())
    state->name = name->str();
  else
    state->name = llvm::sys::path::stem(path).str();

  // The declaration holds the patterns only; rejection rules stay with the
  // target.
  OwningOpRef<ModuleOp> declaration = state->module->clone();
  for (Operation &op :
       llvm::make_early_inc_range(*declaration->getBody()))
    if (isa<pattern::RejectWhenOp>(op))
      op.erase();
  state->exchanger.declaration =
      writeMLIRContainer(*declaration, interfaces::kSubgraphDeclaration);

  TargetHandle handle;
  handle.name = state->name;
  handle.exchange = [state](const Guid &interface, const void *in,
                            size_t inSize, void *out, size_t *outSize) {
    return state->exchange(interface, in, inSize, out, outSize);
  };
  return handle;
}

} // namespace cgc
