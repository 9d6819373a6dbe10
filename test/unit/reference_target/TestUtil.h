//===- TestUtil.h - Helpers of the reference target tests -------*- C++ -*-===//

#ifndef CGC_TEST_REFERENCE_TARGET_TESTUTIL_H
#define CGC_TEST_REFERENCE_TARGET_TESTUTIL_H

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

} // namespace cgc::test

#endif // CGC_TEST_REFERENCE_TARGET_TESTUTIL_H
