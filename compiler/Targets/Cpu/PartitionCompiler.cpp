//===- PartitionCompiler.cpp - The CPU driver's compiler ------------===//
//
// compilePartition reads the bytecode as untrusted input (its structure
// checked first, the reader's work bounded: UntrustedBytecode.h) into an MLIR
// context of its own (calls run concurrently: the runtime compiles
// partitions in parallel), checks its shape (one cgc.module holding one
// cgc.partition and exactly the cgc.subgraphs it invokes; the CGC dialects'
// bytecode reader rejects an IR version newer than this build's), lowers it
// with the generic kernel lowering and rewrites the result for the driver
// (KernelPrograms.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Cpu/PartitionCompiler.h"

#include "compiler/Targets/Common/KernelLowering.h"
#include "compiler/Targets/Common/UntrustedBytecode.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"

#include "cgc/IR/CGCDialect.h"
#include "cgc/IR/CGCOps.h"
#include "cgc/precompiled_program.h"
#include "cgc_op/IR/CGCOpDialect.h"
#include "cpu_compiler_identity.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace cgc::cpu_target {
namespace {

/// Checks that `module` is Partition IR: one cgc.partition, and cgc.subgraphs
/// that it invokes, nothing else.
bool checkPartitionModule(ModuleOp module, std::string &error) {
  PartitionOp partition;
  unsigned partitions = 0;
  for (Operation &op : *module.getBody()) {
    if (auto p = dyn_cast<PartitionOp>(op)) {
      partition = p;
      ++partitions;
      continue;
    }
    if (isa<SubgraphOp>(op))
      continue;
    error = "Partition IR may hold one cgc.partition and the cgc.subgraphs it "
            "invokes; it holds a '" +
            op.getName().getStringRef().str() + "'";
    return false;
  }
  if (partitions != 1) {
    error = "Partition IR must hold exactly one cgc.partition, found " +
            std::to_string(partitions);
    return false;
  }
  llvm::StringSet<> invoked;
  for (InvokeOp invoke : partition.getBody().front().getOps<InvokeOp>())
    invoked.insert(invoke.getCallee());
  for (SubgraphOp subgraph : module.getBody()->getOps<SubgraphOp>())
    if (!invoked.contains(subgraph.getSymName())) {
      error = "Partition IR holds subgraph '@" + subgraph.getSymName().str() +
              "', which partition '@" + partition.getSymName().str() +
              "' does not invoke";
      return false;
    }
  return true;
}

bool compilePartitionImpl(const void *bytecode, size_t size,
                          KernelProgram &program, std::string &error) {
  if (!bytecode || size == 0) {
    error = "the Partition IR is empty";
    return false;
  }
  llvm::StringRef bytes(static_cast<const char *>(bytecode), size);
  llvm::MemoryBufferRef buffer(bytes, "partition");
  if (!isBytecode(buffer)) {
    error = "the Partition IR is not MLIR bytecode";
    return false;
  }
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<CGCDialect, op::CGCOpDialect>();
  std::string firstError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && firstError.empty()) {
      llvm::raw_string_ostream os(firstError);
      if (!isa<UnknownLoc>(diag.getLocation()))
        os << diag.getLocation() << ": ";
      os << diag;
    }
    return success();
  });

  // MLIR's reader trusts its input (UntrustedBytecode.h).
  Block block;
  if (failed(readUntrustedBytecode(buffer, &block, &context))) {
    error = "cannot read the Partition IR bytecode: " +
            (firstError.empty() ? std::string("malformed bytecode") : firstError);
    return false;
  }
  if (block.getOperations().size() != 1 || !isa<ModuleOp>(block.front())) {
    error = "the Partition IR must hold exactly one cgc.module at the top "
            "level";
    return false;
  }
  auto module = cast<ModuleOp>(block.front());
  if (failed(verify(module))) {
    error = "the Partition IR does not verify: " + firstError;
    return false;
  }
  if (!checkPartitionModule(module, error))
    return false;

  KernelProgram lowered;
  if (!lowerPartitionModuleToKernelProgram(module, lowered, error))
    return false;
  optimizeKernelProgram(lowered);
  if (!lowered.validate(error)) {
    error = "internal error: the optimized kernel program is invalid: " + error;
    return false;
  }
  program = std::move(lowered);
  return true;
}

} // namespace

bool compilePartition(const void *bytecode, size_t size, KernelProgram &program,
                      std::string &error) {
  error.clear();
  return compilePartitionImpl(bytecode, size, program, error);
}

const char *compilerIdentity() { return CGC_CPU_COMPILER_IDENTITY; }

bool precompilePartition(ByteView bytecode, std::vector<uint8_t> &blob, std::string &error) {
  KernelProgram program;
  if (!compilePartition(bytecode.data, bytecode.size, program, error))
    return false;
  PrecompiledKey key;
  key.compiler = compilerIdentity();
  key.partitionDigest = digestBytecode(bytecode);
  blob = writePrecompiledProgram(key, {{parts::kKernelProgram, serializeKernelProgram(program)}});
  return true;
}

} // namespace cgc::cpu_target
