//===- evaluator.h - The reference evaluator: every op, plainly -*- C++ -*-===//
//
// An executable specification of the kernel-program ops (cgc/kernel_program.h,
// the cgc_op dialect's semantics): each op evaluated on its own with plain
// loops over strided operands, in double precision (integers in int64),
// rounded once when stored. No fusion, no blocking, no vector code, no
// threads, no oneDNN: what it computes is what the op means, so the CPU
// driver's kernels, the kernel tests and the reference driver
// (libcgc_driver_reference.so, `--driver reference`) compare against it.
//
// An op it does not implement is an error at creation that names the op
// (and the dtype or attribute), never a silent substitute.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_EVALUATOR_H
#define CGC_REFERENCE_EVALUATOR_H

#include "cgc/kernel_program.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace cgc::reference {

/// What evaluate() throws when an operand's values are invalid (an index
/// outside its dimension): the message names the op and the value.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// "" if the evaluator implements `desc` (op, operand count, dtypes,
/// attribute values), else a message naming the op and what it lacks.
std::string unsupported(const KernelDesc &desc);

/// Evaluates `desc`: `inputs[i]` is the first byte of input i (null for an
/// absent optional input), `outputs[i]` likewise; shapes and strides come
/// from the descriptor. Outputs must not overlap inputs unless they are the
/// same bytes with the same layout (an elementwise op in place). Throws
/// EvalError for invalid operand values; the descriptor must have passed
/// unsupported().
void evaluate(const KernelDesc &desc, const void *const *inputs, void *const *outputs);

/// Every op name ("cgc_op.relu") the evaluator implements, sorted.
std::vector<std::string> supportedOps();

} // namespace cgc::reference

#endif // CGC_REFERENCE_EVALUATOR_H
