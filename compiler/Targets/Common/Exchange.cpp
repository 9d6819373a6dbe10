//===- Exchange.cpp - MLIR_EXCHANGE bytes on both sides -------------------===//

#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Common/UntrustedBytecode.h"

#include "cgc_pattern/IR/CGCPatternOps.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

namespace cgc {

std::string describeHResult(int32_t hr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("0x%08X", static_cast<uint32_t>(hr));
  switch (hr) {
  case kS_OK: os << " (S_OK)"; break;
  case kE_INVALIDARG: os << " (E_INVALIDARG)"; break;
  case kE_OUTOFMEMORY: os << " (E_OUTOFMEMORY)"; break;
  case kE_FAIL: os << " (E_FAIL)"; break;
  case kDXGI_ERROR_UNSUPPORTED: os << " (DXGI_ERROR_UNSUPPORTED)"; break;
  case kE_NOT_SUFFICIENT_BUFFER: os << " (E_NOT_SUFFICIENT_BUFFER)"; break;
  default: break;
  }
  return text;
}

static std::string interfaceName(const Guid &guid) {
  if (const char *name = interfaces::name(guid))
    return name;
  return guid.str();
}

std::vector<uint8_t> writeMLIRContainer(Operation *op, const Guid &interface) {
  std::string bytecode;
  llvm::raw_string_ostream os(bytecode);
  BytecodeWriterConfig config;
  (void)writeBytecodeToFile(op, os, config);
  ContainerWriter writer;
  writer.addMLIRPart(interface, bytecode);
  return writer.finish();
}

std::string captureFirstError(MLIRContext *context,
                              llvm::function_ref<void()> fn) {
  std::string firstError;
  ScopedDiagnosticHandler handler(context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      if (!isa<UnknownLoc>(diag.getLocation()))
        os << diag.getLocation() << ": ";
      os << diag;
    }
    return success();
  });
  fn();
  return firstError;
}

OwningOpRef<ModuleOp> parseCGCModule(MLIRContext *context, StringRef bytes,
                                     std::string &error) {
  OwningOpRef<ModuleOp> owned;
  bool parsed = false, single = false, verified = false;
  std::string firstError = captureFirstError(context, [&] {
    Block block;
    // Bytecode comes from another process or a file: read it as untrusted.
    llvm::MemoryBufferRef buffer(bytes, "bytecode");
    if (isBytecode(buffer)) {
      if (failed(readUntrustedBytecode(buffer, &block, context)))
        return;
    } else if (failed(parseSourceString(bytes, &block,
                                        ParserConfig(context)))) {
      return;
    }
    parsed = true;
    if (block.getOperations().size() != 1 || !isa<ModuleOp>(block.front()))
      return;
    single = true;
    auto module = cast<ModuleOp>(block.front());
    module->remove();
    owned = OwningOpRef<ModuleOp>(module);
    verified = succeeded(verify(module));
  });
  if (!parsed)
    error = "cannot parse the MLIR: " + firstError;
  else if (!single)
    error = "the MLIR must hold exactly one cgc.module at the top level";
  else if (!verified)
    error = "the MLIR does not verify: " + firstError;
  else
    return owned;
  return nullptr;
}

OwningOpRef<ModuleOp> readMLIRContainer(MLIRContext *context, const void *data,
                                        size_t size, const Guid &expected,
                                        std::string &error) {
  ContainerReader reader;
  if (!reader.open(data, size, error))
    return nullptr;
  if (!reader.checkKnownParts({parts::kMLIR}, error))
    return nullptr;
  std::vector<const ContainerReader::Part *> mlirParts =
      reader.find(parts::kMLIR);
  if (mlirParts.size() != 1) {
    error = "expected exactly one 'MLIR' part, found " +
            std::to_string(mlirParts.size());
    return nullptr;
  }
  Guid interface;
  ByteView bytecode;
  if (!ContainerReader::splitMLIRPart(*mlirParts.front(), interface, bytecode,
                                      error))
    return nullptr;
  if (!interfaces::isKnown(interface)) {
    error = "unknown MLIR interface GUID " + interface.str();
    return nullptr;
  }
  if (interface != expected) {
    error = "expected an 'MLIR' part tagged " + interfaceName(expected) +
            ", got " + interfaceName(interface);
    return nullptr;
  }
  // Copy: the bytecode reader wants its buffer to itself.
  std::string bytes(bytecode.str());
  return parseCGCModule(context, bytes, error);
}

int32_t answerExchange(const std::vector<uint8_t> &answer, void *out,
                       size_t *outSize) {
  if (!outSize)
    return kE_INVALIDARG;
  if (!out || *outSize < answer.size()) {
    bool query = !out;
    *outSize = answer.size();
    return query ? kS_OK : kE_NOT_SUFFICIENT_BUFFER;
  }
  std::memcpy(out, answer.data(), answer.size());
  *outSize = answer.size();
  return kS_OK;
}

int32_t DeclaredPatternsExchange::exchange(
    const Guid &interface, const void *in, size_t inSize, void *out,
    size_t *outSize, MLIRContext *context,
    llvm::function_ref<SpecializationVerdict(SubgraphOp)> decide) {
  if (!outSize)
    return kE_INVALIDARG;
  if (interface == interfaces::kSubgraphDeclarationRequest)
    return answerExchange(declaration, out, outSize);
  if (interface != interfaces::kSubgraphSpecializationRequest)
    return kDXGI_ERROR_UNSUPPORTED;
  std::lock_guard<std::mutex> lock(mutex_);
  auto bytes = static_cast<const uint8_t *>(in);
  std::vector<uint8_t> request(bytes, bytes + (in ? inSize : 0));
  if (request != lastRequest_ || lastAnswer_.empty()) {
    std::string error;
    std::vector<uint8_t> answer =
        answerSpecialization(context, in, inSize, decide, error);
    if (answer.empty())
      return kE_INVALIDARG;
    lastRequest_ = std::move(request);
    lastAnswer_ = std::move(answer);
  }
  return answerExchange(lastAnswer_, out, outSize);
}

std::vector<uint8_t> answerSpecialization(
    MLIRContext *context, const void *in, size_t inSize,
    llvm::function_ref<SpecializationVerdict(SubgraphOp)> decide,
    std::string &error) {
  OwningOpRef<ModuleOp> request = readMLIRContainer(
      context, in, inSize, interfaces::kSubgraphSpecializationRequest, error);
  if (!request)
    return {};
  OpBuilder builder(context);
  OwningOpRef<ModuleOp> answer = ModuleOp::create(builder, request->getLoc());
  builder.setInsertionPointToEnd(answer->getBody());
  for (SubgraphOp subgraph : request->getBody()->getOps<SubgraphOp>()) {
    SpecializationVerdict verdict = decide(subgraph);
    auto name = FlatSymbolRefAttr::get(subgraph.getSymNameAttr());
    if (verdict.accepted)
      pattern::AcceptOp::create(builder, subgraph.getLoc(), name);
    else
      pattern::RejectOp::create(builder, subgraph.getLoc(), name,
                                        builder.getStringAttr(verdict.reason));
  }
  return writeMLIRContainer(*answer, interfaces::kSubgraphSpecialization);
}

int32_t callExchange(const TargetHandle &target, const Guid &interface,
                     const std::vector<uint8_t> &input,
                     std::vector<uint8_t> &output, std::string &error) {
  auto fail = [&](int32_t hr, StringRef what) {
    error = "target '" + target.name + "' " + what.str() + " " +
            interfaceName(interface) + ": " + describeHResult(hr);
    return hr;
  };
  if (!target.exchange)
    return fail(kE_INVALIDARG, "has no exchange function for");
  const void *in = input.empty() ? nullptr : input.data();
  size_t size = 0;
  int32_t hr = target.exchange(interface, in, input.size(), nullptr, &size);
  if (hr != kS_OK)
    return fail(hr, "failed the size query of");
  output.assign(size, 0);
  size_t written = size;
  hr = target.exchange(interface, in, input.size(), output.data(), &written);
  if (hr != kS_OK)
    return fail(hr, "failed");
  if (written > size)
    return fail(kE_FAIL, "wrote more bytes than its size query announced in");
  output.resize(written);
  return kS_OK;
}

OwningOpRef<ModuleOp> requestDeclaration(MLIRContext *context,
                                         const TargetHandle &target,
                                         std::string &error) {
  std::vector<uint8_t> answer;
  if (callExchange(target, interfaces::kSubgraphDeclarationRequest, {}, answer,
                   error) != kS_OK)
    return nullptr;
  std::string why;
  OwningOpRef<ModuleOp> module =
      readMLIRContainer(context, answer.data(), answer.size(),
                        interfaces::kSubgraphDeclaration, why);
  if (!module) {
    error = "target '" + target.name + "' answered CGC_SUBGRAPH_DECLARATION_"
            "REQUEST with a bad container: " + why;
    return nullptr;
  }
  for (Operation &op : *module->getBody())
    if (!isa<pattern::PatternOp>(op)) {
      error = "target '" + target.name + "' declared a '" +
              op.getName().getStringRef().str() +
              "'; a declaration holds cgc_pattern.pattern only";
      return nullptr;
    }
  return module;
}

bool requestSpecialization(const TargetHandle &target, ModuleOp request,
                           llvm::StringMap<SpecializationVerdict> &verdicts,
                           std::string &error) {
  std::vector<uint8_t> input =
      writeMLIRContainer(request, interfaces::kSubgraphSpecializationRequest);
  std::vector<uint8_t> answer;
  if (callExchange(target, interfaces::kSubgraphSpecializationRequest, input,
                   answer, error) != kS_OK)
    return false;
  std::string why;
  OwningOpRef<ModuleOp> module =
      readMLIRContainer(request.getContext(), answer.data(), answer.size(),
                        interfaces::kSubgraphSpecialization, why);
  if (!module) {
    error = "target '" + target.name + "' answered CGC_SUBGRAPH_SPECIALIZATION_"
            "REQUEST with a bad container: " + why;
    return false;
  }
  for (Operation &op : *module->getBody()) {
    if (auto accept = dyn_cast<pattern::AcceptOp>(op)) {
      verdicts[accept.getSubgraph()] = {true, ""};
    } else if (auto reject = dyn_cast<pattern::RejectOp>(op)) {
      verdicts[reject.getSubgraph()] = {false, reject.getReason().str()};
    } else {
      error = "target '" + target.name + "' answered a specialization with a '" +
              op.getName().getStringRef().str() +
              "'; an answer holds cgc_pattern.accept and reject only";
      return false;
    }
  }
  for (SubgraphOp subgraph : request.getBody()->getOps<SubgraphOp>())
    if (!verdicts.count(subgraph.getSymName())) {
      error = "target '" + target.name + "' gave no verdict for subgraph '" +
              subgraph.getSymName().str() + "'";
      return false;
    }
  return true;
}

} // namespace cgc
