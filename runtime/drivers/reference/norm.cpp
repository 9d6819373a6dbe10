//===- norm.cpp - Batch, instance, layer and local response normalization -===//
//
// In double throughout: each group of elements that shares a mean and
// variance (an instance's channel, a layer's trailing dimensions) is read
// whole, its mean and then its (population) variance computed in two passes,
// and the normalized values stored. Parameters have the input's dtype.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

#include <algorithm>
#include <cmath>

namespace cgc::reference {
namespace {

const char *dtypeName(cgc_dtype_t dtype) {
  const char *name = cgc_dtype_name(dtype);
  return name ? name : "invalid";
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// "" when `desc` has `inputs` inputs (the first `required` present) and
/// one output of the input's dtype and shape, the input a float tensor of
/// rank at least `minRank`.
std::string checkOperands(const KernelDesc &desc, size_t required, size_t inputs,
                          size_t minRank) {
  if (desc.inputs.size() < required || desc.inputs.size() > inputs)
    return "expects " + std::to_string(required) +
           (required == inputs ? "" : " to " + std::to_string(inputs)) + " inputs, got " +
           std::to_string(desc.inputs.size());
  for (size_t i = 0; i < required; ++i)
    if (!desc.inputs[i])
      return "input " + std::to_string(i) + " is absent";
  if (desc.outputs.size() != 1)
    return "expects 1 output, got " + std::to_string(desc.outputs.size());
  const KernelOperand &in = *desc.inputs[0], &out = desc.outputs[0];
  if (!isFloat(in.dtype))
    return std::string("input dtype ") + dtypeName(in.dtype) + " is not a float type";
  if (in.shape.size() < minRank)
    return "input must have rank >= " + std::to_string(minRank) + ", got " +
           std::to_string(in.shape.size());
  for (size_t i = 1; i < desc.inputs.size(); ++i)
    if (desc.inputs[i] && desc.inputs[i]->dtype != in.dtype)
      return "input " + std::to_string(i) + " has dtype " + dtypeName(desc.inputs[i]->dtype) +
             ", not the input's " + dtypeName(in.dtype);
  if (out.dtype != in.dtype)
    return std::string("output has dtype ") + dtypeName(out.dtype) + ", not the input's " +
           dtypeName(in.dtype);
  if (out.shape != in.shape)
    return "output has shape " + shapeStr(out.shape) + ", not the input's " +
           shapeStr(in.shape);
  return "";
}

/// "" when inputs [first, last) are per-channel vectors: shape [C].
std::string checkPerChannel(const KernelDesc &desc, size_t first, size_t last) {
  int64_t channels = desc.inputs[0]->shape[1];
  for (size_t i = first; i < last; ++i)
    if (desc.inputs[i]->shape != std::vector<int64_t>{channels})
      return "input " + std::to_string(i) + " has shape " + shapeStr(desc.inputs[i]->shape) +
             ", expected [" + std::to_string(channels) + "] (one per channel)";
  return "";
}

/// Element `c` of a rank-1 operand.
double element(const View &v, int64_t c) { return v.get(c * v.strides[0]); }

/// Mean and population variance of `v` (0 and 0 when empty).
void meanVariance(const std::vector<double> &v, double &mean, double &variance) {
  double sum = 0;
  for (double x : v)
    sum += x;
  mean = v.empty() ? 0 : sum / double(v.size());
  double squares = 0;
  for (double x : v)
    squares += (x - mean) * (x - mean);
  variance = v.empty() ? 0 : squares / double(v.size());
}

//===----------------------------------------------------------------------===//
// batch_norm (ONNX BatchNormalization, inference: given mean and variance)
//===----------------------------------------------------------------------===//

std::string checkBatchNorm(const KernelDesc &desc) {
  if (std::string why = checkOperands(desc, 5, 5, 2); !why.empty())
    return why;
  return checkPerChannel(desc, 1, 5);
}

/// scale * (x - mean) / sqrt(variance + epsilon) + bias, per channel
/// (dimension 1).
void runBatchNorm(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0), &scale = ops.input(desc, 1), &bias = ops.input(desc, 2),
             &mean = ops.input(desc, 3), &var = ops.input(desc, 4);
  const View &y = ops.out[0];
  const double epsilon = desc.getFloat("epsilon", 1e-5);
  forEachIndex(x.shape, [&](const std::vector<int64_t> &index) {
    int64_t c = index[1];
    double v = x.at(index);
    y.set(y.offset(index), element(scale, c) * (v - element(mean, c)) /
                                   std::sqrt(element(var, c) + epsilon) +
                               element(bias, c));
  });
}

//===----------------------------------------------------------------------===//
// instance_norm (ONNX InstanceNormalization)
//===----------------------------------------------------------------------===//

std::string checkInstanceNorm(const KernelDesc &desc) {
  if (std::string why = checkOperands(desc, 3, 3, 3); !why.empty())
    return why;
  return checkPerChannel(desc, 1, 3);
}

/// Each (n, c) slice normalized over its spatial positions, then
/// scale[c] * normalized + bias[c].
void runInstanceNorm(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0), &scale = ops.input(desc, 1), &bias = ops.input(desc, 2);
  const View &y = ops.out[0];
  const double epsilon = desc.getFloat("epsilon", 1e-5);
  const std::vector<int64_t> slices = {x.shape[0], x.shape[1]};
  const std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  forEachIndex(slices, [&](const std::vector<int64_t> &nc) {
    std::vector<int64_t> index = nc;
    index.resize(x.shape.size());
    auto each = [&](const std::function<void()> &f) {
      forEachIndex(spatial, [&](const std::vector<int64_t> &s) {
        std::copy(s.begin(), s.end(), index.begin() + 2);
        f();
      });
    };
    std::vector<double> v;
    each([&] { v.push_back(x.at(index)); });
    double mean, variance;
    meanVariance(v, mean, variance);
    const double inv = 1 / std::sqrt(variance + epsilon);
    const double s = element(scale, nc[1]), b = element(bias, nc[1]);
    size_t i = 0;
    each([&] { y.set(y.offset(index), s * (v[i++] - mean) * inv + b); });
  });
}

//===----------------------------------------------------------------------===//
// layer_norm (ONNX LayerNormalization's first output)
//===----------------------------------------------------------------------===//

std::string checkLayerNorm(const KernelDesc &desc) {
  if (std::string why = checkOperands(desc, 2, 3, 1); !why.empty())
    return why;
  const std::vector<int64_t> &shape = desc.inputs[0]->shape;
  const int64_t rank = int64_t(shape.size());
  const AttrValue *a = desc.attr("axis");
  if (!a || a->kind != AttrValue::Kind::Int)
    return "attribute 'axis' must be an integer";
  if (a->i < -rank || a->i >= rank)
    return "axis " + std::to_string(a->i) + " is out of range for rank " + std::to_string(rank);
  const size_t axis = size_t(a->i < 0 ? a->i + rank : a->i);
  const std::vector<int64_t> normalized(shape.begin() + ptrdiff_t(axis), shape.end());
  for (size_t i = 1; i < desc.inputs.size(); ++i) {
    if (!desc.inputs[i])
      continue;
    const std::vector<int64_t> &p = desc.inputs[i]->shape;
    bool ok = p.size() <= normalized.size();
    for (size_t d = 0; ok && d < p.size(); ++d)
      ok = p[d] == 1 || p[d] == normalized[normalized.size() - p.size() + d];
    if (!ok)
      return "input " + std::to_string(i) + " shape " + shapeStr(p) +
             " does not broadcast to the normalized shape " + shapeStr(normalized);
  }
  return "";
}

/// Normalizes over dimensions [axis, rank): (x - mean) / sqrt(variance +
/// epsilon) * scale + bias, scale and the optional bias broadcast to the
/// normalized shape.
void runLayerNorm(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0), &scale = ops.input(desc, 1);
  const View *bias = ops.has(2) ? &*ops.in[2] : nullptr;
  const View &y = ops.out[0];
  const int64_t axis = normalizeAxis(desc.op, desc.getInt("axis", 0), x.rank());
  const double epsilon = desc.getFloat("epsilon", 1e-5);
  const std::vector<int64_t> outer(x.shape.begin(), x.shape.begin() + axis);
  const std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  forEachIndex(outer, [&](const std::vector<int64_t> &o) {
    std::vector<int64_t> index = o;
    index.resize(x.shape.size());
    auto each = [&](const std::function<void(const std::vector<int64_t> &)> &f) {
      forEachIndex(normalized, [&](const std::vector<int64_t> &n) {
        std::copy(n.begin(), n.end(), index.begin() + axis);
        f(n);
      });
    };
    std::vector<double> v;
    each([&](const std::vector<int64_t> &) { v.push_back(x.at(index)); });
    double mean, variance;
    meanVariance(v, mean, variance);
    const double inv = 1 / std::sqrt(variance + epsilon);
    size_t i = 0;
    each([&](const std::vector<int64_t> &n) {
      double r = (v[i++] - mean) * inv * scale.at(broadcastIndex(n, scale.shape));
      if (bias)
        r += bias->at(broadcastIndex(n, bias->shape));
      y.set(y.offset(index), r);
    });
  });
}

//===----------------------------------------------------------------------===//
// lrn (ONNX LRN)
//===----------------------------------------------------------------------===//

std::string checkLrn(const KernelDesc &desc) {
  if (std::string why = checkOperands(desc, 1, 1, 3); !why.empty())
    return why;
  const AttrValue *a = desc.attr("size");
  if (!a || a->kind != AttrValue::Kind::Int)
    return "attribute 'size' must be an integer";
  if (a->i < 1)
    return "size must be >= 1, got " + std::to_string(a->i);
  return "";
}

/// x / (bias + alpha / size * sum(x^2))^beta, the sum over channels
/// [c - floor((size - 1) / 2), c + ceil((size - 1) / 2)] inside [0, C).
void runLrn(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0);
  const View &y = ops.out[0];
  const int64_t size = desc.getInt("size", 1);
  const double alpha = desc.getFloat("alpha", 0.0001), beta = desc.getFloat("beta", 0.75),
               bias = desc.getFloat("bias", 1.0);
  const int64_t channels = x.shape[1], before = (size - 1) / 2, after = size - 1 - before;
  forEachIndex(x.shape, [&](const std::vector<int64_t> &index) {
    const int64_t c = index[1];
    std::vector<int64_t> neighbour = index;
    double squares = 0;
    for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(channels - 1, c + after);
         ++k) {
      neighbour[1] = k;
      double v = x.at(neighbour);
      squares += v * v;
    }
    y.set(y.offset(index), x.at(index) / std::pow(bias + alpha / double(size) * squares, beta));
  });
}

} // namespace

void addNormalizationOps(std::vector<OpDef> &ops) {
  ops.push_back({OpKind::BatchNorm, checkBatchNorm, runBatchNorm});
  ops.push_back({OpKind::InstanceNorm, checkInstanceNorm, runInstanceNorm});
  ops.push_back({OpKind::LayerNorm, checkLayerNorm, runLayerNorm});
  ops.push_back({OpKind::LRN, checkLrn, runLrn});
}

} // namespace cgc::reference
