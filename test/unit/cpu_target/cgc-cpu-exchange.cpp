//===- cgc-cpu-exchange.cpp - Drive the CPU JIT table ---------===//
//
// A test tool for lit: calls the CPU driver's JIT table
// (getJitInterface(), runtime/drivers/cpu/jit.h) exactly as the driver
// does, and prints what comes back in a form FileCheck can read.
//
//   cgc-cpu-exchange declaration
//       CGC_SUBGRAPH_DECLARATION_REQUEST; prints the declared patterns
//       decoded from the answer's bytes.
//   cgc-cpu-exchange specialize FILE.mlir
//       CGC_SUBGRAPH_SPECIALIZATION_REQUEST with the cgc.subgraphs of FILE
//       (e.g. the output of cgc-opt --cgc-match-subgraphs); prints the
//       answer (cgc_pattern.accept / cgc_pattern.reject lines).
//   cgc-cpu-exchange jit FILE.mlir
//       writes the Partition IR of FILE as bytecode, compiles it with
//       compilePartition and prints the kernel program (one line per binding,
//       temporary and kernel) and how the driver's kernel library fuses it.
//   cgc-cpu-exchange jit-bytes FILE
//       the same with the bytes of FILE as they are (bytecode or not).
//
// FILE may be `-` (stdin). CGC_CPU_PATTERNS applies as in the driver.
//
//===----------------------------------------------------------------------===//

#include "compiler/InitAll.h"
#include "compiler/Targets/Common/Exchange.h"
#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "jit.h"

#include "cgc/IR/CGCOps.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace mlir;

namespace {

int fail(const std::string &message) {
  llvm::errs() << "cgc-cpu-exchange: " << message << "\n";
  return 1;
}

/// Calls the JIT table's exchange with a size query, then with a buffer.
int32_t exchange(const cgc::Guid &interface, const std::vector<uint8_t> &in,
                 std::vector<uint8_t> &out) {
  const cgc::cpu::JitInterface *jit = cgc::cpu::getJitInterface();
  size_t size = 0;
  int32_t hr = jit->exchange(interface, in.empty() ? nullptr : in.data(),
                             in.size(), nullptr, &size);
  if (hr != cgc::kS_OK)
    return hr;
  out.assign(size, 0);
  hr = jit->exchange(interface, in.empty() ? nullptr : in.data(), in.size(),
                     out.data(), &size);
  out.resize(size);
  return hr;
}

OwningOpRef<cgc::ModuleOp> readInput(MLIRContext *context, StringRef path,
                                     std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!file) {
    error = "cannot read '" + path.str() + "': " + file.getError().message();
    return nullptr;
  }
  return cgc::parseCGCModule(context, (*file)->getBuffer(), error);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text.empty() ? "scalar" : text;
}

std::string operandString(const cgc::KernelOperand &o) {
  std::string text =
      (o.storage == cgc::KernelOperand::Storage::Binding ? "b" : "t") +
      std::to_string(o.index);
  if (o.offset)
    text += "+" + std::to_string(o.offset);
  text += " " + shapeString(o.shape);
  if (!o.isContiguous())
    text += " strides " + shapeString(o.strides);
  return text;
}

void printProgram(const cgc::KernelProgram &program, llvm::raw_ostream &os) {
  for (size_t i = 0; i < program.bindings.size(); ++i)
    os << "binding " << i << " '" << program.bindings[i].name << "' "
       << program.bindings[i].bytes << " bytes"
       << (program.bindings[i].constant ? " constant" : "")
       << (program.bindings[i].internal ? " internal" : "") << "\n";
  for (size_t i = 0; i < program.temporaries.size(); ++i)
    os << "temporary " << i << " " << program.temporaries[i].bytes
       << " bytes\n";
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const cgc::KernelDesc &desc = program.kernels[k];
    os << "kernel " << k << " " << desc.op << " (";
    for (size_t i = 0; i < desc.inputs.size(); ++i)
      os << (i ? ", " : "")
         << (desc.inputs[i] ? operandString(*desc.inputs[i]) : "none");
    os << ") -> (";
    for (size_t i = 0; i < desc.outputs.size(); ++i)
      os << (i ? ", " : "") << operandString(desc.outputs[i]);
    os << ")\n";
  }
  for (const cgc::cpu_target::FusionCandidate &c :
       cgc::cpu_target::findFusionCandidates(program)) {
    os << "fusion candidate: kernel " << c.anchor << " +";
    for (size_t j : c.chain)
      os << " " << j;
    os << "\n";
  }
  cgc::cpu_target::KernelCheck check =
      cgc::cpu_target::checkKernelProgram(program);
  if (check.ok)
    os << "kernels: ok, " << check.fusedKernels << " fused\n";
  else
    os << "kernels: rejected: " << check.reason << "\n";
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return fail("usage: cgc-cpu-exchange declaration | specialize FILE "
                "| jit FILE | jit-bytes FILE");
  std::string command = argv[1];
  DialectRegistry registry;
  cgc::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string error;

  if (command == "declaration") {
    std::vector<uint8_t> answer;
    int32_t hr = exchange(cgc::interfaces::kSubgraphDeclarationRequest, {},
                          answer);
    if (hr != cgc::kS_OK)
      return fail("exchange failed: " + cgc::describeHResult(hr));
    OwningOpRef<cgc::ModuleOp> module = cgc::readMLIRContainer(
        &context, answer.data(), answer.size(),
        cgc::interfaces::kSubgraphDeclaration, error);
    if (!module)
      return fail(error);
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

  if (argc != 3)
    return fail(command + " needs one input file");

  if (command == "jit-bytes") {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFileOrSTDIN(argv[2], /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!file)
      return fail("cannot read '" + std::string(argv[2]) + "'");
    cgc::KernelProgram program;
    if (!cgc::cpu::getJitInterface()->compilePartition(
            (*file)->getBufferStart(), (*file)->getBufferSize(), program,
            error)) {
      llvm::outs() << "error: " << error << "\n";
      return 1;
    }
    printProgram(program, llvm::outs());
    return 0;
  }
  OwningOpRef<cgc::ModuleOp> input = readInput(&context, argv[2], error);
  if (!input)
    return fail(error);

  if (command == "specialize") {
    OpBuilder builder(&context);
    OwningOpRef<cgc::ModuleOp> request =
        cgc::ModuleOp::create(builder, input->getLoc());
    builder.setInsertionPointToEnd(request->getBody());
    for (cgc::SubgraphOp subgraph : input->getBody()->getOps<cgc::SubgraphOp>())
      builder.clone(*subgraph);
    std::vector<uint8_t> answer;
    int32_t hr = exchange(
        cgc::interfaces::kSubgraphSpecializationRequest,
        cgc::writeMLIRContainer(*request,
                                cgc::interfaces::kSubgraphSpecializationRequest),
        answer);
    if (hr != cgc::kS_OK)
      return fail("exchange failed: " + cgc::describeHResult(hr));
    OwningOpRef<cgc::ModuleOp> module = cgc::readMLIRContainer(
        &context, answer.data(), answer.size(),
        cgc::interfaces::kSubgraphSpecialization, error);
    if (!module)
      return fail(error);
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

  if (command == "jit") {
    std::string bytecode;
    llvm::raw_string_ostream os(bytecode);
    if (failed(writeBytecodeToFile(*input, os)))
      return fail("cannot write bytecode");
    cgc::KernelProgram program;
    if (!cgc::cpu::getJitInterface()->compilePartition(
            bytecode.data(), bytecode.size(), program, error)) {
      llvm::outs() << "error: " << error << "\n";
      return 1;
    }
    printProgram(program, llvm::outs());
    return 0;
  }
  return fail("unknown command '" + command + "'");
}
