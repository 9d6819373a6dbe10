//===- ReferenceAgreementTest.cpp - The kernels against the evaluator -----===//
//
// The reference evaluator (runtime/drivers/reference) is the executable
// specification of the kernel-program ops. Here every op the kernel library
// implements must be one it implements too, and random descriptors of every
// op (the generator of DescriptorFuzzTest: random operand counts, dtypes,
// shapes, strides and attributes) that both accept must give the same
// results on the same random inputs: exactly for integers and booleans,
// within a float tolerance otherwise; an index out of range must fail on
// both.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "evaluator.h"
#include "ops.h"

#include <cmath>
#include <cstdio>
#include <set>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

TEST(ReferenceEvaluator, ImplementsEveryOpOfTheKernelLibrary) {
  std::vector<std::string> evaluated = reference::supportedOps();
  std::set<std::string> known(evaluated.begin(), evaluated.end());
  for (const std::string &op : supportedOps())
    EXPECT_TRUE(known.count(op)) << op << " has a kernel but no reference definition";
}

TEST(ReferenceEvaluator, RefusesAnUnknownOpNamingIt) {
  KernelDesc d;
  d.op = "cgc_op.no_such_op";
  EXPECT_NE(reference::unsupported(d).find("cgc_op.no_such_op"), std::string::npos);
}

/// Operands with their own bytes (strides may be negative or zero).
struct Buffer {
  std::vector<uint8_t> bytes;
  int64_t origin = 0;
  void *data() { return bytes.data() + origin; }
};

Buffer allocate(const KernelOperand &op) {
  Buffer b;
  const int64_t elem = int64_t(cgc_dtype_size(op.dtype));
  std::vector<int64_t> strides = op.effectiveStrides();
  int64_t lo = 0, hi = 0;
  for (size_t d = 0; d < op.shape.size(); ++d) {
    if (op.shape[d] == 0)
      return b;
    int64_t span = (op.shape[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  b.bytes.assign(size_t((hi - lo + 1) * elem), 0);
  b.origin = -lo * elem;
  return b;
}

/// Random values in [-3, 3] (integers: whole numbers, unsigned from 0).
void fill(const KernelOperand &op, Buffer &b, std::mt19937 &rng) {
  if (b.bytes.empty())
    return;
  reference::View view(op, b.data());
  std::uniform_real_distribution<double> uniform(-3, 3);
  reference::forEachIndex(op.shape, [&](const std::vector<int64_t> &index) {
    double v = uniform(rng);
    if (!isFloat(op.dtype))
      v = std::round(isUnsignedInt(op.dtype) || op.dtype == CGC_DTYPE_BOOL ? std::fabs(v) : v);
    view.set(view.offset(index), v);
  });
}

/// The first element where `a` and `b` differ beyond the tolerance, as a
/// message; "" if they agree.
std::string compare(const KernelOperand &op, Buffer &a, Buffer &b) {
  if (a.bytes.empty())
    return "";
  reference::View va(op, a.data()), vb(op, b.data());
  const bool wide = op.dtype == CGC_DTYPE_FLOAT16 || op.dtype == CGC_DTYPE_BFLOAT16;
  const double rel = wide ? 2e-2 : 2e-4, abs = wide ? 2e-2 : 1e-4;
  std::string mismatch;
  reference::forEachIndex(op.shape, [&](const std::vector<int64_t> &index) {
    if (!mismatch.empty())
      return;
    const int64_t off = va.offset(index);
    bool same;
    double x = va.get(off), y = vb.get(off);
    if (!isFloat(op.dtype))
      same = va.getInt(off) == vb.getInt(off);
    else if (std::isnan(x) || std::isnan(y))
      same = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y))
      same = x == y;
    else
      same = std::fabs(x - y) <= abs + rel * std::fabs(y);
    if (!same) {
      mismatch = "at [";
      for (size_t i = 0; i < index.size(); ++i)
        mismatch += (i ? "," : "") + std::to_string(index[i]);
      mismatch += "]: kernel " + std::to_string(x) + ", reference " + std::to_string(y);
    }
  });
  return mismatch;
}

const char *kAttrNames[] = {
    "axis", "axes", "keepdims", "perm", "kernel_shape", "strides", "dilations", "start_padding",
    "end_padding", "groups", "ceil_mode", "count_include_pad", "p", "alpha", "beta", "epsilon",
    "size", "bias", "min", "max", "to", "fmod", "direction", "approximate", "transpose_a",
    "transpose_b", "starts", "ends", "steps", "pads", "mode", "value", "blocksize",
    "select_last_index", "k", "largest", "reduction", "exclusive", "reverse", "lambd", "gamma",
    "detect_positive", "detect_negative"};

AttrValue randomAttr(const std::string &name, std::mt19937 &rng) {
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  if (name == "alpha" || name == "beta" || name == "epsilon" || name == "bias" ||
      name == "min" || name == "max" || name == "value" || name == "lambd" || name == "gamma")
    return AttrValue::ofFloat(double(pick(9)) * 0.25 + 0.25);
  if (name == "approximate")
    return AttrValue::ofString(pick(2) ? "none" : "tanh");
  if (name == "direction")
    return AttrValue::ofString(pick(2) ? "left" : "right");
  if (name == "mode")
    return AttrValue::ofString(pick(2) ? "constant" : "edge");
  if (name == "reduction")
    return AttrValue::ofString(pick(2) ? "none" : "add");
  if (name == "to")
    return AttrValue::ofDType(kAllTypes[size_t(pick(int(kAllTypes.size())))]);
  if (name == "axes" || name == "perm" || name == "kernel_shape" || name == "strides" ||
      name == "dilations" || name == "start_padding" || name == "end_padding" ||
      name == "starts" || name == "ends" || name == "steps" || name == "pads") {
    std::vector<int64_t> v(size_t(pick(4)));
    for (int64_t &x : v)
      x = pick(4) - (name == "axes" || name == "steps" ? 1 : 0);
    return AttrValue::ofInts(v);
  }
  if (pick(3) == 0)
    return AttrValue::ofBool(pick(2));
  return AttrValue::ofInt(pick(5) - 1);
}

KernelOperand randomOperand(std::mt19937 &rng, const std::vector<int64_t> &base, cgc_dtype_t dt) {
  KernelOperand op;
  op.dtype = dt;
  op.shape = base;
  if (rng() % 4 == 0) {
    if (!op.shape.empty() && rng() % 2)
      op.shape.pop_back();
    else if (op.shape.size() < 4)
      op.shape.push_back(int64_t(1 + rng() % 3));
  }
  if (rng() % 3 == 0 && !op.shape.empty()) {
    op.strides.assign(op.shape.size(), 1);
    for (size_t i = op.shape.size() - 1; i-- > 0;)
      op.strides[i] = op.strides[i + 1] * std::max<int64_t>(op.shape[i + 1], 1);
    for (int64_t &s : op.strides)
      s = s * int64_t(1 + rng() % 2) * (rng() % 5 == 0 ? -1 : 1);
  }
  return op;
}

TEST(ReferenceEvaluator, RandomDescriptorsAgreeWithTheKernels) {
  std::mt19937 rng(2026);
  int compared = 0, kernelOnly = 0;
  std::set<std::string> comparedOps;
  for (const std::string &name : supportedOps()) {
    for (int iter = 0; iter < 300; ++iter) {
      KernelDesc d;
      d.op = name;
      std::vector<int64_t> base(size_t(rng() % 4));
      for (int64_t &x : base)
        x = int64_t(1 + rng() % 4);
      cgc_dtype_t dt = rng() % 2 ? CGC_DTYPE_FLOAT32 : kAllTypes[rng() % kAllTypes.size()];
      size_t nIn = 1 + rng() % 3, nOut = rng() % 5 == 0 ? 2 : 1;
      for (size_t i = 0; i < nIn; ++i)
        d.inputs.push_back(randomOperand(rng, base, rng() % 6 == 0 ? CGC_DTYPE_INT64 : dt));
      for (size_t i = 0; i < nOut; ++i)
        d.outputs.push_back(randomOperand(rng, base, rng() % 5 == 0 ? CGC_DTYPE_BOOL : dt));
      size_t nAttrs = rng() % 5;
      for (size_t i = 0; i < nAttrs; ++i) {
        std::string attr = kAttrNames[rng() % std::size(kAttrNames)];
        d.setAttr(attr, randomAttr(attr, rng));
      }
      std::string error;
      std::unique_ptr<Kernel> kernel = createKernel(d, error);
      if (!kernel)
        continue;
      // A descriptor only the kernels accept is counted (the evaluator is
      // stricter: ODS dtype rules, exact output shapes).
      if (!reference::unsupported(d).empty()) {
        ++kernelOnly;
        continue;
      }
      std::vector<Buffer> ins, kernelOuts, referenceOuts;
      for (const auto &in : d.inputs) {
        ins.push_back(allocate(*in));
        fill(*in, ins.back(), rng);
      }
      for (const auto &out : d.outputs) {
        kernelOuts.push_back(allocate(out));
        referenceOuts.push_back(allocate(out));
      }
      std::vector<const void *> inPtrs;
      std::vector<void *> kernelPtrs, referencePtrs;
      for (Buffer &b : ins)
        inPtrs.push_back(b.data());
      for (size_t i = 0; i < kernelOuts.size(); ++i) {
        kernelPtrs.push_back(kernelOuts[i].data());
        referencePtrs.push_back(referenceOuts[i].data());
      }
      std::string kernelError, referenceError;
      try {
        kernel->run({inPtrs.data(), kernelPtrs.data()}, pool3());
      } catch (const RunError &e) {
        kernelError = e.what();
      }
      try {
        reference::evaluate(d, inPtrs.data(), referencePtrs.data());
      } catch (const reference::EvalError &e) {
        referenceError = e.what();
      }
      EXPECT_EQ(kernelError.empty(), referenceError.empty())
          << name << " [" << kernel->describe() << "]: kernel '" << kernelError
          << "', reference '" << referenceError << "'";
      if (!kernelError.empty() || !referenceError.empty())
        continue;
      ++compared;
      comparedOps.insert(name);
      for (size_t i = 0; i < d.outputs.size(); ++i) {
        std::string mismatch = compare(d.outputs[i], kernelOuts[i], referenceOuts[i]);
        EXPECT_TRUE(mismatch.empty())
            << name << " output " << i << " (" << cgc_dtype_name(d.outputs[i].dtype) << ") "
            << mismatch << " [" << kernel->describe() << "]";
      }
    }
  }
  std::printf("random descriptors compared: %d (%zu ops); accepted by the kernels only: %d\n",
              compared, comparedOps.size(), kernelOnly);
  EXPECT_GT(compared, 500);
}

} // namespace
