//===- CheckedTest.cpp - cgc/checked.h and the plan reader's sizes --------===//

#include "cgc/checked.h"
#include "cgc/compiled_model.h"

#include <gtest/gtest.h>

#include <climits>
#include <vector>

namespace {

using cgc::checkedAdd;
using cgc::checkedAlignUp;
using cgc::checkedMul;
using cgc::elementCount;
using cgc::tensorBytes;

TEST(CheckedTest, MultiplyAndAddDetectOverflow) {
  EXPECT_EQ(checkedMul(uint64_t(1) << 32, uint64_t(1) << 31), uint64_t(1) << 63);
  EXPECT_FALSE(checkedMul(uint64_t(1) << 32, uint64_t(1) << 32));
  EXPECT_EQ(checkedAdd(UINT64_MAX - 1, uint64_t(1)), UINT64_MAX);
  EXPECT_FALSE(checkedAdd(UINT64_MAX, uint64_t(1)));
  EXPECT_FALSE(checkedMul(int64_t(-1), INT64_MIN));
  EXPECT_EQ(checkedMul(int64_t(-3), int64_t(4)), -12);
  EXPECT_FALSE(checkedAdd(INT64_MAX, int64_t(1)));
}

TEST(CheckedTest, AlignUp) {
  EXPECT_EQ(checkedAlignUp(0, 64), 0u);
  EXPECT_EQ(checkedAlignUp(1, 64), 64u);
  EXPECT_EQ(checkedAlignUp(128, 64), 128u);
  EXPECT_FALSE(checkedAlignUp(UINT64_MAX - 2, 64));
  EXPECT_FALSE(checkedAlignUp(5, 0));
}

TEST(CheckedTest, ElementCountRefusesWhatWraps) {
  EXPECT_EQ(elementCount(std::vector<int64_t>{}), 1);
  EXPECT_EQ(elementCount(std::vector<int64_t>{2, 3, 4}), 24);
  // 2^40 x 2^40 wraps to 0 in 64 bits; (2^62 + 1) x 4 to 4.
  EXPECT_FALSE(elementCount(std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_FALSE(elementCount(std::vector<int64_t>{(int64_t(1) << 62) + 1, 4}));
  EXPECT_FALSE(elementCount(std::vector<int64_t>{2, -3}));
  // A zero dimension does not excuse the others.
  EXPECT_FALSE(elementCount(std::vector<int64_t>{0, int64_t(1) << 62, 16}));
  EXPECT_EQ(elementCount(std::vector<int64_t>{0, 1 << 20}), 0);
  EXPECT_FALSE(elementCount(std::vector<int64_t>(cgc::kMaxTensorRank + 1, 1)));
}

TEST(CheckedTest, TensorBytesHasALimit) {
  EXPECT_EQ(tensorBytes(std::vector<int64_t>{1, 3, 224, 224}, 4), 602112u);
  // 2^20 x 2^20 floats: 4 TiB, under the limit; 2^24 x 2^24 floats are not.
  EXPECT_EQ(tensorBytes(std::vector<int64_t>{1 << 20, 1 << 20}, 4), uint64_t(1) << 42);
  EXPECT_FALSE(tensorBytes(std::vector<int64_t>{1 << 24, 1 << 24}, 4));
  EXPECT_EQ(tensorBytes(int64_t(cgc::kMaxTensorBytes), 1), cgc::kMaxTensorBytes);
  EXPECT_FALSE(tensorBytes(int64_t(cgc::kMaxTensorBytes), 2));
  EXPECT_FALSE(tensorBytes(int64_t(-1), 4));
  EXPECT_EQ(cgc::tensorSizeError(std::vector<int64_t>{2, 3}, 4), "");
  EXPECT_EQ(cgc::tensorSizeError(std::vector<int64_t>{int64_t(1) << 40, int64_t(1) << 40}, 4),
            "its shape 1099511627776x1099511627776 of 4-byte elements is larger than cgc's "
            "limit of 2^47 bytes (128 TiB)");
  EXPECT_EQ(cgc::tensorSizeError(std::vector<int64_t>{4, -1}, 4),
            "its shape 4x-1 has a negative dimension");
}

/// A plan whose input claims `shape` with `bytes`.
std::string planWithInput(const std::string &shape, const std::string &bytes) {
  return R"({"version": 1, "inputs": [{"name": "x", "dtype": "float32", "shape": )" + shape +
         R"(, "bytes": )" + bytes +
         R"(}], "outputs": [], "scratch": {"bytes": 0, "alignment": 64},
             "constants": {"bytes": 0, "alignment": 64, "part": 0, "entries": []},
             "programs": [], "commands": [],
             "memory": {"footprint": 0, "lower_bound": 0, "naive": 0},
             "schedule": {"dispatches": 0, "barriers": 0}})";
}

TEST(CheckedTest, PlanReaderRefusesWrappingSizes) {
  cgc::ExecutionPlan plan;
  std::string error;
  ASSERT_TRUE(cgc::parseExecutionPlan(planWithInput("[2, 3]", "24"), plan, error)) << error;
  // (2^62 + 1) x 4 floats wrap to 16 bytes; 2^40 x 2^40 to 0.
  EXPECT_FALSE(cgc::parseExecutionPlan(planWithInput("[4611686018427387905, 4]", "16"), plan,
                                       error));
  EXPECT_NE(error.find("input 'x'"), std::string::npos) << error;
  EXPECT_NE(error.find("larger than cgc's limit"), std::string::npos) << error;
  EXPECT_FALSE(
      cgc::parseExecutionPlan(planWithInput("[1099511627776, 1099511627776]", "0"), plan, error));
  EXPECT_NE(error.find("larger than cgc's limit"), std::string::npos) << error;
}

TEST(CheckedTest, PlanReaderRefusesNumbersThatAreNotIntegersOfTheirField) {
  cgc::ExecutionPlan plan;
  std::string error;
  // A float beyond 2^64 read as uint64_t was undefined behaviour
  // (static_cast inside nlohmann::json), a negative one wrapped around.
  EXPECT_FALSE(cgc::parseExecutionPlan(planWithInput("[2, 3]", "2.4e67"), plan, error));
  EXPECT_NE(error.find("is not an integer from 0 to 18446744073709551615"), std::string::npos)
      << error;
  EXPECT_FALSE(cgc::parseExecutionPlan(planWithInput("[2, 3]", "-1"), plan, error));
  EXPECT_NE(error.find("the number -1 is not an integer from 0 to"), std::string::npos) << error;
  EXPECT_FALSE(cgc::parseExecutionPlan(planWithInput("[2.5, 3]", "24"), plan, error));
  EXPECT_NE(error.find("the number 2.5 is not an integer"), std::string::npos) << error;
  EXPECT_FALSE(cgc::parseExecutionPlan(planWithInput("[2, 3]", "\"24\""), plan, error));
  EXPECT_NE(error.find("expected an integer, got string"), std::string::npos) << error;
}

} // namespace
