//===- gemm_kernels.cpp - The gemm driver's kernels -----------------------===//
//
// Plain loops: the driver exists to show a third-party driver plugging into
// cgc through the DDI alone, not to be fast. Operands may be strided views
// (a partition's cgc.view_memref), so every access goes through element
// strides.
//
//===----------------------------------------------------------------------===//

#include "gemm_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

using cgc::KernelDesc;
using cgc::KernelOperand;
using cgc::KernelProgram;

namespace gemm {
namespace {

struct View {
  float *data = nullptr;
  std::vector<int64_t> shape, strides;
  size_t rank() const { return shape.size(); }
};

/// Strides of `v` read as an operand of `rank` broadcast to `shape`
/// (numpy: leading dimensions added, dimensions of 1 repeated).
std::vector<int64_t> broadcastStrides(const View &v, const std::vector<int64_t> &shape) {
  std::vector<int64_t> out(shape.size(), 0);
  size_t lead = shape.size() - v.rank();
  for (size_t i = 0; i < v.rank(); ++i)
    out[lead + i] = v.shape[i] == 1 && shape[lead + i] != 1 ? 0 : v.strides[i];
  return out;
}

template <class F>
void forEach(const std::vector<int64_t> &shape, size_t dim, float *o, const float *a,
             const float *b, const std::vector<int64_t> &so, const std::vector<int64_t> &sa,
             const std::vector<int64_t> &sb, F &&f) {
  if (dim == shape.size()) {
    *o = f(*a, b ? *b : 0.f);
    return;
  }
  for (int64_t i = 0; i < shape[dim]; ++i)
    forEach(shape, dim + 1, o + i * so[dim], a + i * sa[dim], b ? b + i * sb[dim] : nullptr, so,
            sa, sb, f);
}

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

/// C[b, i, j] = sum_k A[b, i, k] * B[b, k, j] over the last two dimensions,
/// batch dimensions broadcast; transposes swap an operand's last two.
void matmul(View a, View b, const View &c, bool ta, bool tb) {
  if (ta) {
    std::swap(a.shape[a.rank() - 1], a.shape[a.rank() - 2]);
    std::swap(a.strides[a.rank() - 1], a.strides[a.rank() - 2]);
  }
  if (tb) {
    std::swap(b.shape[b.rank() - 1], b.shape[b.rank() - 2]);
    std::swap(b.strides[b.rank() - 1], b.strides[b.rank() - 2]);
  }
  size_t r = c.rank();
  int64_t M = c.shape[r - 2], N = c.shape[r - 1], K = a.shape[a.rank() - 1];
  std::vector<int64_t> batch(c.shape.begin(), c.shape.end() - 2);
  // Batch strides of A and B broadcast to C's batch shape.
  View ab = a, bb = b;
  ab.shape.resize(a.rank() - 2);
  ab.strides.resize(a.rank() - 2);
  bb.shape.resize(b.rank() - 2);
  bb.strides.resize(b.rank() - 2);
  std::vector<int64_t> sa = broadcastStrides(ab, batch), sb = broadcastStrides(bb, batch);
  int64_t batches = 1;
  for (int64_t d : batch)
    batches *= d;
  for (int64_t n = 0; n < batches; ++n) {
    int64_t rest = n, oa = 0, ob = 0, oc = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      int64_t i = rest % batch[d];
      rest /= batch[d];
      oa += i * sa[d];
      ob += i * sb[d];
      oc += i * c.strides[d];
    }
    const float *A = a.data + oa, *B = b.data + ob;
    float *C = c.data + oc;
    int64_t am = a.strides[a.rank() - 2], ak = a.strides[a.rank() - 1];
    int64_t bk = b.strides[b.rank() - 2], bn = b.strides[b.rank() - 1];
    int64_t cm = c.strides[r - 2], cn = c.strides[r - 1];
    for (int64_t i = 0; i < M; ++i) {
      float *row = C + i * cm;
      for (int64_t j = 0; j < N; ++j)
        row[j * cn] = 0.f;
      for (int64_t k = 0; k < K; ++k) {
        float x = A[i * am + k * ak];
        const float *brow = B + k * bk;
        for (int64_t j = 0; j < N; ++j)
          row[j * cn] += x * brow[j * bn];
      }
    }
  }
}

bool allFloat32(const KernelDesc &k, std::string &why) {
  auto check = [&](const KernelOperand &op, const char *what, size_t i) {
    if (op.dtype == CGC_DTYPE_FLOAT32)
      return true;
    const char *name = cgc_dtype_name(op.dtype);
    why = k.op + ": " + what + " " + std::to_string(i) + " is " + (name ? name : "?") +
          "; this driver runs float32 only";
    return false;
  };
  for (size_t i = 0; i < k.inputs.size(); ++i)
    if (k.inputs[i] && !check(*k.inputs[i], "operand", i))
      return false;
  for (size_t i = 0; i < k.outputs.size(); ++i)
    if (!check(k.outputs[i], "result", i))
      return false;
  return true;
}

} // namespace

bool supports(const KernelDesc &k, std::string &why) {
  static const char *const kOps[] = {"cgc_op.matmul", "cgc_op.gemm", "cgc_op.add",
                                     "cgc_op.relu",   "cgc_op.sigmoid", "cgc_op.tanh"};
  if (std::find_if(std::begin(kOps), std::end(kOps), [&](const char *n) { return k.op == n; }) ==
      std::end(kOps)) {
    why = k.op + " is not a layer this driver runs (it runs matmul, gemm, add, relu, "
                 "sigmoid and tanh)";
    return false;
  }
  if (k.outputs.size() != 1 || k.inputs.empty() || !k.inputs[0]) {
    why = k.op + ": unexpected operands";
    return false;
  }
  if (!allFloat32(k, why))
    return false;
  size_t out = k.outputs[0].shape.size();
  if (k.op == "cgc_op.matmul") {
    if (k.inputs.size() != 2 || !k.inputs[1] || k.inputs[0]->shape.size() < 2 ||
        k.inputs[1]->shape.size() < 2 || out < 2) {
      why = "cgc_op.matmul: this driver needs operands of rank 2 or more (no 1-D operands)";
      return false;
    }
  } else if (k.op == "cgc_op.gemm") {
    if (k.inputs.size() != 3 || !k.inputs[1] || k.inputs[0]->shape.size() != 2 ||
        k.inputs[1]->shape.size() != 2 || out != 2) {
      why = "cgc_op.gemm: this driver needs 2-D operands";
      return false;
    }
  } else if (k.op == "cgc_op.add") {
    if (k.inputs.size() != 2 || !k.inputs[1] || k.inputs[0]->shape.size() > out ||
        k.inputs[1]->shape.size() > out) {
      why = "cgc_op.add: unexpected operands";
      return false;
    }
  }
  return true;
}

uint64_t temporaryBytes(const KernelProgram &program, std::vector<uint64_t> &offsets) {
  uint64_t bytes = 0;
  offsets.clear();
  for (const KernelProgram::Temporary &t : program.temporaries) {
    uint64_t align = std::max<uint64_t>(t.alignment, 1);
    bytes = (bytes + align - 1) / align * align;
    offsets.push_back(bytes);
    bytes += t.bytes;
  }
  return bytes;
}

void run(const KernelProgram &program, const std::vector<uint8_t *> &bindings,
         uint8_t *temporaries) {
  std::vector<uint64_t> offsets;
  temporaryBytes(program, offsets);
  auto view = [&](const KernelOperand &op) {
    View v;
    uint8_t *base = op.storage == KernelOperand::Storage::Binding
                        ? bindings.at(op.index)
                        : temporaries + offsets.at(op.index);
    v.data = reinterpret_cast<float *>(base + op.offset);
    v.shape = op.shape;
    v.strides = op.effectiveStrides();
    return v;
  };
  for (const KernelDesc &k : program.kernels) {
    View o = view(k.outputs[0]);
    View a = view(*k.inputs[0]);
    std::vector<int64_t> so = o.strides, sa = broadcastStrides(a, o.shape);
    if (k.op == "cgc_op.matmul") {
      matmul(a, view(*k.inputs[1]), o, k.getBool("transpose_a", false),
             k.getBool("transpose_b", false));
    } else if (k.op == "cgc_op.gemm") {
      matmul(a, view(*k.inputs[1]), o, k.getBool("transpose_a", false),
             k.getBool("transpose_b", false));
      float alpha = float(k.getFloat("alpha", 1.0)), beta = float(k.getFloat("beta", 1.0));
      if (k.inputs[2]) {
        View c = view(*k.inputs[2]);
        forEach(o.shape, 0, o.data, o.data, c.data, so, so, broadcastStrides(c, o.shape),
                [&](float x, float y) { return alpha * x + beta * y; });
      } else if (alpha != 1.f) {
        forEach(o.shape, 0, o.data, o.data, nullptr, so, so, so,
                [&](float x, float) { return alpha * x; });
      }
    } else if (k.op == "cgc_op.add") {
      View b = view(*k.inputs[1]);
      forEach(o.shape, 0, o.data, a.data, b.data, so, sa, broadcastStrides(b, o.shape),
              [](float x, float y) { return x + y; });
    } else if (k.op == "cgc_op.relu") {
      forEach(o.shape, 0, o.data, a.data, nullptr, so, sa, sa,
              [](float x, float) { return x > 0.f ? x : 0.f; });
    } else if (k.op == "cgc_op.sigmoid") {
      forEach(o.shape, 0, o.data, a.data, nullptr, so, sa, sa,
              [](float x, float) { return sigmoid(x); });
    } else if (k.op == "cgc_op.tanh") {
      forEach(o.shape, 0, o.data, a.data, nullptr, so, sa, sa,
              [](float x, float) { return std::tanh(x); });
    } else {
      throw std::runtime_error("gemm driver: no kernel for " + k.op);
    }
  }
}

} // namespace gemm
