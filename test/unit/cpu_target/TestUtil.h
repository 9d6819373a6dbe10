//===- TestUtil.h - Helpers of the cpu target tests -------*- C++ -*-===//

#ifndef CGC_TEST_CPU_TARGET_TESTUTIL_H
#define CGC_TEST_CPU_TARGET_TESTUTIL_H

#include "cgc/kernel_program.h"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace cgc::test {

/// A float32 operand of a kernel program: binding or temporary `index`.
inline KernelOperand f32(KernelOperand::Storage storage, uint32_t index,
                         std::vector<int64_t> shape) {
  KernelOperand o;
  o.dtype = CGC_DTYPE_FLOAT32;
  o.shape = std::move(shape);
  o.storage = storage;
  o.index = index;
  return o;
}

/// A kernel of layer `op` with `inputs` and one `output`.
inline KernelDesc layer(const char *op, std::vector<KernelOperand> inputs,
                        KernelOperand output) {
  KernelDesc d;
  d.op = op;
  for (KernelOperand &in : inputs)
    d.inputs.push_back(std::move(in));
  d.outputs = {std::move(output)};
  return d;
}

/// A `cgc_op.transpose` layer.
inline KernelDesc transposeLayer(KernelOperand in, KernelOperand out, std::vector<int64_t> perm) {
  KernelDesc d = layer("cgc_op.transpose", {std::move(in)}, std::move(out));
  d.setAttr("perm", AttrValue::ofInts(std::move(perm)));
  return d;
}

/// A `cgc_op.reshape` layer to `out`'s shape.
inline KernelDesc reshapeLayer(KernelOperand in, KernelOperand out) {
  std::vector<int64_t> shape = out.shape;
  KernelDesc d = layer("cgc_op.reshape", {std::move(in)}, std::move(out));
  d.setAttr("shape", AttrValue::ofInts(std::move(shape)));
  return d;
}

/// Appends a float32 binding of `elements` elements to `program`.
inline void addF32Binding(KernelProgram &program, const char *name, int64_t elements,
                          bool constant) {
  KernelProgram::Binding b;
  b.name = name;
  b.bytes = uint64_t(elements) * 4;
  b.constant = constant;
  program.bindings.push_back(b);
}

/// An ungrouped 1x1 convolution, stride 1, no padding: x, weights, bias ->
/// output.
inline KernelDesc pointwiseConvolution(KernelOperand x, KernelOperand weights, KernelOperand bias,
                                       KernelOperand output) {
  KernelDesc d = layer("cgc_op.convolution", {std::move(x), std::move(weights), std::move(bias)},
                       std::move(output));
  d.setAttr("strides", AttrValue::ofInts({1, 1}));
  d.setAttr("dilations", AttrValue::ofInts({1, 1}));
  d.setAttr("start_padding", AttrValue::ofInts({0, 0}));
  d.setAttr("end_padding", AttrValue::ofInts({0, 0}));
  d.setAttr("groups", AttrValue::ofInt(1));
  return d;
}

/// y = relu(x . w), x m x k and y m x n float32 bind points, w a constant
/// k x n one: two layers through a temporary, which the CPU driver fuses
/// into one step.
inline KernelProgram matmulReluProgram(int64_t m, int64_t k, int64_t n) {
  using S = KernelOperand::Storage;
  KernelProgram p;
  addF32Binding(p, "x", m * k, false);
  addF32Binding(p, "w", k * n, true);
  addF32Binding(p, "y", m * n, false);
  p.temporaries.push_back({uint64_t(m * n * 4), 64});
  p.kernels.push_back(layer("cgc_op.matmul",
                            {f32(S::Binding, 0, {m, k}), f32(S::Binding, 1, {k, n})},
                            f32(S::Temporary, 0, {m, n})));
  p.kernels.push_back(
      layer("cgc_op.relu", {f32(S::Temporary, 0, {m, n})}, f32(S::Binding, 2, {m, n})));
  return p;
}

inline std::string readSourceFile(const std::string &relative) {
  std::ifstream file(std::string(CGC_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

inline std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Sets (or with null, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name)) {
      had_ = true;
      old_ = old;
    }
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

private:
  std::string name_, old_;
  bool had_ = false;
};

/// How many kernels of `program` are layer `op` ("cgc_op.transpose").
inline size_t countOps(const KernelProgram &program, const char *op) {
  size_t n = 0;
  for (const KernelDesc &k : program.kernels)
    n += k.op == op;
  return n;
}

} // namespace cgc::test

#endif // CGC_TEST_CPU_TARGET_TESTUTIL_H
