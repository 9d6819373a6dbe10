//===- pool.cpp - max_pool, avg_pool, lp_pool and the global pools --------===//
//
// Each output element reduces its window of the N x C x D1 x ... x Dn
// input: position o * stride + k * dilation - start_padding along each
// spatial dimension, for every tap k of kernel_shape. Positions outside the
// data are padding: max ignores them, lp_pool reads zero, avg_pool counts
// them in its divisor with count_include_pad only while they lie inside the
// explicit padding (a ceil_mode window running past the end padding does
// not count the overhang), as ONNX's reference implementation does.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

#include <cmath>
#include <limits>

namespace cgc::reference {
namespace {

enum class Pool { Max, Avg, Lp };

/// The running maximum after `v`; a NaN, once seen, stays.
double maxOf(double best, double v, bool first) {
  if (std::isnan(v) || std::isnan(best))
    return std::numeric_limits<double>::quiet_NaN();
  return first || v > best ? v : best;
}

std::string checkPool(const KernelDesc &desc) {
  if (desc.inputs.size() != 1 || !desc.inputs[0] || desc.outputs.empty() ||
      desc.outputs.size() > 1)
    return "expects one input and one output";
  const auto &x = *desc.inputs[0];
  const auto &y = desc.outputs[0];
  if (x.shape.size() < 3 || y.shape.size() != x.shape.size() || y.shape[0] != x.shape[0] ||
      y.shape[1] != x.shape[1])
    return "input and result must be N x C x spatial... with one N and C";
  const size_t spatial = x.shape.size() - 2;
  for (const char *name : {"kernel_shape", "strides", "dilations", "start_padding", "end_padding"})
    if (desc.getInts(name).size() != spatial)
      return std::string(name) + " needs one entry per spatial dimension";
  for (const char *name : {"kernel_shape", "strides", "dilations"})
    for (int64_t v : desc.getInts(name))
      if (v < 1)
        return std::string(name) + " must be positive";
  if (desc.kind() == OpKind::LpPool && desc.getInt("p", 2) < 1)
    return "p must be positive";
  if (desc.kind() == OpKind::MaxPool && !isFloat(x.dtype) && !isInteger(x.dtype))
    return std::string("no max pooling of ") + cgc_dtype_name(x.dtype);
  if (desc.kind() != OpKind::MaxPool && !isFloat(x.dtype))
    return std::string("only float operands, got ") + cgc_dtype_name(x.dtype);
  return "";
}

void runPool(const KernelDesc &desc, const Operands &ops, Pool kind) {
  const View &x = ops.input(desc, 0), &y = ops.out[0];
  const std::vector<int64_t> kernel = desc.getInts("kernel_shape"),
                             strides = desc.getInts("strides"),
                             dilations = desc.getInts("dilations"),
                             padBegin = desc.getInts("start_padding"),
                             padEnd = desc.getInts("end_padding");
  const bool includePad = desc.getBool("count_include_pad", false);
  const double p = double(desc.getInt("p", 2));
  const size_t spatial = kernel.size();
  forEachIndex(y.shape, [&](const std::vector<int64_t> &out) {
    std::vector<int64_t> xi = out;
    double best = -std::numeric_limits<double>::infinity();
    bool any = false;
    double sum = 0;
    int64_t counted = 0;
    forEachIndex(kernel, [&](const std::vector<int64_t> &k) {
      bool inData = true, inPadding = true;
      for (size_t d = 0; d < spatial; ++d) {
        int64_t pos = out[2 + d] * strides[d] + k[d] * dilations[d] - padBegin[d];
        inData = inData && pos >= 0 && pos < x.shape[2 + d];
        inPadding = inPadding && pos >= -padBegin[d] && pos < x.shape[2 + d] + padEnd[d];
        xi[2 + d] = pos;
      }
      if (kind == Pool::Avg && (inData || (includePad && inPadding)))
        ++counted;
      if (!inData)
        return;
      const double v = x.at(xi);
      if (kind == Pool::Max) {
        best = maxOf(best, v, !any);
        any = true;
      } else if (kind == Pool::Avg) {
        sum += v;
      } else {
        sum += std::pow(std::fabs(v), p);
      }
    });
    double value;
    if (kind == Pool::Max)
      value = any ? best : -std::numeric_limits<double>::infinity();
    else if (kind == Pool::Avg)
      value = counted ? sum / double(counted) : std::numeric_limits<double>::quiet_NaN();
    else
      value = std::pow(sum, 1.0 / p);
    y.set(y.offset(out), value);
  });
}

std::string checkGlobal(const KernelDesc &desc) {
  if (desc.inputs.size() != 1 || !desc.inputs[0] || desc.outputs.size() != 1)
    return "expects one input and one output";
  const auto &x = *desc.inputs[0];
  const auto &y = desc.outputs[0];
  if (x.shape.size() < 2 || y.shape.size() != x.shape.size() || y.shape[0] != x.shape[0] ||
      y.shape[1] != x.shape[1])
    return "input and result must be N x C x spatial... with one N and C";
  for (size_t d = 2; d < y.shape.size(); ++d)
    if (y.shape[d] != 1)
      return "the result's spatial dimensions must be 1";
  if (!isFloat(x.dtype))
    return std::string("only float operands, got ") + cgc_dtype_name(x.dtype);
  if (desc.kind() == OpKind::GlobalLpPool && desc.getInt("p", 2) < 1)
    return "p must be positive";
  return "";
}

void runGlobal(const KernelDesc &desc, const Operands &ops, Pool kind) {
  const View &x = ops.input(desc, 0), &y = ops.out[0];
  const std::vector<int64_t> window(x.shape.begin() + 2, x.shape.end());
  const double p = double(desc.getInt("p", 2));
  forEachIndex(y.shape, [&](const std::vector<int64_t> &out) {
    std::vector<int64_t> xi = out;
    double best = -std::numeric_limits<double>::infinity(), sum = 0;
    int64_t n = 0;
    forEachIndex(window, [&](const std::vector<int64_t> &w) {
      std::copy(w.begin(), w.end(), xi.begin() + 2);
      const double v = x.at(xi);
      if (kind == Pool::Max)
        best = maxOf(best, v, n == 0);
      else if (kind == Pool::Avg)
        sum += v;
      else
        sum += std::pow(std::fabs(v), p);
      ++n;
    });
    double value = kind == Pool::Max ? best
                   : kind == Pool::Avg ? (n ? sum / double(n) : std::numeric_limits<double>::quiet_NaN())
                                       : std::pow(sum, 1.0 / p);
    y.set(y.offset(out), value);
  });
}

} // namespace

void addPoolingOps(std::vector<OpDef> &ops) {
  ops.push_back({OpKind::MaxPool, checkPool,
                 [](const KernelDesc &d, const Operands &o) { runPool(d, o, Pool::Max); }});
  ops.push_back({OpKind::AvgPool, checkPool,
                 [](const KernelDesc &d, const Operands &o) { runPool(d, o, Pool::Avg); }});
  ops.push_back({OpKind::LpPool, checkPool,
                 [](const KernelDesc &d, const Operands &o) { runPool(d, o, Pool::Lp); }});
  ops.push_back({OpKind::GlobalMaxPool, checkGlobal,
                 [](const KernelDesc &d, const Operands &o) { runGlobal(d, o, Pool::Max); }});
  ops.push_back({OpKind::GlobalAvgPool, checkGlobal,
                 [](const KernelDesc &d, const Operands &o) { runGlobal(d, o, Pool::Avg); }});
  ops.push_back({OpKind::GlobalLpPool, checkGlobal,
                 [](const KernelDesc &d, const Operands &o) { runGlobal(d, o, Pool::Lp); }});
}

} // namespace cgc::reference
