//===- Exchange.h - MLIR_EXCHANGE bytes on both sides -----------*- C++ -*-===//
//
// Helpers for the one byte-level exchange function of Target.h: DX
// containers holding one 'MLIR' part tagged with an interface GUID, the
// size-query protocol, and the two subgraph exchanges as the compiler makes
// them (DECLARATION and SPECIALIZATION requests).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_COMMON_EXCHANGE_H
#define CGC_COMPILER_TARGETS_COMMON_EXCHANGE_H

#include "cgc/IR/CGCOps.h"
#include "compiler/Targets/Target.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cgc {

/// "0x887A0004 (DXGI_ERROR_UNSUPPORTED)".
std::string describeHResult(int32_t hr);

//===----------------------------------------------------------------------===//
// Containers of MLIR
//===----------------------------------------------------------------------===//

/// Serializes `op` as MLIR bytecode into a DX container with one 'MLIR' part
/// tagged `interface`.
std::vector<uint8_t> writeMLIRContainer(mlir::Operation *op,
                                        const Guid &interface);

/// Reads a container written by writeMLIRContainer: checks the container
/// (digest, bounds), that it holds exactly one 'MLIR' part and nothing else,
/// that the part's interface is known and is `expected`, and parses the
/// bytecode into a cgc.module in `context`. Null with `error` set otherwise.
mlir::OwningOpRef<ModuleOp> readMLIRContainer(mlir::MLIRContext *context,
                                              const void *data, size_t size,
                                              const Guid &expected,
                                              std::string &error);

/// Parses MLIR bytecode (or text) holding one cgc.module. Bytecode is read as
/// untrusted input (UntrustedBytecode.h).
mlir::OwningOpRef<ModuleOp> parseCGCModule(mlir::MLIRContext *context,
                                           llvm::StringRef bytes,
                                           std::string &error);

//===----------------------------------------------------------------------===//
// The target side
//===----------------------------------------------------------------------===//

/// Completes an exchange with `answer` under the size-query protocol: with
/// `out == nullptr` only the size is stored (kS_OK); with
/// `*outSize < answer.size()` only the size is stored and the result is
/// kE_NOT_SUFFICIENT_BUFFER.
int32_t answerExchange(const std::vector<uint8_t> &answer, void *out,
                       size_t *outSize);

struct SpecializationVerdict {
  bool accepted = false;
  std::string reason;
};

/// Answers a CGC_SUBGRAPH_SPECIALIZATION_REQUEST container: parses it in
/// `context` and asks `decide` about each cgc.subgraph, returning the
/// CGC_SUBGRAPH_SPECIALIZATION container (empty with `error` set if the
/// request is malformed).
std::vector<uint8_t> answerSpecialization(
    mlir::MLIRContext *context, const void *in, size_t inSize,
    llvm::function_ref<SpecializationVerdict(SubgraphOp)> decide,
    std::string &error);

/// The exchange function of a target that declares a fixed set of patterns
/// and decides specialization requests subgraph by subgraph: answers
/// CGC_SUBGRAPH_DECLARATION_REQUEST with `declaration` and
/// CGC_SUBGRAPH_SPECIALIZATION_REQUEST with answerSpecialization over
/// `decide`, keeping the last answer so that the fetch after a size query
/// does not compute it again. Other interfaces are unsupported.
class DeclaredPatternsExchange {
public:
  /// The CGC_SUBGRAPH_DECLARATION container.
  std::vector<uint8_t> declaration;

  /// `decide` runs in `context` under this object's lock.
  int32_t exchange(const Guid &interface, const void *in, size_t inSize,
                   void *out, size_t *outSize, mlir::MLIRContext *context,
                   llvm::function_ref<SpecializationVerdict(SubgraphOp)> decide);

private:
  std::mutex mutex_;
  std::vector<uint8_t> lastRequest_, lastAnswer_;
};

/// Runs `fn` and returns the text of the first error diagnostic it emits on
/// `context` (empty if none).
std::string captureFirstError(mlir::MLIRContext *context,
                              llvm::function_ref<void()> fn);

//===----------------------------------------------------------------------===//
// The compiler side
//===----------------------------------------------------------------------===//

/// Calls `target.exchange` with a size query, then with a buffer of that
/// size. Returns the HRESULT; on failure `error` names the target and the
/// interface.
int32_t callExchange(const TargetHandle &target, const Guid &interface,
                     const std::vector<uint8_t> &input,
                     std::vector<uint8_t> &output, std::string &error);

/// Sends CGC_SUBGRAPH_DECLARATION_REQUEST and returns the patterns module of
/// the CGC_SUBGRAPH_DECLARATION answer, verified.
mlir::OwningOpRef<ModuleOp> requestDeclaration(mlir::MLIRContext *context,
                                               const TargetHandle &target,
                                               std::string &error);

/// Sends CGC_SUBGRAPH_SPECIALIZATION_REQUEST with `request` (a cgc.module of
/// concrete cgc.subgraphs) and reads one verdict per subgraph. Fails if the
/// answer is malformed or misses a subgraph.
bool requestSpecialization(const TargetHandle &target, ModuleOp request,
                           llvm::StringMap<SpecializationVerdict> &verdicts,
                           std::string &error);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_COMMON_EXCHANGE_H
