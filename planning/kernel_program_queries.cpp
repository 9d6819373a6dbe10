//===- kernel_program_queries.cpp - Questions about a kernel program ------===//

#include "planning/kernel_program_queries.h"

namespace cgc::planning {

bool readElsewhere(const KernelProgram &program, const KernelOperand &value, size_t except) {
  for (size_t k = 0; k < program.kernels.size(); ++k)
    for (size_t i = 0; i < program.kernels[k].inputs.size(); ++i) {
      if (k == except && i == 0)
        continue;
      const auto &in = program.kernels[k].inputs[i];
      if (in && overlaps(*in, value))
        return true;
    }
  return false;
}

bool takesAnyEpilogue(const std::string &op) {
  return opKindOf(op) == OpKind::Convolution || opKindOf(op) == OpKind::ConvTranspose ||
         opKindOf(op) == OpKind::MatMul || opKindOf(op) == OpKind::Gemm;
}

bool isFusionAnchor(const std::string &op) {
  return takesAnyEpilogue(op) || opKindOf(op) == OpKind::BatchNorm;
}

std::vector<size_t> epilogueChain(const KernelProgram &program, size_t anchor) {
  std::vector<size_t> chain;
  const KernelDesc &desc = program.kernels[anchor];
  if (desc.outputs.size() != 1)
    return chain;
  KernelOperand current = desc.outputs[0];
  for (size_t j = anchor + 1; j < program.kernels.size(); ++j) {
    const KernelDesc &next = program.kernels[j];
    if (current.storage != KernelOperand::Storage::Temporary || next.outputs.size() != 1 ||
        next.inputs.empty() || !next.inputs[0] || !(*next.inputs[0] == current) ||
        next.outputs[0].shape != desc.outputs[0].shape || readElsewhere(program, current, j))
      break;
    chain.push_back(j);
    current = next.outputs[0];
  }
  return chain;
}

} // namespace cgc::planning
