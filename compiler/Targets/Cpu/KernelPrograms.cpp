//===- KernelPrograms.cpp - The cpu target's kernel programs --------===//

#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "planning/kernel_program_queries.h"

#if CGC_CPU_HAVE_KERNELS
#include "program.h"
#endif

#include <algorithm>
#include <functional>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

namespace cgc::cpu_target {

using namespace cgc::planning;

namespace {

//===----------------------------------------------------------------------===//
// Internal bind points as temporaries
//===----------------------------------------------------------------------===//

/// Every access to a binding marked `internal` (a partition argument only
/// this partition reads or writes: cgc-build-program marks the results of
/// its subgraphs that no other partition and no model output uses) goes to a
/// new temporary of the same size instead. The binding stays, so the bind
/// points keep their number and order, but no kernel touches it any more:
/// the value lives in the driver's per-run memory for the steps that use it
/// (CompiledProgram plans it by lifetime) instead of in the caller's scratch
/// for the whole dispatch, and the rewrites and fusions below that need a
/// program-private intermediate apply to it.
unsigned internalBindingsToTemporaries(KernelProgram &program) {
  std::vector<int64_t> temporaryOf(program.bindings.size(), -1);
  unsigned moved = 0;
  auto visit = [&](KernelOperand &o) {
    if (o.storage != KernelOperand::Storage::Binding || o.index >= program.bindings.size() ||
        !program.bindings[o.index].internal)
      return;
    int64_t &t = temporaryOf[o.index];
    if (t < 0) {
      KernelProgram::Temporary temporary;
      temporary.bytes = program.bindings[o.index].bytes;
      temporary.alignment = 64;
      temporary.binding = int64_t(o.index);
      t = int64_t(program.temporaries.size());
      program.temporaries.push_back(temporary);
      ++moved;
    }
    o.storage = KernelOperand::Storage::Temporary;
    o.index = uint32_t(t);
  };
  for (KernelDesc &k : program.kernels) {
    for (auto &in : k.inputs)
      if (in)
        visit(*in);
    for (KernelOperand &out : k.outputs)
      visit(out);
  }
  return moved;
}

//===----------------------------------------------------------------------===//
// Commutative operands
//===----------------------------------------------------------------------===//

unsigned swapCommutativeOperands(KernelProgram &program) {
  unsigned swapped = 0;
  for (size_t j = 1; j < program.kernels.size(); ++j) {
    KernelDesc &k = program.kernels[j];
    // Exactly commutative, NaNs included (max/min are not in every
    // implementation).
    if ((k.kind() != OpKind::Add && k.kind() != OpKind::Mul) ||
        k.inputs.size() != 2 || !k.inputs[0] || !k.inputs[1] ||
        k.outputs.size() != 1)
      continue;
    const KernelDesc &previous = program.kernels[j - 1];
    if (previous.outputs.size() != 1)
      continue;
    const KernelOperand &running = previous.outputs[0];
    if (running.storage != KernelOperand::Storage::Temporary ||
        !(*k.inputs[1] == running) || *k.inputs[0] == running ||
        running.shape != k.outputs[0].shape)
      continue;
    std::swap(k.inputs[0], k.inputs[1]);
    ++swapped;
  }
  return swapped;
}

//===----------------------------------------------------------------------===//
// GELU written with erf
//===----------------------------------------------------------------------===//

/// `k`'s two inputs as (running, other) when one of them is `running`.
bool splitBinary(const KernelDesc &k, OpKind op, const KernelOperand &running,
                 const KernelOperand *&other, bool commutative) {
  if (k.kind() != op || k.inputs.size() != 2 || !k.inputs[0] || !k.inputs[1] ||
      k.outputs.size() != 1)
    return false;
  if (*k.inputs[0] == running) {
    other = &*k.inputs[1];
    return true;
  }
  if (commutative && *k.inputs[1] == running) {
    other = &*k.inputs[0];
    return true;
  }
  return false;
}

bool isScalar(const KernelOperand &o, cgc_dtype_t dtype) {
  int64_t n = 1;
  for (int64_t d : o.shape)
    n *= d;
  return n == 1 && o.dtype == dtype;
}

/// y = mul(mul(x, add(erf(div(x, k1)), k2)), k3) (PyTorch's GELU export;
/// also mul(x, k1) for the first, either operand order where commutative)
/// on float32, with one-element k1, k2, k3 and every intermediate a
/// temporary only the next layer reads, becomes one `cgc_op.erf_gelu(x, k1,
/// k2, k3)` at the first layer's place (runtime/drivers/cpu/kernels/
/// gelu.cpp: the same arithmetic in one pass). Nothing in between may write
/// x or the constants, or touch y.
unsigned foldErfGelu(KernelProgram &program) {
  unsigned folded = 0;
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const KernelDesc &first = program.kernels[i];
    bool multiply = first.kind() == OpKind::Mul;
    if ((first.kind() != OpKind::Div && !multiply) || first.inputs.size() != 2 ||
        !first.inputs[0] || !first.inputs[1] || first.outputs.size() != 1)
      continue;
    const KernelOperand x = *first.inputs[0], k1 = *first.inputs[1];
    const KernelOperand d = first.outputs[0];
    const cgc_dtype_t f32 = CGC_DTYPE_FLOAT32;
    if (x.dtype != f32 || !isScalar(k1, f32) || d.shape != x.shape || d.dtype != f32 ||
        d.storage != KernelOperand::Storage::Temporary || overlaps(d, x))
      continue;
    // Each intermediate: exactly one later reader, the expected layer.
    auto only = [&](const KernelOperand &v, size_t producer, size_t &reader) {
      if (v.storage != KernelOperand::Storage::Temporary)
        return false;
      std::vector<size_t> r = readersOf(program, v, 0);
      if (r.size() != 1 || r[0] <= producer)
        return false;
      for (size_t k = 0; k < program.kernels.size(); ++k)
        if (k != producer)
          for (const KernelOperand &out : program.kernels[k].outputs)
            if (overlaps(out, v))
              return false;
      reader = r[0];
      return true;
    };
    size_t je, ja, jp, jy;
    if (!only(d, i, je))
      continue;
    const KernelDesc &erf = program.kernels[je];
    if (erf.kind() != OpKind::Erf || erf.inputs.size() != 1 || !erf.inputs[0] ||
        !(*erf.inputs[0] == d) || erf.outputs.size() != 1)
      continue;
    const KernelOperand e = erf.outputs[0];
    if (e.shape != x.shape || e.dtype != f32 || !only(e, je, ja))
      continue;
    const KernelOperand *k2 = nullptr, *xp = nullptr, *k3 = nullptr;
    const KernelDesc &add = program.kernels[ja];
    if (!splitBinary(add, OpKind::Add, e, k2, true) || !isScalar(*k2, f32))
      continue;
    const KernelOperand a = add.outputs[0];
    if (a.shape != x.shape || a.dtype != f32 || !only(a, ja, jp))
      continue;
    const KernelDesc &mulX = program.kernels[jp];
    if (!splitBinary(mulX, OpKind::Mul, a, xp, true) || !(*xp == x))
      continue;
    const KernelOperand p = mulX.outputs[0];
    if (p.shape != x.shape || p.dtype != f32 || !only(p, jp, jy))
      continue;
    const KernelDesc &last = program.kernels[jy];
    if (!splitBinary(last, OpKind::Mul, p, k3, true) || !isScalar(*k3, f32))
      continue;
    const KernelOperand y = last.outputs[0];
    if (y.shape != x.shape || y.dtype != f32 || overlaps(y, x) || overlaps(y, k1) ||
        overlaps(y, *k2) || overlaps(y, *k3))
      continue;
    // Computing y at the first layer's place: nothing up to the last layer
    // (other than the chain itself) may write x or the constants or touch y.
    bool clear = true;
    for (size_t k = i + 1; k < jy && clear; ++k) {
      if (k == je || k == ja || k == jp)
        continue;
      const KernelDesc &other = program.kernels[k];
      for (const KernelOperand &out : other.outputs)
        clear = clear && !overlaps(out, x) && !overlaps(out, k1) && !overlaps(out, *k2) &&
                !overlaps(out, *k3) && !overlaps(out, y);
      for (const auto &in : other.inputs)
        clear = clear && !(in && overlaps(*in, y));
    }
    if (!clear)
      continue;
    KernelDesc gelu;
    gelu.op = opName(OpKind::ErfGelu);
    gelu.inputs = {x, k1, *k2, *k3};
    gelu.outputs = {y};
    if (multiply)
      gelu.setAttr("multiply", AttrValue::ofBool(true));
    size_t removed[] = {je, ja, jp, jy};
    program.kernels[i] = std::move(gelu);
    std::sort(std::begin(removed), std::end(removed));
    for (size_t r = 4; r-- > 0;)
      program.kernels.erase(program.kernels.begin() + removed[r]);
    ++folded;
  }
  return folded;
}

//===----------------------------------------------------------------------===//
// Reshapes as views, transposes into a product's result
//===----------------------------------------------------------------------===//

/// `o` seen with `shape` (same bytes, dense).
KernelOperand reshaped(const KernelOperand &o, const std::vector<int64_t> &shape) {
  KernelOperand v = o;
  v.shape = shape;
  v.strides.clear();
  return v;
}

bool isPlainReshape(const KernelDesc &k) {
  return k.kind() == OpKind::Reshape && !k.inputs.empty() && k.inputs[0] &&
         k.outputs.size() == 1 && k.inputs[0]->isContiguous() &&
         k.outputs[0].isContiguous() && k.inputs[0]->dtype == k.outputs[0].dtype &&
         k.inputs[0]->byteSpan() == k.outputs[0].byteSpan();
}

/// True if `value` and `o` are two different bind points: the compiler may
/// have placed them in common bytes (it places a partition's values by its
/// order of invocations), which this program cannot see.
bool otherBinding(const KernelOperand &o, const KernelOperand &value) {
  return value.storage == KernelOperand::Storage::Binding &&
         o.storage == KernelOperand::Storage::Binding && o.index != value.index;
}

/// Offers each kernel in turn to `fold`, which returns true once it has
/// rewritten the program so that the kernel is not needed; that kernel is
/// removed (and the next one offered at its place). Returns how many were.
template <class Fold> unsigned removeFolded(KernelProgram &program, Fold &&fold) {
  unsigned folded = 0;
  for (size_t k = 0; k < program.kernels.size();) {
    if (fold(k)) {
      program.kernels.erase(program.kernels.begin() + k);
      ++folded;
    } else {
      ++k;
    }
  }
  return folded;
}

/// A reshape between dense tensors copies bytes unchanged, so it can go:
/// - forward: its result (a temporary only one later kernel reads, as a
///   whole) is replaced there by the source seen with the new shape, if
///   nothing in between writes the source;
/// - backward: its source (a temporary only it reads, written whole as the
///   output of one earlier kernel) is replaced in that kernel by the result
///   seen with the source's shape, if nothing in between touches the result.
/// A source or result that is a bind point is read later or written earlier
/// than the compiler's order had it, so nothing in between may write (or,
/// for a result, touch) another bind point: the compiler may have given the
/// two common bytes. (test_rnn_seq_length with a lone reshape as the cpu
/// target's subgraph: the reshape of W's slice read after the reshape of R
/// had overwritten it.)
unsigned foldReshapes(KernelProgram &program) {
  return removeFolded(program, [&](size_t r) {
    const KernelDesc &reshape = program.kernels[r];
    if (!isPlainReshape(reshape))
      return false;
    const KernelOperand src = *reshape.inputs[0], dst = reshape.outputs[0];
    bool done = false;
    std::vector<size_t> readers = readersOf(program, dst, 0);
    std::vector<size_t> dstWriters = writersOf(program, dst);
    if (dst.storage == KernelOperand::Storage::Temporary && readers.size() == 1 &&
        readers[0] > r && dstWriters.size() == 1 && !overlaps(src, dst)) {
      size_t reader = readers[0];
      bool clear = true;
      for (size_t k = r + 1; k < reader && clear; ++k)
        for (const KernelOperand &out : program.kernels[k].outputs)
          clear = clear && !overlaps(out, src) && !otherBinding(out, src);
      for (const KernelOperand &out : program.kernels[reader].outputs)
        clear = clear && !overlaps(out, dst);
      size_t uses = 0;
      for (const auto &in : program.kernels[reader].inputs)
        if (in && overlaps(*in, dst)) {
          ++uses;
          clear = clear && *in == dst;
        }
      if (clear && uses == 1) {
        for (auto &in : program.kernels[reader].inputs)
          if (in && *in == dst)
            in = reshaped(src, dst.shape);
        done = true;
      }
    }
    if (!done && src.storage == KernelOperand::Storage::Temporary) {
      std::vector<size_t> srcReaders = readersOf(program, src, 0);
      std::vector<size_t> writers = writersOf(program, src);
      if (srcReaders.size() == 1 && srcReaders[0] == r && writers.size() == 1 &&
          writers[0] < r && !overlaps(src, dst)) {
        size_t writer = writers[0];
        KernelDesc &w = program.kernels[writer];
        size_t slot = 0, hits = 0;
        for (size_t i = 0; i < w.outputs.size(); ++i)
          if (overlaps(w.outputs[i], src)) {
            slot = i;
            ++hits;
          }
        bool clear = hits == 1 && w.outputs[slot] == src;
        for (const auto &in : w.inputs)
          clear = clear && !(in && overlaps(*in, dst));
        for (size_t k = writer + 1; k < r && clear; ++k) {
          const KernelDesc &other = program.kernels[k];
          for (const KernelOperand &out : other.outputs)
            clear = clear && !overlaps(out, dst) && !otherBinding(out, dst);
          for (const auto &in : other.inputs)
            clear = clear && !(in && (overlaps(*in, dst) || otherBinding(*in, dst)));
        }
        if (clear) {
          w.outputs[slot] = reshaped(dst, src.shape);
          done = true;
        }
      }
    }
    return done;
  });
}

/// `y = transpose(x)` where x is a dense temporary written only by a
/// matmul/gemm (as its result) and read only by the transpose, and y is
/// dense: the product writes y directly through permuted strides (oneDNN's
/// matmul takes a strided result; attention's context heads merged back
/// into rows), provided nothing in between touches y.
bool isPermutation(const std::vector<int64_t> &perm, size_t rank);

unsigned foldResultTransposes(KernelProgram &program) {
  return removeFolded(program, [&](size_t t) {
    const KernelDesc &transpose = program.kernels[t];
    bool done = false;
    if (transpose.kind() == OpKind::Transpose && transpose.inputs.size() == 1 &&
        transpose.inputs[0] && transpose.outputs.size() == 1) {
      const KernelOperand x = *transpose.inputs[0], y = transpose.outputs[0];
      std::vector<int64_t> perm = transpose.getInts("perm");
      size_t rank = x.shape.size();
      std::vector<size_t> writers = writersOf(program, x), readers = readersOf(program, x, 0);
      if (x.storage == KernelOperand::Storage::Temporary && x.isContiguous() &&
          y.isContiguous() && x.dtype == y.dtype && isPermutation(perm, rank) &&
          y.shape.size() == rank && !overlaps(x, y) && writers.size() == 1 &&
          writers[0] < t && readers.size() == 1 && readers[0] == t) {
        KernelDesc &m = program.kernels[writers[0]];
        bool ok = (m.kind() == OpKind::MatMul || m.kind() == OpKind::Gemm) && m.outputs.size() == 1 &&
                  m.outputs[0] == x;
        for (size_t d = 0; d < rank && ok; ++d)
          ok = y.shape[d] == x.shape[size_t(perm[d])];
        for (const auto &in : m.inputs)
          ok = ok && !(in && overlaps(*in, y));
        for (size_t k = writers[0] + 1; k < t && ok; ++k) {
          const KernelDesc &other = program.kernels[k];
          for (const KernelOperand &out : other.outputs)
            ok = ok && !overlaps(out, y);
          for (const auto &in : other.inputs)
            ok = ok && !(in && overlaps(*in, y));
        }
        if (ok) {
          std::vector<int64_t> ys = y.effectiveStrides();
          KernelOperand view = y;
          view.shape = x.shape;
          view.strides.assign(rank, 0);
          for (size_t d = 0; d < rank; ++d)
            view.strides[size_t(perm[d])] = ys[d];
          m.outputs[0] = view;
          done = true;
        }
      }
    }
    return done;
  });
}

//===----------------------------------------------------------------------===//
// Transposes into matrix products
//===----------------------------------------------------------------------===//

bool isPermutation(const std::vector<int64_t> &perm, size_t rank) {
  if (perm.size() != rank)
    return false;
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p])
      return false;
    seen[p] = true;
  }
  return true;
}

unsigned foldTransposes(KernelProgram &program) {
  std::vector<bool> removed(program.kernels.size(), false);
  unsigned folded = 0;
  for (size_t t = 0; t < program.kernels.size(); ++t) {
    const KernelDesc &transpose = program.kernels[t];
    if (transpose.kind() != OpKind::Transpose || transpose.inputs.size() != 1 ||
        !transpose.inputs[0] || transpose.outputs.size() != 1)
      continue;
    const KernelOperand &source = *transpose.inputs[0];
    const KernelOperand &result = transpose.outputs[0];
    if (result.storage != KernelOperand::Storage::Temporary ||
        !result.isContiguous() || source.dtype != result.dtype)
      continue;
    std::vector<int64_t> perm = transpose.getInts("perm");
    size_t rank = source.shape.size();
    if (!isPermutation(perm, rank) || result.shape.size() != rank)
      continue;
    KernelOperand view = source;
    std::vector<int64_t> strides = source.effectiveStrides();
    view.strides.assign(rank, 0);
    bool shapeMatches = true;
    for (size_t d = 0; d < rank; ++d) {
      view.shape[d] = source.shape[perm[d]];
      view.strides[d] = strides[perm[d]];
      shapeMatches &= view.shape[d] == result.shape[d];
    }
    if (!shapeMatches)
      continue;

    // The one reader: input 0 or 1 of a later matmul/gemm, reading exactly
    // the transposed value. Nothing else reads or writes the temporary.
    size_t reader = 0, slot = 0, readers = 0;
    bool ok = true;
    for (size_t k = 0; k < program.kernels.size() && ok; ++k) {
      if (removed[k])
        continue;
      const KernelDesc &desc = program.kernels[k];
      for (size_t i = 0; i < desc.inputs.size(); ++i)
        if (desc.inputs[i] && overlaps(*desc.inputs[i], result)) {
          ++readers;
          reader = k;
          slot = i;
          ok &= *desc.inputs[i] == result;
        }
      if (k != t)
        for (const KernelOperand &out : desc.outputs)
          ok &= !overlaps(out, result);
    }
    if (!ok || readers != 1 || reader <= t || slot > 1 ||
        (program.kernels[reader].kind() != OpKind::MatMul &&
         program.kernels[reader].kind() != OpKind::Gemm))
      continue;
    // The source must still hold its bytes when the product reads them.
    for (size_t k = t + 1; k <= reader && ok; ++k)
      for (const KernelOperand &out : program.kernels[k].outputs)
        ok &= !overlaps(out, source);
    if (!ok)
      continue;

    program.kernels[reader].inputs[slot] = view;
    removed[t] = true;
    ++folded;
  }
  if (folded) {
    std::vector<KernelDesc> kept;
    kept.reserve(program.kernels.size() - folded);
    for (size_t k = 0; k < program.kernels.size(); ++k)
      if (!removed[k])
        kept.push_back(std::move(program.kernels[k]));
    program.kernels = std::move(kept);
  }
  return folded;
}

//===----------------------------------------------------------------------===//
// Swish (SiLU)
//===----------------------------------------------------------------------===//

unsigned foldSwish(KernelProgram &program) {
  unsigned folded = 0;
  for (size_t j = 0; j < program.kernels.size(); ++j) {
    const KernelDesc &sig = program.kernels[j];
    if (sig.kind() != OpKind::Sigmoid || sig.inputs.size() != 1 || !sig.inputs[0] ||
        sig.outputs.size() != 1)
      continue;
    const KernelOperand &x = *sig.inputs[0], &s = sig.outputs[0];
    if (s.storage != KernelOperand::Storage::Temporary || s.shape != x.shape ||
        s.dtype != x.dtype || overlaps(s, x))
      continue;
    // The one kernel that reads s: mul(s, x) or mul(x, s), same shape.
    size_t reader = 0, readers = 0;
    for (size_t k = j + 1; k < program.kernels.size(); ++k)
      for (const auto &in : program.kernels[k].inputs)
        if (in && overlaps(*in, s)) {
          reader = k;
          ++readers;
        }
    if (readers != 1)
      continue;
    const KernelDesc &mul = program.kernels[reader];
    if (mul.kind() != OpKind::Mul || mul.inputs.size() != 2 || !mul.inputs[0] || !mul.inputs[1] ||
        mul.outputs.size() != 1)
      continue;
    bool sFirst = *mul.inputs[0] == s && *mul.inputs[1] == x;
    bool xFirst = *mul.inputs[0] == x && *mul.inputs[1] == s;
    const KernelOperand &u = mul.outputs[0];
    if (!(sFirst || xFirst) || u.shape != x.shape || u.dtype != x.dtype)
      continue;
    // Computing u at the sigmoid's place: nothing in between may write x or
    // touch u's bytes.
    bool clear = true;
    for (size_t k = j + 1; k < reader && clear; ++k)
      clear = !writes(program.kernels[k], x) && !touches(program.kernels[k], u);
    if (!clear)
      continue;
    KernelDesc swish;
    swish.op = opName(OpKind::Swish);
    swish.inputs = {x};
    swish.outputs = {u};
    program.kernels[j] = std::move(swish);
    program.kernels.erase(program.kernels.begin() + reader);
    ++folded;
  }
  return folded;
}

//===----------------------------------------------------------------------===//
// Unused temporaries
//===----------------------------------------------------------------------===//

unsigned dropUnusedTemporaries(KernelProgram &program) {
  std::vector<bool> used(program.temporaries.size(), false);
  auto mark = [&](const KernelOperand &o) {
    if (o.storage == KernelOperand::Storage::Temporary &&
        o.index < used.size())
      used[o.index] = true;
  };
  for (const KernelDesc &k : program.kernels) {
    for (const auto &in : k.inputs)
      if (in)
        mark(*in);
    for (const KernelOperand &out : k.outputs)
      mark(out);
  }
  std::vector<uint32_t> renumbered(program.temporaries.size(), 0);
  std::vector<KernelProgram::Temporary> kept;
  for (size_t i = 0; i < program.temporaries.size(); ++i)
    if (used[i]) {
      renumbered[i] = kept.size();
      kept.push_back(program.temporaries[i]);
    }
  unsigned dropped = program.temporaries.size() - kept.size();
  if (!dropped)
    return 0;
  auto remap = [&](KernelOperand &o) {
    if (o.storage == KernelOperand::Storage::Temporary)
      o.index = renumbered[o.index];
  };
  for (KernelDesc &k : program.kernels) {
    for (auto &in : k.inputs)
      if (in)
        remap(*in);
    for (KernelOperand &out : k.outputs)
      remap(out);
  }
  program.temporaries = std::move(kept);
  return dropped;
}

//===----------------------------------------------------------------------===//
// Channels-last intermediates
//===----------------------------------------------------------------------===//

/// Kernels that read and write operands of any layout at full speed (their
/// loops follow the strides, or oneDNN takes the layout as it is).
bool layoutAgnostic(OpKind op) {
  static const OpKind ops[] = {
      OpKind::Convolution, OpKind::ConvTranspose, OpKind::MaxPool,  OpKind::AvgPool,
      OpKind::GlobalAvgPool, OpKind::GlobalMaxPool, OpKind::BatchNorm,
      OpKind::Relu, OpKind::LeakyRelu, OpKind::Elu, OpKind::Selu, OpKind::Celu,
      OpKind::Tanh, OpKind::Sigmoid, OpKind::Swish, OpKind::Gelu, OpKind::Clip, OpKind::HardSwish,
      OpKind::HardSigmoid, OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Abs,
      OpKind::Neg, OpKind::Softplus, OpKind::Mish, OpKind::Round, OpKind::Reciprocal,
      OpKind::Identity, OpKind::Erf, OpKind::Add, OpKind::Sub, OpKind::Mul,
      OpKind::Div, OpKind::Max, OpKind::Min, OpKind::PRelu,
      // A strided copy per input into its slice of the result: DenseNet's,
      // Inception's and SqueezeNet's channel concats, whose inputs and
      // result then stay channels-last around their convolutions.
      OpKind::Concat,
      // Copies through both operands' strides (Inception's pad before each
      // average pool; ShuffleNet's channel shuffle and split).
      OpKind::Pad, OpKind::Slice, OpKind::Split, OpKind::Transpose,
      // Tabled taps over any strides (resize.cpp).
      OpKind::Resize};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

std::vector<int64_t> channelsLastStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = shape[1];
  strides[1] = 1;
  for (size_t d = shape.size(); d-- > 2;) {
    strides[d] = step;
    step *= shape[d];
  }
  strides[0] = step;
  return strides;
}

/// Channels-last strides for `shape`, an access of a buffer whose
/// activation shape is `canonical` (N, C, spatial...): the same shape, or
/// one that splits C into several dimensions (ShuffleNet's channel shuffle
/// reads its input as [N, groups, C / groups, H, W]). Empty if neither.
std::vector<int64_t> channelsLastStridesOf(const std::vector<int64_t> &canonical,
                                           const std::vector<int64_t> &shape) {
  if (shape == canonical)
    return channelsLastStrides(canonical);
  const size_t rank = canonical.size(), splits = shape.size() + 1 - rank;
  if (shape.size() <= rank || shape[0] != canonical[0] ||
      !std::equal(canonical.begin() + 2, canonical.end(), shape.begin() + 1 + splits))
    return {};
  int64_t channels = 1;
  for (size_t d = 1; d <= splits; ++d)
    channels *= shape[d];
  if (channels != canonical[1])
    return {};
  std::vector<int64_t> base = channelsLastStrides(canonical), strides(shape.size());
  strides[0] = base[0];
  std::copy(base.begin() + 2, base.end(), strides.begin() + 1 + splits);
  int64_t step = 1;
  for (size_t d = splits; d >= 1; --d) {
    strides[d] = step;
    step *= shape[d];
  }
  return strides;
}

/// Stores channels-last what may be (see optimizeKernelProgram). With
/// `splitChannels`, a buffer may also be accessed with its channels split
/// (channelsLastStridesOf); each such buffer is added to `split`.
unsigned relayoutChannelsLast(KernelProgram &program, bool splitChannels,
                              std::vector<KernelOperand> &split) {
  // One node per buffer (binding or temporary). Kernels other than
  // convolutions keep one layout across their activation-shaped operands
  // (an elementwise op, a pool, batch norm, and above all a fused chain,
  // whose post-ops read a residual in the result's layout), so those are
  // joined into groups; a group changes layout together or not at all.
  using Key = std::pair<int, uint32_t>;
  struct Node {
    std::vector<KernelOperand *> operands;
    bool ok = true, convolution = false;
    Key parent;
  };
  std::map<Key, Node> nodes;
  // A buffer's activation shape: that of its accesses of the lowest rank.
  auto canonicalShape = [](const Node &n) -> const std::vector<int64_t> & {
    const KernelOperand *best = n.operands.front();
    for (const KernelOperand *o : n.operands)
      if (o->shape.size() < best->shape.size())
        best = o;
    return best->shape;
  };
  auto keyOf = [](const KernelOperand &o) { return Key{int(o.storage), o.index}; };
  std::function<Key(Key)> find = [&](Key k) {
    Node &n = nodes[k];
    if (n.parent == k)
      return k;
    return n.parent = find(n.parent);
  };
  auto node = [&](const KernelOperand &o) -> Node & {
    Key k = keyOf(o);
    auto [it, inserted] = nodes.try_emplace(k);
    if (inserted) {
      it->second.parent = k;
      // Only intermediates this program alone touches may change layout.
      bool eligible = o.storage == KernelOperand::Storage::Temporary ||
                      (o.index < program.bindings.size() && program.bindings[o.index].internal);
      it->second.ok = eligible;
    }
    return it->second;
  };
  auto join = [&](const KernelOperand &a, const KernelOperand &b) {
    node(a);
    node(b);
    Key ra = find(keyOf(a)), rb = find(keyOf(b));
    if (ra != rb)
      nodes[ra].parent = rb;
  };
  /// An activation-shaped operand of a kernel whose result is `out`: same
  /// rank, batch and channels, more than one spatial position (a per-channel
  /// scale broadcast over the plane is not).
  auto activationLike = [](const KernelOperand &o, const KernelOperand &out) {
    if (o.shape.size() != out.shape.size() || o.shape.size() < 3 || o.shape[0] != out.shape[0] ||
        o.shape[1] != out.shape[1])
      return false;
    int64_t spatial = 1;
    for (size_t d = 2; d < o.shape.size(); ++d)
      spatial *= o.shape[d];
    return spatial > 1;
  };
  for (KernelDesc &k : program.kernels) {
    bool agnostic = layoutAgnostic(k.kind());
    // A conv_transpose reads its input in either layout (the direct kernel
    // transposes channels-last rows, oneDNN takes any) and writes NCHW: its
    // input may go channels-last with the convolution before it.
    const bool deconv = k.kind() == OpKind::ConvTranspose;
    bool conv = k.kind() == OpKind::Convolution || deconv;
    auto visit = [&](KernelOperand &o, bool convActivation) {
      Node &n = node(o);
      n.operands.push_back(&o);
      bool dense = o.offset == 0 && o.isContiguous() && o.shape.size() >= 3 &&
                   (o.dtype == CGC_DTYPE_FLOAT32 || o.dtype == CGC_DTYPE_BFLOAT16);
      if (!agnostic || !dense || (conv && !convActivation))
        n.ok = false;
      n.convolution |= conv && convActivation;
    };
    for (size_t i = 0; i < k.inputs.size(); ++i)
      if (k.inputs[i])
        visit(*k.inputs[i], i == 0);
    for (KernelOperand &out : k.outputs)
      visit(out, !deconv);
    // (A global pool's 1x1 result is no activation: its input may change
    // layout alone. A slice or transpose copies between any two layouts,
    // as a convolution reads and writes them: ShuffleNet's split halves
    // feed channels-last convolutions from a shuffled tensor.)
    const bool copy = k.kind() == OpKind::Slice || k.kind() == OpKind::Transpose;
    if (conv || copy || k.outputs.size() != 1 || !activationLike(k.outputs[0], k.outputs[0]))
      continue;
    for (const auto &in : k.inputs)
      if (in && activationLike(*in, k.outputs[0]))
        join(*in, k.outputs[0]);
  }
  // Per group: every member may change layout and a convolution reads or
  // writes one of them.
  std::map<Key, std::pair<bool, bool>> groups; // root -> (ok, convolution)
  for (auto &[key, n] : nodes) {
    Key root = find(key);
    auto [it, inserted] = groups.try_emplace(root, true, false);
    bool ok = n.ok && !n.operands.empty();
    if (ok) {
      const KernelOperand &first = *n.operands.front();
      uint64_t bytes = key.first == int(KernelOperand::Storage::Temporary)
                           ? program.temporaries[key.second].bytes
                           : program.bindings[key.second].bytes;
      // Every access is the whole buffer with one shape (or that shape
      // with its channels split), channels and a spatial extent to permute.
      const std::vector<int64_t> &canonical = splitChannels ? canonicalShape(n) : first.shape;
      int64_t spatial = 1;
      for (size_t d = 2; d < canonical.size(); ++d)
        spatial *= canonical[d];
      ok = first.byteSpan() == bytes && canonical[1] > 1 && spatial > 1;
      for (const KernelOperand *o : n.operands)
        ok = ok && o->dtype == first.dtype && !channelsLastStridesOf(canonical, o->shape).empty();
    }
    it->second.first = it->second.first && ok;
    it->second.second = it->second.second || n.convolution;
  }
  unsigned changed = 0;
  for (auto &[key, n] : nodes) {
    auto [ok, convolution] = groups[find(key)];
    if (!ok || !convolution)
      continue;
    const std::vector<int64_t> &canonical = canonicalShape(n);
    for (KernelOperand *o : n.operands) {
      if (o->shape != canonical && (split.empty() || !overlaps(split.back(), *o)))
        split.push_back(*o);
      o->strides = channelsLastStridesOf(canonical, o->shape);
    }
    ++changed;
  }
  return changed;
}

//===----------------------------------------------------------------------===//
// Transposes the layouts made copies of the same order
//===----------------------------------------------------------------------===//

/// True if `o`'s elements fill its byte span exactly once (its strides, in
/// some order, are those of a dense tensor of its shape), none negative.
bool denseInSomeOrder(const KernelOperand &o) {
  std::vector<int64_t> strides = o.effectiveStrides();
  std::vector<size_t> order(strides.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return strides[a] < strides[b] || (strides[a] == strides[b] && a > b);
  });
  int64_t step = 1;
  for (size_t d : order) {
    if (o.shape[d] == 1)
      continue;
    if (strides[d] != step)
      return false;
    step *= o.shape[d];
  }
  return true;
}

unsigned foldLayoutTransposes(KernelProgram &program) {
  return removeFolded(program, [&](size_t t) {
    const KernelDesc &transpose = program.kernels[t];
    if (transpose.kind() != OpKind::Transpose || transpose.inputs.size() != 1 ||
        !transpose.inputs[0] || transpose.outputs.size() != 1)
      return false;
    const KernelOperand x = *transpose.inputs[0], y = transpose.outputs[0];
    const std::vector<int64_t> perm = transpose.getInts("perm");
    const size_t rank = y.shape.size();
    if (y.storage != KernelOperand::Storage::Temporary || y.offset != 0 ||
        y.byteSpan() != program.temporaries[y.index].bytes || x.dtype != y.dtype ||
        x.shape.size() != rank || !isPermutation(perm, rank) || !denseInSomeOrder(x) ||
        !denseInSomeOrder(y) || overlaps(x, y))
      return false;
    // Element y[i] lies where x[perm(i)] does, for every i: the same bytes
    // in the same order.
    const std::vector<int64_t> xs = x.effectiveStrides(), ys = y.effectiveStrides();
    for (size_t d = 0; d < rank; ++d)
      if (y.shape[d] != x.shape[size_t(perm[d])] ||
          (y.shape[d] != 1 && ys[d] != xs[size_t(perm[d])]))
        return false;
    // Only this transpose writes y; every later access reads it.
    size_t last = t;
    for (size_t k = 0; k < program.kernels.size(); ++k) {
      const KernelDesc &other = program.kernels[k];
      if (k != t)
        for (const KernelOperand &out : other.outputs)
          if (overlaps(out, y))
            return false;
      if (reads(other, y)) {
        if (k < t)
          return false;
        last = std::max(last, k);
      }
    }
    // x must hold its bytes until y's last reader: nothing in between
    // writes it (or, for a bind point, another bind point: the compiler
    // may have given the two common bytes).
    for (size_t k = t + 1; k <= last; ++k)
      for (const KernelOperand &out : program.kernels[k].outputs)
        if (overlaps(out, x) || otherBinding(out, x))
          return false;
    for (size_t k = t + 1; k <= last; ++k)
      for (auto &in : program.kernels[k].inputs)
        if (in && in->storage == y.storage && in->index == y.index) {
          in->storage = x.storage;
          in->index = x.index;
          in->offset += x.offset;
        }
    return true;
  });
}

} // namespace

/// True if `k` is a slice or transpose whose output's innermost dimension
/// (its smallest stride) is shorter than 8 elements and strided in its
/// source: the copy moves a few elements per row. (A row contiguous on one
/// side and 2, 4 or 8 elements apart on the other runs as an interleave:
/// not counted.)
static bool isPermutingCopy(const KernelDesc &k) {
  if ((k.kind() != OpKind::Slice && k.kind() != OpKind::Transpose) || k.inputs.size() != 1 ||
      !k.inputs[0] || k.outputs.size() != 1)
    return false;
  const KernelOperand &in = *k.inputs[0], &out = k.outputs[0];
  const size_t rank = out.shape.size();
  if (in.shape.size() != rank)
    return false;
  std::vector<int64_t> src = in.effectiveStrides(), dst = out.effectiveStrides();
  if (k.kind() == OpKind::Transpose) {
    std::vector<int64_t> perm = k.getInts("perm");
    if (!isPermutation(perm, rank))
      return false;
    std::vector<int64_t> permuted(rank);
    for (size_t d = 0; d < rank; ++d)
      permuted[d] = src[size_t(perm[d])];
    src = permuted;
  } else {
    std::vector<int64_t> steps = k.getInts("steps");
    if (steps.size() != rank)
      return false;
    for (size_t d = 0; d < rank; ++d)
      src[d] *= steps[d];
  }
  // The destination's innermost dimension (the row the copy runs).
  std::optional<size_t> inner;
  bool interleave = false;
  for (size_t d = 0; d < rank; ++d) {
    if (out.shape[d] <= 1)
      continue;
    const int64_t a = std::llabs(dst[d]), b = std::llabs(src[d]);
    if (!inner || a < std::llabs(dst[*inner]))
      inner = d;
    interleave |= out.shape[d] >= 16 && ((b == 1 && (a == 2 || a == 4 || a == 8)) ||
                                         (a == 1 && (b == 2 || b == 4 || b == 8)));
  }
  return inner && out.shape[*inner] < 8 && std::llabs(src[*inner]) != 1 && !interleave;
}

namespace {

/// Per bind point, the first and last kernel that accesses it (first >
/// last: none).
struct BindingInterval {
  int64_t first = INT64_MAX, last = -1;
  /// The first kernel to access it writes it without reading it: its value
  /// starts in this program (the compiler may have placed it in bytes that
  /// held a value it no longer needs).
  bool startsHere = false;
};
std::vector<BindingInterval> bindingIntervals(const KernelProgram &program) {
  std::vector<BindingInterval> intervals(program.bindings.size());
  auto note = [&](const KernelOperand &o, int64_t k) {
    if (o.storage != KernelOperand::Storage::Binding || o.index >= intervals.size())
      return;
    BindingInterval &i = intervals[o.index];
    i.first = std::min(i.first, k);
    i.last = std::max(i.last, k);
  };
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    for (const KernelOperand &out : program.kernels[k].outputs)
      if (out.storage == KernelOperand::Storage::Binding && out.index < intervals.size() &&
          intervals[out.index].first > intervals[out.index].last &&
          !reads(program.kernels[k], out))
        intervals[out.index].startsHere = true;
    for (const auto &in : program.kernels[k].inputs)
      if (in)
        note(*in, int64_t(k));
    for (const KernelOperand &out : program.kernels[k].outputs)
      note(out, int64_t(k));
  }
  return intervals;
}

RewriteStats rewriteKernelProgram(KernelProgram &program) {
  RewriteStats stats;
  stats.internalTemporaries = internalBindingsToTemporaries(program);
  stats.swappedOperands = swapCommutativeOperands(program);
  stats.foldedReshapes = foldReshapes(program);
  stats.foldedTransposes = foldTransposes(program);
  stats.foldedResultTransposes = foldResultTransposes(program);
  stats.foldedErfGelu = foldErfGelu(program);
  stats.foldedSwish = foldSwish(program);
  stats.droppedTemporaries = dropUnusedTemporaries(program);
  // Channels-last with split channels (a channel shuffle's reshaped views)
  // pays only once the copies through those views are folded: a transpose
  // left between such views permutes a few elements at a time (ShuffleNetV2
  // with the layout but without the fold: 2.35 -> 2.69 ms at 1 thread). So
  // where a copy that touches such a view still moves short runs across
  // strides, the program is laid out again without split views.
  const KernelProgram unlaid = program;
  std::vector<KernelOperand> split;
  stats.channelsLast = relayoutChannelsLast(program, /*splitChannels=*/true, split);
  stats.foldedCopyChains = foldCopyChains(program);
  auto slowCopyLeft = [&] {
    for (const KernelDesc &k : program.kernels)
      for (const KernelOperand &o : split)
        if (touches(k, o) && isPermutingCopy(k))
          return true;
    return false;
  };
  if (!split.empty() && slowCopyLeft()) {
    program = unlaid;
    split.clear();
    stats.channelsLast = relayoutChannelsLast(program, /*splitChannels=*/false, split);
    stats.foldedCopyChains = foldCopyChains(program);
  }
  stats.foldedLayoutTransposes = foldLayoutTransposes(program);
  if (stats.foldedCopyChains || stats.foldedLayoutTransposes)
    stats.droppedTemporaries += dropUnusedTemporaries(program);
  return stats;
}

} // namespace

std::string reversedBindingOrder(const KernelProgram &before, const KernelProgram &after) {
  const std::vector<BindingInterval> a = bindingIntervals(before), b = bindingIntervals(after);
  for (size_t x = 0; x < a.size() && x < b.size(); ++x)
    for (size_t y = 0; y < a.size() && y < b.size(); ++y) {
      // y's value starts in the program after x's last access, so the
      // compiler may have put it in x's bytes. Constant bind points never
      // change while bound: nothing shares their bytes.
      if (x == y || !a[y].startsHere || before.bindings[x].constant ||
          before.bindings[y].constant)
        continue;
      // x wholly before y in `before`, y wholly before x in `after`.
      if (a[x].first <= a[x].last && a[y].first <= a[y].last && a[x].last < a[y].first &&
          b[x].first <= b[x].last && b[y].first <= b[y].last && b[y].last < b[x].first)
        return "'" + before.bindings[x].name + "' and '" + before.bindings[y].name + "'";
    }
  return "";
}

RewriteStats optimizeKernelProgram(KernelProgram &program) {
  const KernelProgram original = program;
  RewriteStats stats = rewriteKernelProgram(program);
  // The compiler may have placed two bind points in common bytes by its
  // order of invocations; the driver keeps their accesses apart where they
  // share or interleave steps (CompiledProgram::layoutFor), not where a
  // rewrite swapped their order. Such a program runs unrewritten.
  if (!reversedBindingOrder(original, program).empty()) {
    program = original;
    stats = RewriteStats();
    stats.keptForBindingOrder = true;
  }
  return stats;
}

std::vector<FusionCandidate> findFusionCandidates(const KernelProgram &program) {
  std::vector<FusionCandidate> candidates;
  const auto &kernels = program.kernels;
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelDesc &desc = kernels[k];
    // batch_norm anchors a step in the driver too, but fuses a leading relu
    // or clip only: this check would fail a program whose anchor refuses the
    // first op of its chain.
    if (!takesAnyEpilogue(desc.op) || desc.outputs.size() != 1)
      continue;
    FusionCandidate candidate;
    candidate.anchor = k;
    candidate.chain = epilogueChain(program, k);
    candidates.push_back(std::move(candidate));
  }
  return candidates;
}

bool haveKernelLibrary() { return CGC_CPU_HAVE_KERNELS != 0; }

KernelCheck checkKernelProgram(const KernelProgram &program) {
  KernelCheck check;
#if !CGC_CPU_HAVE_KERNELS
  check.reason = "this build's CPU kernel library "
                 "(runtime/drivers/cpu/kernels) has no kernels, so the "
                 "CPU driver runs nothing";
  (void)program;
  return check;
#else
  // What the driver makes of the program: its steps, as it forms them.
  std::string why;
  std::shared_ptr<cpu::CompiledProgram> compiled =
      cpu::CompiledProgram::create(program, why);
  if (!compiled) {
    check.reason = why;
    return check;
  }
  // The target's policy on top: an anchor declared with an epilogue runs
  // fused with at least the first op of it.
  std::vector<size_t> stepOf(program.kernels.size(), 0);
  for (size_t s = 0; s < compiled->steps().size(); ++s)
    for (size_t k : compiled->steps()[s].kernels)
      stepOf[k] = s;
  for (const FusionCandidate &c : findFusionCandidates(program)) {
    if (c.chain.empty() || stepOf[c.anchor] == stepOf[c.chain.front()])
      continue;
    const cpu::CompiledProgram::Step &step = compiled->steps()[stepOf[c.anchor]];
    check.reason = "kernel " + std::to_string(c.anchor) + " (" + program.kernels[c.anchor].op +
                   ") does not fuse with " +
                   (step.declined.empty()
                        ? program.kernels[c.chain.front()].op + " after it"
                        : step.declined);
    return check;
  }
  check.fusedKernels = compiled->fusedCount();
  check.ok = true;
  return check;
#endif
}

} // namespace cgc::cpu_target
