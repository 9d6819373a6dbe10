//===- KernelTestUtil.h - Tensors, descriptors and oracles for kernel tests ===//
//
// Test tensors own their bytes and may be strided views (gaps, transposed,
// reversed, broadcast) of a larger buffer. Values move in and out as double
// through conversions written here independently of the library's. Oracles
// in the tests compute in double from the same (already rounded) inputs.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_KERNEL_TEST_UTIL_H
#define CGC_TEST_KERNEL_TEST_UTIL_H

#include "kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace cgc::cpu::test {

/// How a test tensor is laid out in memory.
enum class Layout {
  Contiguous,
  Padded,     // gaps after every dimension
  Transposed, // the last two dimensions swapped in memory
  Reversed,   // the last dimension reversed (negative stride)
  ChannelsLast, // dimension 1 innermost (rank >= 3)
};
const char *layoutName(Layout layout);

class Tensor {
public:
  Tensor() = default;
  Tensor(cgc_dtype_t dtype, std::vector<int64_t> shape, Layout layout = Layout::Contiguous);
  /// A view with explicit element strides over a fresh buffer big enough for
  /// them (strides may be 0 or negative).
  static Tensor withStrides(cgc_dtype_t dtype, std::vector<int64_t> shape,
                            std::vector<int64_t> strides);

  cgc_dtype_t dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  const std::vector<int64_t> &strides() const { return strides_; }
  int64_t size() const;
  bool contiguous() const;

  void *data() { return storage_.data() + origin_; }
  const void *data() const { return storage_.data() + origin_; }

  /// Element at row-major position `i` of the logical shape.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// All elements in row-major order.
  std::vector<double> values() const;
  void setValues(const std::vector<double> &v);
  /// Row-major position -> byte offset from data().
  int64_t byteOffset(int64_t i) const;

  KernelOperand operand() const;
  /// False if anything wrote the 64 guard bytes before or after the
  /// elements' span.
  bool guardsIntact() const;

private:
  cgc_dtype_t dtype_ = CGC_DTYPE_FLOAT32;
  std::vector<int64_t> shape_, strides_;
  std::vector<uint8_t> storage_;
  int64_t origin_ = 0; // byte offset of element 0 in storage_
};

/// Rounds a double to what `dtype` stores (the value the kernel sees).
double roundTo(cgc_dtype_t dtype, double v);
bool isFloat(cgc_dtype_t dtype);
bool isSignedInt(cgc_dtype_t dtype);
bool isUnsignedInt(cgc_dtype_t dtype);
/// Integer dtypes wrap modulo 2^bits; floats round; bool is v != 0.
double wrapTo(cgc_dtype_t dtype, double v);
std::string dtypeStr(cgc_dtype_t dtype);

/// Fills with uniform values in [lo, hi] (integers for integer dtypes,
/// 0/1 for bool), rounded to the dtype.
void fillRandom(Tensor &t, std::mt19937 &rng, double lo, double hi);

extern const std::vector<cgc_dtype_t> kFloatTypes, kIntTypes, kSignedIntTypes, kUnsignedTypes,
    kNumericTypes, kSignedTypes, kAllTypes;

/// A KernelDesc under construction.
class Desc {
public:
  explicit Desc(std::string op) { desc_.op = std::move(op); }
  Desc &in(const Tensor &t) {
    desc_.inputs.push_back(t.operand());
    return *this;
  }
  Desc &absent() {
    desc_.inputs.push_back(std::nullopt);
    return *this;
  }
  Desc &out(const Tensor &t) {
    desc_.outputs.push_back(t.operand());
    return *this;
  }
  Desc &attr(const std::string &name, AttrValue v) {
    desc_.setAttr(name, std::move(v));
    return *this;
  }
  Desc &i(const std::string &name, int64_t v) { return attr(name, AttrValue::ofInt(v)); }
  Desc &f(const std::string &name, double v) { return attr(name, AttrValue::ofFloat(v)); }
  Desc &b(const std::string &name, bool v) { return attr(name, AttrValue::ofBool(v)); }
  Desc &s(const std::string &name, const std::string &v) { return attr(name, AttrValue::ofString(v)); }
  Desc &ints(const std::string &name, std::vector<int64_t> v) {
    return attr(name, AttrValue::ofInts(std::move(v)));
  }
  Desc &floats(const std::string &name, std::vector<double> v) {
    return attr(name, AttrValue::ofFloats(std::move(v)));
  }
  const KernelDesc &get() const { return desc_; }
  operator const KernelDesc &() const { return desc_; }

private:
  KernelDesc desc_;
};

/// What the reference evaluator (runtime/drivers/reference) computes for
/// output `output` of `desc` with `inputs` (desc's input operands must
/// describe them), in row-major order: the op evaluated plainly, with the
/// result kept in double (the descriptor's output becomes a float64 one)
/// so that it is not rounded to the kernel's dtype. Fails the test (and
/// returns nothing) if the evaluator refuses the descriptor.
std::vector<double> referenceValues(const KernelDesc &desc,
                                    const std::vector<const Tensor *> &inputs, size_t output = 0);

/// Creates a kernel; fails the test (and returns null) with the library's
/// message if it cannot.
std::unique_ptr<Kernel> make(const KernelDesc &desc, const KernelOptions &options = {});
/// The error createKernel reports (empty if it succeeded).
std::string makeError(const KernelDesc &desc);

void runKernel(const Kernel &kernel, const std::vector<const Tensor *> &inputs,
               const std::vector<Tensor *> &outputs, ThreadPool &pool);

/// Compares every element with `expected` within |a - e| <= abs + rel |e|
/// (NaN matches NaN, infinities must match exactly). Reports the first few
/// mismatches with `context`.
::testing::AssertionResult closeTo(const Tensor &actual, const std::vector<double> &expected,
                                   double rel, double abs, const std::string &context = "");
/// Tolerances for results computed in `dtype` by a few float operations.
double relTol(cgc_dtype_t dtype);
double absTol(cgc_dtype_t dtype);

/// Row-major coordinates of position `i`.
std::vector<int64_t> coords(int64_t i, const std::vector<int64_t> &shape);
int64_t linear(const std::vector<int64_t> &c, const std::vector<int64_t> &shape);
int64_t count(const std::vector<int64_t> &shape);
/// Position in `src` (broadcast to the coordinates `c` of a larger shape).
int64_t broadcastIndex(const std::vector<int64_t> &c, const std::vector<int64_t> &srcShape);
std::vector<int64_t> broadcast(const std::vector<int64_t> &a, const std::vector<int64_t> &b);

/// Pools the tests run with (1 thread and 3 threads).
ThreadPool &pool1();
ThreadPool &pool3();

} // namespace cgc::cpu::test

#endif // CGC_TEST_KERNEL_TEST_UTIL_H
