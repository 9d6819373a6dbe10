//===- DescriptorFuzzTest.cpp - Random descriptors never crash ------------===//
//
// For every op the library knows, random descriptors (operand counts,
// dtypes, shapes and strides, attributes of random kinds and values drawn
// from the names the ops use): createKernel must either fail with a message
// naming the op or return a kernel, and a kernel it returns must run on
// buffers of the sizes its descriptor gives without touching memory outside
// them (guard bytes around every buffer are checked), or refuse the values in
// them with a RunError naming the op.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <cstdio>
#include <cstring>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

const char *kAttrNames[] = {
    "axis", "axes", "keepdims", "perm", "shape", "kernel_shape", "strides", "dilations",
    "start_padding", "end_padding", "groups", "ceil_mode", "count_include_pad", "p", "alpha",
    "beta", "epsilon", "size", "bias", "min", "max", "to", "fmod", "direction", "approximate",
    "transpose_a", "transpose_b", "starts", "ends", "steps", "sizes", "pads", "mode", "value",
    "repeats", "blocksize", "scales", "select_last_index", "k", "largest", "reduction",
    "exclusive", "reverse", "output_padding", "scale_size", "align_corners", "padding_mode",
    "detect_positive", "detect_negative", "lambd", "gamma", "coordinate_transformation_mode",
    "nearest_mode", "cubic_coeff_a", "exclude_outside", "extrapolation_value", "roi"};

const char *kStrings[] = {"none", "tanh", "left", "right", "constant", "reflect", "edge",
                          "nearest", "linear", "cubic", "DCR", "CRD", "add", "max", "bilinear",
                          "zeros", "border", "half_pixel", "asymmetric", "bogus"};

AttrValue randomAttr(std::mt19937 &rng) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  switch (pick(7)) {
  case 0: return AttrValue::ofInt(pick(7) - 2);
  case 1: return AttrValue::ofFloat(double(pick(9)) * 0.5 - 1);
  case 2: return AttrValue::ofBool(pick(2));
  case 3: return AttrValue::ofString(kStrings[pick(int(std::size(kStrings)))]);
  case 4: {
    std::vector<int64_t> v(size_t(pick(5)));
    for (int64_t &x : v)
      x = pick(6) - 1;
    return AttrValue::ofInts(v);
  }
  case 5: {
    std::vector<double> v(size_t(pick(5)));
    for (double &x : v)
      x = double(pick(8)) * 0.5;
    return AttrValue::ofFloats(v);
  }
  default: return AttrValue::ofDType(kAllTypes[size_t(pick(int(kAllTypes.size())))]);
  }
}

struct Guarded {
  std::vector<uint8_t> bytes;
  int64_t origin = 0;
  size_t span = 0;
  static constexpr size_t kGuard = 256;
};

/// A buffer for `op` (its strides may be negative: element 0 is not the
/// lowest address) with guard bytes on both sides.
Guarded allocate(const KernelOperand &op) {
  Guarded g;
  size_t elem = cgc_dtype_size(op.dtype);
  std::vector<int64_t> st = op.effectiveStrides();
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (size_t d = 0; d < op.shape.size(); ++d) {
    if (op.shape[d] == 0)
      empty = true;
    int64_t span = (op.shape[d] - 1) * st[d];
    (span < 0 ? lo : hi) += span;
  }
  if (empty)
    lo = hi = 0;
  g.span = empty ? 0 : size_t(hi - lo + 1) * elem;
  g.bytes.assign(g.span + 2 * Guarded::kGuard, 0xA5);
  g.origin = int64_t(Guarded::kGuard) - lo * int64_t(elem);
  // Valid-looking contents: small values (indices stay mostly in range).
  for (size_t i = Guarded::kGuard; i < Guarded::kGuard + g.span; ++i)
    g.bytes[i] = uint8_t(i % 3);
  return g;
}

bool guardsIntact(const Guarded &g) {
  for (size_t i = 0; i < Guarded::kGuard; ++i)
    if (g.bytes[i] != 0xA5 || g.bytes[g.bytes.size() - 1 - i] != 0xA5)
      return false;
  return true;
}

KernelOperand randomOperand(std::mt19937 &rng, const std::vector<int64_t> &base, cgc_dtype_t dt) {
  KernelOperand op;
  op.dtype = dt;
  op.shape = base;
  if (rng() % 4 == 0) { // perturb the shape
    if (!op.shape.empty() && rng() % 2)
      op.shape.pop_back();
    else if (op.shape.size() < 5)
      op.shape.push_back(int64_t(rng() % 4));
  }
  if (rng() % 3 == 0 && !op.shape.empty()) { // strided
    op.strides.assign(op.shape.size(), 1);
    for (size_t i = op.shape.size() - 1; i-- > 0;)
      op.strides[i] = op.strides[i + 1] * std::max<int64_t>(op.shape[i + 1], 1);
    for (int64_t &s : op.strides)
      s = s * int64_t(1 + rng() % 2) * (rng() % 5 == 0 ? -1 : 1);
    if (rng() % 4 == 0)
      op.strides[0] = 0;
  }
  return op;
}

TEST(DescriptorFuzz, RandomDescriptorsFailCleanlyOrRunInBounds) {
  std::mt19937 rng(1234);
  int created = 0, refused = 0, failedAtRun = 0;
  for (const std::string &name : supportedOps()) {
    for (int iter = 0; iter < 150; ++iter) {
      KernelDesc d;
      d.op = name;
      std::vector<int64_t> base(size_t(rng() % 5));
      for (int64_t &x : base)
        x = int64_t(rng() % 5);
      cgc_dtype_t dt = kAllTypes[rng() % kAllTypes.size()];
      if (rng() % 2)
        dt = CGC_DTYPE_FLOAT32;
      size_t nIn = rng() % 5, nOut = 1 + rng() % 2;
      for (size_t i = 0; i < nIn; ++i) {
        if (rng() % 10 == 0) {
          d.inputs.push_back(std::nullopt);
          continue;
        }
        cgc_dtype_t t = rng() % 6 == 0 ? kAllTypes[rng() % kAllTypes.size()] : dt;
        if (rng() % 5 == 0)
          t = CGC_DTYPE_INT64;
        d.inputs.push_back(randomOperand(rng, base, t));
      }
      for (size_t i = 0; i < nOut; ++i)
        d.outputs.push_back(randomOperand(rng, base, rng() % 4 == 0 ? CGC_DTYPE_BOOL : dt));
      size_t nAttrs = rng() % 6;
      for (size_t i = 0; i < nAttrs; ++i)
        d.setAttr(kAttrNames[rng() % std::size(kAttrNames)], randomAttr(rng));
      std::string error;
      std::unique_ptr<Kernel> k = createKernel(d, error);
      if (!k) {
        ++refused;
        EXPECT_NE(error.find(name), std::string::npos) << "error without the op name: " << error;
        continue;
      }
      ++created;
      std::vector<Guarded> ins, outs;
      std::vector<const void *> inPtrs;
      std::vector<void *> outPtrs;
      for (const auto &in : d.inputs) {
        inPtrs.push_back(nullptr);
        if (!in) {
          ins.emplace_back();
          continue;
        }
        ins.push_back(allocate(*in));
      }
      for (size_t i = 0; i < d.inputs.size(); ++i)
        if (d.inputs[i])
          inPtrs[i] = ins[i].bytes.data() + ins[i].origin;
      for (const auto &out : d.outputs)
        outs.push_back(allocate(out));
      for (Guarded &g : outs)
        outPtrs.push_back(g.bytes.data() + g.origin);
      KernelArgs args{inPtrs.data(), outPtrs.data()};
      try {
        k->run(args, (iter % 2) ? pool1() : pool3());
      } catch (const RunError &e) {
        // Values the op refuses (an index out of range in the buffers'
        // filler bytes, a check's false condition): a clean failure that
        // names the op, which must still not have written out of bounds.
        ++failedAtRun;
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
            << "run error without the op name: " << e.what();
      }
      for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_TRUE(guardsIntact(outs[i]))
            << name << " wrote outside output " << i << " [" << k->describe() << "]";
      for (size_t i = 0; i < ins.size(); ++i)
        if (d.inputs[i])
          EXPECT_TRUE(guardsIntact(ins[i])) << name << " wrote into input " << i;
    }
  }
  std::printf("random descriptors: %d kernels created and run (%d of them refused their "
              "values), %d refused\n",
              created, failedAtRun, refused);
  // Both outcomes must occur, or the fuzzing tests nothing.
  EXPECT_GT(created, 100);
  EXPECT_GT(refused, 1000);
}

} // namespace
