//===- check.cpp - cgc_op.check -------------------------------------------===//
//
// A compile-time assumption checked on every run: the output is the input
// when the one-element bool condition holds; otherwise the run fails with the
// op's message (a RunError, as an index out of range fails it).
//
//===----------------------------------------------------------------------===//

#include "common.h"

#include <cstring>

namespace cgc::cpu {
namespace {

class CheckKernel final : public KernelBase {
public:
  CheckKernel(std::string message, size_t bytes)
      : message_(std::move(message)), bytes_(bytes) {
    description_ = cat("check (", bytes, " bytes): ", message_);
  }

  void run(const KernelArgs &args, ThreadPool &) const override {
    if (*static_cast<const uint8_t *>(args.inputs[0]) == 0)
      throw RunError("cgc_op.check: " + message_);
    if (args.outputs[0] != args.inputs[1] && bytes_ > 0)
      std::memmove(args.outputs[0], args.inputs[1], bytes_);
  }

private:
  std::string message_;
  size_t bytes_;
};

std::unique_ptr<Kernel> makeCheck(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(2, 2);
  r.expectOutputs(1, 1);
  const KernelOperand &condition = r.input(0, "condition");
  const KernelOperand &input = r.input(1, "input");
  if (condition.dtype != CGC_DTYPE_BOOL || condition.numElements() != 1)
    r.error("the condition must be one bool");
  r.expectSameDType(input, "input", r.output(0), "output");
  r.expectShape(r.output(0), "output", input.shape);
  std::string message = r.getString("message", std::nullopt, {});
  return std::make_unique<CheckKernel>(std::move(message),
                                       size_t(input.numElements()) * cgc_dtype_size(input.dtype));
}

} // namespace

void registerCheckOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::Check, makeCheck, false});
}

} // namespace cgc::cpu
