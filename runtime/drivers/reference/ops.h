//===- ops.h - The reference evaluator's op families -----------*- C++ -*-===//
//
// What the op files share: a strided view of an operand that reads and
// writes any dtype as double (or int64), index iteration, broadcasting, and
// the table each family adds its ops to.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_OPS_H
#define CGC_REFERENCE_OPS_H

#include "evaluator.h"

#include "cgc/dtype.h"
#include "cgc/op_kind.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cgc::reference {

bool isFloat(cgc_dtype_t dtype);
bool isInteger(cgc_dtype_t dtype); // signed or unsigned integers, not bool

/// One operand: its bytes, dtype, shape and strides (in elements).
struct View {
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  uint8_t *data = nullptr;

  View() = default;
  View(const KernelOperand &operand, const void *bytes);

  int64_t rank() const { return int64_t(shape.size()); }
  int64_t count() const; // number of elements
  /// Element offset of a multi-index (one entry per dimension).
  int64_t offset(const std::vector<int64_t> &index) const;
  /// The element at element offset `off`, as double (bool: 0/1; integers
  /// converted exactly up to 2^53).
  double get(int64_t off) const;
  /// Stores `v` rounded to the dtype (round to nearest even; integers:
  /// truncated toward zero and wrapped, as a C++ cast through int64; bool:
  /// v != 0).
  void set(int64_t off, double v) const;
  /// Integer access, exact for every integer dtype (floats truncate).
  int64_t getInt(int64_t off) const;
  void setInt(int64_t off, int64_t v) const;
  /// The element at multi-index `index`.
  double at(const std::vector<int64_t> &index) const { return get(offset(index)); }
  /// Copies one element's bytes from `src` (same dtype).
  void copyFrom(int64_t off, const View &src, int64_t srcOff) const;
};

/// Calls `f(index)` for every multi-index of `shape` in row-major order
/// (once with an empty index for rank 0; never for an empty shape).
void forEachIndex(const std::vector<int64_t> &shape,
                  const std::function<void(const std::vector<int64_t> &)> &f);

/// The multi-index of `index` (of the output's shape) in `input`'s shape
/// under numpy broadcasting (dimensions aligned at the end; size-1
/// dimensions read index 0).
std::vector<int64_t> broadcastIndex(const std::vector<int64_t> &index,
                                    const std::vector<int64_t> &inputShape);

/// Normalizes a possibly negative axis of a rank-`rank` tensor; throws
/// EvalError naming `op` when it is out of range.
int64_t normalizeAxis(const std::string &op, int64_t axis, int64_t rank);

/// Throws EvalError with `message`.
[[noreturn]] void fail(const std::string &message);

/// The operands of one evaluation.
struct Operands {
  std::vector<std::optional<View>> in;
  std::vector<View> out;
  /// Input i; throws EvalError naming the op when it is absent.
  const View &input(const KernelDesc &desc, size_t i) const;
  bool has(size_t i) const { return i < in.size() && in[i].has_value(); }
};

/// One op of the evaluator: `check` returns "" or what is unsupported
/// (dtypes, attribute values; the op name is prefixed by the caller);
/// `run` evaluates it.
struct OpDef {
  OpKind kind = OpKind::Unknown;
  std::function<std::string(const KernelDesc &)> check;
  std::function<void(const KernelDesc &, const Operands &)> run;
};

// Each family adds its ops (one file each).
void addElementwiseOps(std::vector<OpDef> &ops); // elementwise.cpp
void addReductionOps(std::vector<OpDef> &ops);   // reduce.cpp: reductions, softmax, arg*, cumsum
void addNormalizationOps(std::vector<OpDef> &ops); // norm.cpp
void addLinearOps(std::vector<OpDef> &ops);      // linear.cpp: matmul, gemm, convolution, conv_transpose
void addPoolingOps(std::vector<OpDef> &ops);     // pool.cpp
void addMovementOps(std::vector<OpDef> &ops);    // movement.cpp: layout, gather/scatter, pad, resize, ...

} // namespace cgc::reference

#endif // CGC_REFERENCE_OPS_H
