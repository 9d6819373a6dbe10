//===- linear.cpp - matmul, gemm, convolution, conv_transpose -------------===//
//
// Products and convolutions as their definitions' sums, accumulated in
// double (int64 for integer products), one output element at a time.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

namespace cgc::reference {
namespace {

/// `view` with its last two dimensions swapped (a transposed operand).
View swapLastTwo(View view) {
  const size_t r = view.shape.size();
  std::swap(view.shape[r - 1], view.shape[r - 2]);
  std::swap(view.strides[r - 1], view.strides[r - 2]);
  return view;
}

/// `view` as a matrix with `dims` leading unit dimensions inserted at
/// `at` (numpy's promotion of a 1-D matmul operand).
View insertUnit(View view, size_t at) {
  view.shape.insert(view.shape.begin() + int64_t(at), 1);
  view.strides.insert(view.strides.begin() + int64_t(at), 0);
  return view;
}

std::string checkMatMul(const KernelDesc &desc) {
  if (desc.inputs.size() != 2 || !desc.inputs[0] || !desc.inputs[1] || desc.outputs.size() != 1)
    return "expects two inputs and one output";
  const auto &a = *desc.inputs[0], &b = *desc.inputs[1];
  if (a.shape.empty() || b.shape.empty())
    return "operands must have rank >= 1";
  if ((desc.getBool("transpose_a", false) && a.shape.size() < 2) ||
      (desc.getBool("transpose_b", false) && b.shape.size() < 2))
    return "a transposed operand must have rank >= 2";
  const int64_t ka = desc.getBool("transpose_a", false) ? a.shape[a.shape.size() - 2] : a.shape.back();
  const int64_t kb = b.shape.size() == 1 ? b.shape[0]
                     : desc.getBool("transpose_b", false) ? b.shape.back()
                                                          : b.shape[b.shape.size() - 2];
  if (ka != kb)
    return "inner dimensions differ (" + std::to_string(ka) + " and " + std::to_string(kb) + ")";
  if (a.dtype != b.dtype)
    return "the operands must have one dtype";
  return "";
}

void runMatMul(const KernelDesc &desc, const Operands &ops) {
  View a = ops.input(desc, 0), b = ops.input(desc, 1);
  const View &y = ops.out[0];
  const bool promoteA = a.rank() == 1, promoteB = b.rank() == 1;
  if (promoteA)
    a = insertUnit(a, 0);
  else if (desc.getBool("transpose_a", false))
    a = swapLastTwo(a);
  if (promoteB)
    b = insertUnit(b, 1);
  else if (desc.getBool("transpose_b", false))
    b = swapLastTwo(b);
  // The result with the promoted dimensions kept: [batch..., M, N].
  View full = y;
  if (promoteA)
    full = insertUnit(full, full.shape.size() - (promoteB ? 0 : 1));
  if (promoteB)
    full = insertUnit(full, full.shape.size());
  const int64_t k = a.shape.back();
  const bool integer = isInteger(a.dtype);
  forEachIndex(full.shape, [&](const std::vector<int64_t> &index) {
    std::vector<int64_t> ai = broadcastIndex(index, a.shape), bi = broadcastIndex(index, b.shape);
    const size_t ra = ai.size(), rb = bi.size();
    ai[ra - 2] = index[index.size() - 2]; // row (a's M may broadcast only as a matrix dim)
    bi[rb - 1] = index.back();
    double sum = 0;
    int64_t isum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      ai[ra - 1] = kk;
      bi[rb - 2] = kk;
      if (integer)
        isum += a.getInt(a.offset(ai)) * b.getInt(b.offset(bi));
      else
        sum += a.at(ai) * b.at(bi);
    }
    if (integer && isInteger(full.dtype))
      full.setInt(full.offset(index), isum);
    else
      full.set(full.offset(index), integer ? double(isum) : sum);
  });
}

std::string checkGemm(const KernelDesc &desc) {
  if (desc.inputs.size() < 2 || !desc.inputs[0] || !desc.inputs[1] || desc.outputs.size() != 1)
    return "expects a, b[, c] and one output";
  const auto &a = *desc.inputs[0], &b = *desc.inputs[1];
  const auto &y = desc.outputs[0];
  if (a.shape.size() != 2 || b.shape.size() != 2 || y.shape.size() != 2)
    return "a, b and the result must be matrices";
  const bool ta = desc.getBool("transpose_a", false), tb = desc.getBool("transpose_b", false);
  const int64_t m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  const int64_t kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (ka != kb || m != y.shape[0] || n != y.shape[1])
    return "operand shapes do not multiply to the result's";
  if (desc.inputs.size() > 2 && desc.inputs[2]) {
    const auto &c = *desc.inputs[2];
    if (c.shape.size() > 2)
      return "c must have rank <= 2";
    for (size_t i = 0; i < c.shape.size(); ++i) {
      int64_t target = y.shape[2 - c.shape.size() + i];
      if (c.shape[i] != 1 && c.shape[i] != target)
        return "c does not broadcast to the result";
    }
  }
  return "";
}

void runGemm(const KernelDesc &desc, const Operands &ops) {
  View a = ops.input(desc, 0), b = ops.input(desc, 1);
  if (desc.getBool("transpose_a", false))
    a = swapLastTwo(a);
  if (desc.getBool("transpose_b", false))
    b = swapLastTwo(b);
  const View &y = ops.out[0];
  const double alpha = desc.getFloat("alpha", 1.0), beta = desc.getFloat("beta", 1.0);
  const bool hasC = ops.has(2);
  const int64_t k = a.shape[1];
  const bool integer = isInteger(a.dtype);
  forEachIndex(y.shape, [&](const std::vector<int64_t> &index) {
    double sum = 0;
    int64_t isum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      if (integer)
        isum += a.getInt(a.offset({index[0], kk})) * b.getInt(b.offset({kk, index[1]}));
      else
        sum += a.at({index[0], kk}) * b.at({kk, index[1]});
    }
    double value = alpha * (integer ? double(isum) : sum);
    if (hasC) {
      const View &c = *ops.in[2];
      value += beta * c.at(broadcastIndex(index, c.shape));
    }
    y.set(y.offset(index), value);
  });
}

/// The attributes of a convolution or transposed convolution.
struct ConvGeometry {
  int64_t groups = 1;
  std::vector<int64_t> strides, dilations, padBegin;
};

std::string checkConv(const KernelDesc &desc, bool transpose) {
  if (desc.inputs.size() < 2 || !desc.inputs[0] || !desc.inputs[1] || desc.outputs.size() != 1)
    return "expects input, weight[, bias] and one output";
  const auto &x = *desc.inputs[0], &w = *desc.inputs[1];
  const auto &y = desc.outputs[0];
  if (x.shape.size() < 3 || w.shape.size() != x.shape.size() || y.shape.size() != x.shape.size())
    return "input, weight and result must have one rank >= 3";
  const size_t spatial = x.shape.size() - 2;
  for (const char *name : {"strides", "dilations", "start_padding", "end_padding"})
    if (desc.getInts(name).size() != spatial)
      return std::string(name) + " needs one entry per spatial dimension";
  for (int64_t v : desc.getInts("strides"))
    if (v < 1)
      return "strides must be positive";
  for (int64_t v : desc.getInts("dilations"))
    if (v < 1)
      return "dilations must be positive";
  const int64_t groups = desc.getInt("groups", 1);
  if (groups < 1 || x.shape[1] % groups || (transpose ? w.shape[0] != x.shape[1]
                                                      : w.shape[0] % groups ||
                                                            w.shape[1] * groups != x.shape[1]))
    return "channels do not divide into the groups";
  const int64_t outChannels = transpose ? w.shape[1] * groups : w.shape[0];
  if (y.shape[0] != x.shape[0] || y.shape[1] != outChannels)
    return "the result's batch or channels do not match the operands";
  if (desc.inputs.size() > 2 && desc.inputs[2] &&
      (desc.inputs[2]->shape.size() != 1 || desc.inputs[2]->shape[0] != outChannels))
    return "bias must have one value per output channel";
  if (!isFloat(x.dtype))
    return std::string("only float convolutions, got ") + cgc_dtype_name(x.dtype);
  return "";
}

ConvGeometry geometryOf(const KernelDesc &desc) {
  ConvGeometry g;
  g.groups = desc.getInt("groups", 1);
  g.strides = desc.getInts("strides");
  g.dilations = desc.getInts("dilations");
  g.padBegin = desc.getInts("start_padding");
  return g;
}

/// y[n, m, o] = bias[m] + sum over the group's channels c and taps k of
/// x[n, c, o * stride + k * dilation - start_padding] * w[m, c - c0, k],
/// padding reading zero.
void runConvolution(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0), &w = ops.input(desc, 1), &y = ops.out[0];
  const ConvGeometry g = geometryOf(desc);
  const size_t spatial = x.shape.size() - 2;
  const int64_t inPerGroup = w.shape[1], outPerGroup = w.shape[0] / g.groups;
  std::vector<int64_t> taps(w.shape.begin() + 2, w.shape.end());
  forEachIndex(y.shape, [&](const std::vector<int64_t> &out) {
    const int64_t m = out[1], group = m / outPerGroup;
    double sum = ops.has(2) ? ops.in[2]->at({m}) : 0.0;
    std::vector<int64_t> xi(x.shape.size()), wi(w.shape.size());
    xi[0] = out[0];
    wi[0] = m;
    for (int64_t c = 0; c < inPerGroup; ++c) {
      xi[1] = group * inPerGroup + c;
      wi[1] = c;
      forEachIndex(taps, [&](const std::vector<int64_t> &k) {
        for (size_t d = 0; d < spatial; ++d) {
          int64_t p = out[2 + d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
          if (p < 0 || p >= x.shape[2 + d])
            return;
          xi[2 + d] = p;
          wi[2 + d] = k[d];
        }
        sum += x.at(xi) * w.at(wi);
      });
    }
    y.set(y.offset(out), sum);
  });
}

/// Every input element scattered through the filter: y[n, m, i * stride +
/// k * dilation - start_padding] += x[n, c, i] * w[c, m - m0, k], plus the
/// bias. Accumulated in double, stored once.
void runConvTranspose(const KernelDesc &desc, const Operands &ops) {
  const View &x = ops.input(desc, 0), &w = ops.input(desc, 1), &y = ops.out[0];
  const ConvGeometry g = geometryOf(desc);
  const size_t spatial = x.shape.size() - 2;
  const int64_t inPerGroup = x.shape[1] / g.groups, outPerGroup = w.shape[1];
  std::vector<double> sums(size_t(y.count()), 0.0);
  // Row-major positions in the result.
  auto position = [&](const std::vector<int64_t> &index) {
    int64_t p = 0;
    for (size_t d = 0; d < index.size(); ++d)
      p = p * y.shape[d] + index[d];
    return p;
  };
  std::vector<int64_t> taps(w.shape.begin() + 2, w.shape.end());
  forEachIndex(x.shape, [&](const std::vector<int64_t> &in) {
    const int64_t c = in[1], group = c / inPerGroup;
    const double value = x.at(in);
    std::vector<int64_t> yi(y.shape.size()), wi(w.shape.size());
    yi[0] = in[0];
    wi[0] = c;
    for (int64_t m = 0; m < outPerGroup; ++m) {
      yi[1] = group * outPerGroup + m;
      wi[1] = m;
      forEachIndex(taps, [&](const std::vector<int64_t> &k) {
        for (size_t d = 0; d < spatial; ++d) {
          int64_t p = in[2 + d] * g.strides[d] + k[d] * g.dilations[d] - g.padBegin[d];
          if (p < 0 || p >= y.shape[2 + d])
            return;
          yi[2 + d] = p;
          wi[2 + d] = k[d];
        }
        sums[size_t(position(yi))] += value * w.at(wi);
      });
    }
  });
  forEachIndex(y.shape, [&](const std::vector<int64_t> &out) {
    double bias = ops.has(2) ? ops.in[2]->at({out[1]}) : 0.0;
    y.set(y.offset(out), sums[size_t(position(out))] + bias);
  });
}

} // namespace

void addLinearOps(std::vector<OpDef> &ops) {
  ops.push_back({OpKind::MatMul, checkMatMul, runMatMul});
  ops.push_back({OpKind::Gemm, checkGemm, runGemm});
  ops.push_back({OpKind::Convolution, [](const KernelDesc &d) { return checkConv(d, false); },
                 runConvolution});
  ops.push_back({OpKind::ConvTranspose, [](const KernelDesc &d) { return checkConv(d, true); },
                 runConvTranspose});
}

} // namespace cgc::reference
