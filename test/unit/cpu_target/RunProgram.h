//===- RunProgram.h - Running a kernel program in the tests ------*- C++ -*-===//
//
// The kernel program rewrite tests run a program before and after
// optimizeKernelProgram with the driver's own executor and compare.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_CPU_TARGET_RUNPROGRAM_H
#define CGC_TEST_CPU_TARGET_RUNPROGRAM_H

#include "program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace cgc::test {

/// Runs `program` on 2 threads over `buffers` (one per binding, float32)
/// and returns binding `result` after the run.
inline std::vector<float> runProgram(const KernelProgram &program,
                                     std::vector<std::vector<float>> buffers, size_t result) {
  std::string error;
  auto compiled = cpu::CompiledProgram::create(program, error);
  EXPECT_TRUE(compiled) << error;
  if (!compiled)
    return {};
  std::vector<uint8_t *> bindings;
  for (auto &b : buffers)
    bindings.push_back(reinterpret_cast<uint8_t *>(b.data()));
  cpu::ThreadPool pool(2);
  compiled->run(bindings, pool);
  return buffers[result];
}

/// Runs `original` and `rewritten` over copies of `buffers` and expects
/// binding `result` to agree (within float32 rounding of a reordered sum).
inline void expectSameResult(const KernelProgram &original, const KernelProgram &rewritten,
                             const std::vector<std::vector<float>> &buffers, size_t result) {
  std::vector<float> expected = runProgram(original, buffers, result),
                     got = runProgram(rewritten, buffers, result);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], expected[i], 1e-5f * (1.0f + std::fabs(expected[i]))) << "element " << i;
}

} // namespace cgc::test

#endif // CGC_TEST_CPU_TARGET_RUNPROGRAM_H
