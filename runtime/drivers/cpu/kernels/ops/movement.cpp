//===- movement.cpp - Data movement ops -----------------------------------===//
//
// Most data movement is one strided copy (strided.h CopyPlan): transpose,
// slice, expand, tile, depth_to_space and space_to_depth are views of the
// input laid over the output (permuted, offset, negative, zero or split
// strides); concat and split are one copy per piece. Copies move elements by
// size only, so every dtype shares them, and become memcpy on contiguous
// rows. Gather copies rows per index; pad maps output coordinates to source
// coordinates per dimension.
//
// Index operands (gather, gather_elements) are data: an index outside the
// axis (after wrapping negatives) fails the run with a RunError naming the op
// and the index (kernels.h), as ONNX Runtime fails it; nothing is read out of
// bounds.
//
//===----------------------------------------------------------------------===//

#include "strided.h"

#include <algorithm>

namespace cgc::cpu {
namespace {

void expectOutputLike(const DescReader &r, const KernelOperand &in, size_t out,
                      const std::vector<int64_t> &shape) {
  r.expectSameDType(in, "input", r.output(out), cat("output ", out));
  r.expectShape(r.output(out), cat("output ", out), shape);
}

/// One strided copy: output = view(input).
class ViewCopyKernel final : public KernelBase {
public:
  ViewCopyKernel(CopyPlan plan, int64_t srcOffsetBytes, std::string description)
      : plan_(std::move(plan)), srcOffset_(srcOffsetBytes) {
    description_ = std::move(description);
  }
  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const char *src = static_cast<const char *>(args.inputs[0]) + srcOffset_;
    if (src == args.outputs[0] && identity_)
      return;
    plan_.run(pool, args.outputs[0], src);
  }
  /// The copy maps every element onto itself when src == dst.
  void setIdentity(bool identity) { identity_ = identity; }

private:
  CopyPlan plan_;
  int64_t srcOffset_;
  bool identity_ = false;
};

std::string text(const KernelDesc &desc, const KernelOperand &in) {
  return cat(desc.op.substr(7), " ", dtypeName(in.dtype), " ", shapeStr(in.shape));
}

std::unique_ptr<Kernel> makeReshape(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  std::vector<int64_t> shape = r.getInts("shape");
  for (int64_t d : shape)
    if (d < 0)
      r.error(cat("'shape' entries must be >= 0, got ", shapeStr(shape)));
  if (numElements(shape) != in.numElements())
    r.error(cat("cannot reshape ", shapeStr(in.shape), " (", in.numElements(), " elements) to ",
                shapeStr(shape)));
  expectOutputLike(r, in, 0, shape);
  const KernelOperand &out = r.output(0);
  size_t elem = cgc_dtype_size(in.dtype);
  if (in.isContiguous()) {
    auto k = std::make_unique<ViewCopyKernel>(
        CopyPlan(shape, elem, out.effectiveStrides(), contiguousStrides(shape)), 0,
        text(desc, in) + " -> " + shapeStr(shape));
    k->setIdentity(out.isContiguous());
    return k;
  }
  if (out.isContiguous())
    return std::make_unique<ViewCopyKernel>(
        CopyPlan(in.shape, elem, contiguousStrides(in.shape), in.effectiveStrides()), 0,
        text(desc, in) + " -> " + shapeStr(shape));
  return makeDenseAdapted(desc, [&](const KernelDesc &dense) {
    return std::make_unique<ViewCopyKernel>(
        CopyPlan({in.numElements()}, elem, {1}, {1}), 0, text(desc, in) + " -> " + shapeStr(shape));
  });
}

std::unique_ptr<Kernel> makeTranspose(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  std::vector<int64_t> perm = r.getInts("perm");
  size_t rank = in.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = perm.size() == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= int64_t(rank) || seen[size_t(p)]) {
      valid = false;
      break;
    }
    seen[size_t(p)] = true;
  }
  if (!valid)
    r.error(cat("perm ", shapeStr(perm), " is not a permutation of [0, ", rank, ")"));
  std::vector<int64_t> shape, src;
  std::vector<int64_t> inStrides = in.effectiveStrides();
  for (int64_t p : perm) {
    shape.push_back(in.shape[size_t(p)]);
    src.push_back(inStrides[size_t(p)]);
  }
  expectOutputLike(r, in, 0, shape);
  return std::make_unique<ViewCopyKernel>(
      CopyPlan(shape, cgc_dtype_size(in.dtype), r.output(0).effectiveStrides(), src), 0,
      text(desc, in) + " perm " + shapeStr(perm));
}

/// Several copies (concat: one per input into the output; split: one per
/// output from the input).
class MultiCopyKernel final : public KernelBase {
public:
  struct Piece {
    CopyPlan plan;
    int64_t offsetBytes; // into the shared operand
    size_t index;        // the input (concat) or output (split)
  };
  /// Bytes per thread below which the copies run on fewer threads.
  static constexpr int64_t kMinShareBytes = 128 << 10;
  /// Bytes of all the pieces per slice of a share (in L1 and L2).
  static constexpr int64_t kSliceBytes = 32 << 10;
  MultiCopyKernel(bool concat, std::vector<Piece> pieces, std::string description)
      : concat_(concat), pieces_(std::move(pieces)) {
    description_ = std::move(description);
  }
  void run(const KernelArgs &args, ThreadPool &pool) const override {
    auto ends = [&](const Piece &p, void *&dst, const void *&src) {
      if (concat_) {
        dst = static_cast<char *>(args.outputs[0]) + p.offsetBytes;
        src = args.inputs[p.index];
      } else {
        dst = args.outputs[p.index];
        src = static_cast<const char *>(args.inputs[0]) + p.offsetBytes;
      }
    };
    // One parallel region for all the pieces, thread i copying share i of
    // each: a region per piece cost a wake-up and a wait per piece
    // (DenseNet-121's 62 concats of 2-32 inputs: 4.5 ms at 2 threads
    // against 1.3 at one).
    int64_t bytes = 0;
    for (const Piece &p : pieces_)
      bytes += p.plan.bytes();
    const int64_t shares =
        std::min<int64_t>(pool.size(), std::max<int64_t>(1, bytes / kMinShareBytes));
    // Within a share the pieces advance together, a slice of each in turn:
    // a concat of channels-last tensors along C then writes each output row
    // once, in order, instead of one pass over all rows per input (two
    // passes over SqueezeNet's 1.5 MB fire outputs, evicted from L2 in
    // between).
    const int64_t slices = std::max<int64_t>(1, bytes / shares / kSliceBytes);
    pool.parallelFor(shares, 1, [&](int64_t s0, int64_t s1) {
      for (int64_t k = 0; k < slices; ++k)
        for (const Piece &p : pieces_) {
          void *dst;
          const void *src;
          ends(p, dst, src);
          const int64_t items = p.plan.workItems();
          const int64_t begin = items * s0 / shares, end = items * s1 / shares;
          p.plan.runItems(dst, src, begin + (end - begin) * k / slices,
                          begin + (end - begin) * (k + 1) / slices);
        }
    });
  }

private:
  bool concat_;
  std::vector<Piece> pieces_;
};

std::unique_ptr<Kernel> makeConcat(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  if (desc.inputs.empty())
    r.error("concat needs at least one input");
  r.expectOutputs(1, 1);
  const KernelOperand &first = r.input(0, "inputs[0]");
  int64_t axis = r.getInt("axis");
  int64_t rank = int64_t(first.shape.size());
  if (axis < 0 || axis >= rank)
    r.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> shape = first.shape;
  shape[size_t(axis)] = 0;
  for (size_t i = 0; i < desc.inputs.size(); ++i) {
    const KernelOperand &in = r.input(i, "inputs");
    r.expectSameDType(first, "input 0", in, cat("input ", i));
    if (in.shape.size() != first.shape.size())
      r.error(cat("input ", i, " has rank ", in.shape.size(), "; input 0 has ", rank));
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && in.shape[size_t(d)] != first.shape[size_t(d)])
        r.error(cat("input ", i, " differs from input 0 in dimension ", d, " (",
                    in.shape[size_t(d)], " vs ", first.shape[size_t(d)], ")"));
    shape[size_t(axis)] += in.shape[size_t(axis)];
  }
  expectOutputLike(r, first, 0, shape);
  const KernelOperand &out = r.output(0);
  std::vector<int64_t> outStrides = out.effectiveStrides();
  size_t elem = cgc_dtype_size(first.dtype);
  std::vector<MultiCopyKernel::Piece> pieces;
  int64_t at = 0;
  for (size_t i = 0; i < desc.inputs.size(); ++i) {
    const KernelOperand &in = *desc.inputs[i];
    if (in.numElements() > 0)
      pieces.push_back({CopyPlan(in.shape, elem, outStrides, in.effectiveStrides()),
                        at * outStrides[size_t(axis)] * int64_t(elem), i});
    at += in.shape[size_t(axis)];
  }
  return std::make_unique<MultiCopyKernel>(
      true, std::move(pieces),
      cat("concat ", desc.inputs.size(), " x ", dtypeName(first.dtype), " -> ", shapeStr(shape)));
}

std::unique_ptr<Kernel> makeSplit(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  int64_t axis = r.getInt("axis");
  int64_t rank = int64_t(in.shape.size());
  if (axis < 0 || axis >= rank)
    r.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> sizes = r.getInts("sizes");
  if (sizes.empty())
    r.error("'sizes' must be non-empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0)
      r.error(cat("'sizes' entries must be >= 0, got ", shapeStr(sizes)));
    total += s;
  }
  if (total != in.shape[size_t(axis)])
    r.error(cat("sizes ", shapeStr(sizes), " sum to ", total, " but dimension ", axis, " is ",
                in.shape[size_t(axis)]));
  r.expectOutputs(sizes.size(), sizes.size());
  std::vector<int64_t> inStrides = in.effectiveStrides();
  size_t elem = cgc_dtype_size(in.dtype);
  std::vector<MultiCopyKernel::Piece> pieces;
  int64_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> shape = in.shape;
    shape[size_t(axis)] = sizes[i];
    expectOutputLike(r, in, i, shape);
    if (numElements(shape) > 0)
      pieces.push_back({CopyPlan(shape, elem, r.output(i).effectiveStrides(), inStrides),
                        at * inStrides[size_t(axis)] * int64_t(elem), i});
    at += sizes[i];
  }
  return std::make_unique<MultiCopyKernel>(false, std::move(pieces),
                                           cat("split ", text(desc, in), " into ", sizes.size()));
}

std::unique_ptr<Kernel> makeSlice(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  size_t rank = in.shape.size();
  std::vector<int64_t> starts = r.getInts("starts"), ends = r.getInts("ends"),
                       steps = r.getInts("steps");
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    r.error(cat("'starts', 'ends' and 'steps' must have ", rank, " entries (one per dimension)"));
  std::vector<int64_t> shape, src;
  std::vector<int64_t> inStrides = in.effectiveStrides();
  int64_t offset = 0;
  bool empty = false;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = in.shape[d], start = starts[d], end = ends[d], step = steps[d];
    if (step == 0)
      r.error(cat("step of dimension ", d, " must not be 0"));
    int64_t count;
    if (step > 0) {
      if (start < 0 || start > dim || end < 0 || end > dim)
        r.error(cat("slice [", start, ", ", end, ") of dimension ", d, " (size ", dim,
                    ") is not normalized to [0, ", dim, "]"));
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      if (start < -1 || start > dim - 1 || end < -1 || end > dim - 1)
        r.error(cat("reverse slice from ", start, " to ", end, " of dimension ", d, " (size ", dim,
                    ") is not normalized to [-1, ", dim - 1, "]"));
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    if (count == 0)
      empty = true;
    shape.push_back(count);
    src.push_back(inStrides[d] * step);
    if (count > 0)
      offset += start * inStrides[d];
  }
  expectOutputLike(r, in, 0, shape);
  size_t elem = cgc_dtype_size(in.dtype);
  return std::make_unique<ViewCopyKernel>(
      CopyPlan(shape, elem, r.output(0).effectiveStrides(), src), empty ? 0 : offset * int64_t(elem),
      text(desc, in) + " -> " + shapeStr(shape));
}

std::unique_ptr<Kernel> makeExpand(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  std::vector<int64_t> target = r.getInts("shape"), shape;
  for (int64_t d : target)
    if (d < 0)
      r.error(cat("'shape' entries must be >= 0, got ", shapeStr(target)));
  if (!broadcastShapes(in.shape, target, shape))
    r.error(cat("input shape ", shapeStr(in.shape), " does not broadcast with ", shapeStr(target)));
  expectOutputLike(r, in, 0, shape);
  return std::make_unique<ViewCopyKernel>(
      CopyPlan(shape, cgc_dtype_size(in.dtype), r.output(0).effectiveStrides(),
               broadcastStrides(in, shape)),
      0, text(desc, in) + " -> " + shapeStr(shape));
}

std::unique_ptr<Kernel> makeTile(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  std::vector<int64_t> repeats = r.getInts("repeats");
  if (repeats.size() != in.shape.size())
    r.error(cat("'repeats' must have ", in.shape.size(), " entries (one per dimension), got ",
                repeats.size()));
  std::vector<int64_t> shape, split, dst, src;
  std::vector<int64_t> inStrides = in.effectiveStrides();
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] < 0)
      r.error(cat("'repeats' entries must be >= 0, got ", shapeStr(repeats)));
    shape.push_back(in.shape[d] * repeats[d]);
  }
  expectOutputLike(r, in, 0, shape);
  std::vector<int64_t> outStrides = r.output(0).effectiveStrides();
  for (size_t d = 0; d < repeats.size(); ++d) {
    split.insert(split.end(), {repeats[d], in.shape[d]});
    dst.insert(dst.end(), {in.shape[d] * outStrides[d], outStrides[d]});
    src.insert(src.end(), {0, inStrides[d]});
  }
  return std::make_unique<ViewCopyKernel>(CopyPlan(split, cgc_dtype_size(in.dtype), dst, src), 0,
                                          text(desc, in) + " repeats " + shapeStr(repeats));
}

std::unique_ptr<Kernel> makeDepthSpace(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  bool toSpace = desc.kind() == OpKind::DepthToSpace;
  int64_t b = r.getInt("blocksize");
  if (in.shape.size() != 4)
    r.error("input must be N x C x H x W");
  std::vector<int64_t> s = in.shape, is = in.effectiveStrides();
  if (b < 1)
    r.error(cat("blocksize must be >= 1, got ", b));
  std::vector<int64_t> iter, dst, src, shape;
  if (toSpace) {
    std::string mode = r.getString("mode", "DCR", {"DCR", "CRD"});
    if (s[1] % (b * b) != 0)
      r.error(cat("channels (", s[1], ") must be divisible by blocksize^2 (", b * b, ")"));
    int64_t c = s[1] / (b * b);
    shape = {s[0], c, s[2] * b, s[3] * b};
    expectOutputLike(r, in, 0, shape);
    std::vector<int64_t> os = r.output(0).effectiveStrides();
    // Iterate (n, c', h, i, w, j) over the output.
    iter = {s[0], c, s[2], b, s[3], b};
    dst = {os[0], os[1], b * os[2], os[2], b * os[3], os[3]};
    if (mode == "DCR") // channel = (i * b + j) * c' + c
      src = {is[0], is[1], is[2], b * c * is[1], is[3], c * is[1]};
    else // channel = c' * b * b + i * b + j
      src = {is[0], b * b * is[1], is[2], b * is[1], is[3], is[1]};
  } else {
    if (s[2] % b != 0 || s[3] % b != 0)
      r.error(cat("height and width (", s[2], ", ", s[3], ") must be divisible by blocksize (", b,
                  ")"));
    shape = {s[0], s[1] * b * b, s[2] / b, s[3] / b};
    expectOutputLike(r, in, 0, shape);
    std::vector<int64_t> os = r.output(0).effectiveStrides();
    // Iterate (n, i, j, c, h', w') over the output: channel = (i*b + j)*C + c.
    iter = {s[0], b, b, s[1], s[2] / b, s[3] / b};
    dst = {os[0], b * s[1] * os[1], s[1] * os[1], os[1], os[2], os[3]};
    src = {is[0], is[2], is[3], is[1], b * is[2], b * is[3]};
  }
  return std::make_unique<ViewCopyKernel>(CopyPlan(iter, cgc_dtype_size(in.dtype), dst, src), 0,
                                          text(desc, in) + cat(" blocksize ", b));
}

//===----------------------------------------------------------------------===//
// pad
//===----------------------------------------------------------------------===//

class PadKernel final : public KernelBase {
public:
  PadKernel(const KernelOperand &in, const KernelOperand &out, std::vector<std::vector<int64_t>> map,
            std::vector<uint8_t> value, std::string description)
      : map_(std::move(map)), value_(std::move(value)) {
    elem_ = cgc_dtype_size(in.dtype);
    inStrides_ = in.effectiveStrides();
    outStrides_ = out.effectiveStrides();
    shape_ = out.shape;
    description_ = std::move(description);
    // The inner loop runs along the dimension the result is contiguous in
    // (channels for a channels-last activation: Inception-v3's pads of
    // 2048x8x8 took 2.1 ms element by element along the strided width).
    const size_t rank = shape_.size();
    for (size_t d = 0; d + 1 < rank; ++d)
      if (outStrides_[d] == 1 && outStrides_[rank - 1] != 1 && shape_[d] > 1) {
        std::swap(shape_[d], shape_[rank - 1]);
        std::swap(map_[d], map_[rank - 1]);
        std::swap(inStrides_[d], inStrides_[rank - 1]);
        std::swap(outStrides_[d], outStrides_[rank - 1]);
        break;
      }
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const char *in = static_cast<const char *>(args.inputs[0]);
    char *out = static_cast<char *>(args.outputs[0]);
    const size_t rank = shape_.size();
    const int64_t total = numElements(shape_);
    if (total == 0)
      return;
    if (rank == 0) {
      std::memcpy(out, in, elem_);
      return;
    }
    const int64_t inner = shape_.back();
    const int64_t rows = total / inner;
    pool.parallelFor(rows, std::max<int64_t>(1, 16384 / inner), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> c(rank, 0);
      for (int64_t row = begin; row < end; ++row) {
        int64_t rem = row, inOff = 0, outOff = 0;
        bool pad = false;
        for (size_t d = rank - 1; d-- > 0;) {
          int64_t k = rem % shape_[d];
          rem /= shape_[d];
          int64_t src = map_[d][size_t(k)];
          pad = pad || src < 0;
          inOff += src * inStrides_[d];
          outOff += k * outStrides_[d];
        }
        char *o = out + outOff * int64_t(elem_);
        const std::vector<int64_t> &last = map_[rank - 1];
        const int64_t os = outStrides_[rank - 1] * int64_t(elem_);
        const int64_t is = inStrides_[rank - 1] * int64_t(elem_);
        const char *irow = in + inOff * int64_t(elem_);
        if (elem_ == 4) { // no memcpy call per element
          uint32_t fill;
          std::memcpy(&fill, value_.data(), 4);
          for (int64_t k = 0; k < inner; ++k, o += os) {
            const int64_t src = last[size_t(k)];
            uint32_t v = fill;
            if (!pad && src >= 0)
              std::memcpy(&v, irow + src * is, 4);
            std::memcpy(o, &v, 4);
          }
          continue;
        }
        for (int64_t k = 0; k < inner; ++k, o += os) {
          int64_t src = last[size_t(k)];
          if (pad || src < 0)
            std::memcpy(o, value_.data(), elem_);
          else
            std::memcpy(o, irow + src * is, elem_);
        }
      }
    });
  }

private:
  std::vector<std::vector<int64_t>> map_; // per dim: output index -> input index or -1
  std::vector<uint8_t> value_;
  size_t elem_ = 0;
  std::vector<int64_t> inStrides_, outStrides_, shape_;
};

std::unique_ptr<Kernel> makePad(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(1, 1);
  r.expectOutputs(1, 1);
  const KernelOperand &in = r.input(0, "input");
  size_t rank = in.shape.size();
  std::vector<int64_t> pads = r.getInts("pads");
  if (pads.size() != 2 * rank)
    r.error(cat("'pads' must have ", 2 * rank,
                " entries (begin values then end values, one per dimension), got ", pads.size()));
  std::string mode = r.getString("mode", "constant", {"constant", "reflect", "edge"});
  double value = r.getFloat("value", 0.0);
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> map(rank);
  for (size_t d = 0; d < rank; ++d) {
    int64_t n = in.shape[d], before = pads[d], after = pads[rank + d];
    int64_t size = n + before + after;
    if (size < 0)
      r.error(cat("padding makes dimension ", d, " negative (", size, ")"));
    int64_t grow = std::max(before, after);
    if (mode == "reflect" && grow > 0 && grow >= n)
      r.error(cat("reflect padding of ", grow, " needs dimension ", d,
                  " to be larger than the padding, got ", n));
    if (mode == "edge" && grow > 0 && n == 0)
      r.error(cat("edge padding needs dimension ", d, " to be non-empty"));
    shape.push_back(size);
    for (int64_t o = 0; o < size; ++o) {
      int64_t i = o - before;
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          i = -1;
        } else if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else {
          if (n == 1)
            i = 0;
          while (i < 0 || i >= n)
            i = i < 0 ? -i : 2 * (n - 1) - i;
        }
      }
      map[d].push_back(i);
    }
  }
  expectOutputLike(r, in, 0, shape);
  std::vector<uint8_t> bytes(cgc_dtype_size(in.dtype));
  visitDType(in.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = convert<T>(value);
    std::memcpy(bytes.data(), &v, sizeof(T));
  });
  return std::make_unique<PadKernel>(in, r.output(0), std::move(map), std::move(bytes),
                                     text(desc, in) + " " + mode);
}

//===----------------------------------------------------------------------===//
// gather, gather_elements
//===----------------------------------------------------------------------===//

template <class I> int64_t readIndex(const void *p) { return int64_t(*static_cast<const I *>(p)); }

class GatherKernel final : public KernelBase {
public:
  GatherKernel(const KernelOperand &data, const KernelOperand &indices, const KernelOperand &out,
               int64_t axis)
      : axis_(axis) {
    elem_ = cgc_dtype_size(data.dtype);
    index64_ = indices.dtype == CGC_DTYPE_INT64;
    dataStrides_ = data.effectiveStrides();
    axisLen_ = data.shape[size_t(axis)];
    pre_.assign(data.shape.begin(), data.shape.begin() + axis);
    post_.assign(data.shape.begin() + axis + 1, data.shape.end());
    idxShape_ = indices.shape;
    idxStrides_ = indices.effectiveStrides();
    std::vector<int64_t> os = out.effectiveStrides();
    // Output dims: pre, idx..., post.
    outPre_.assign(os.begin(), os.begin() + axis);
    outIdx_.assign(os.begin() + axis, os.begin() + axis + int64_t(indices.shape.size()));
    outPost_.assign(os.begin() + axis + int64_t(indices.shape.size()), os.end());
    std::vector<int64_t> dataPost(dataStrides_.begin() + axis + 1, dataStrides_.end());
    postCopy_ = CopyPlan(post_, elem_, outPost_, dataPost);
    postCount_ = numElements(post_);
    description_ = cat("gather ", dtypeName(data.dtype), " ", shapeStr(data.shape), " axis ", axis,
                       " by ", shapeStr(indices.shape));
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const char *data = static_cast<const char *>(args.inputs[0]);
    const char *idx = static_cast<const char *>(args.inputs[1]);
    char *out = static_cast<char *>(args.outputs[0]);
    const int64_t pre = numElements(pre_), nidx = numElements(idxShape_);
    if (pre * nidx * postCount_ == 0)
      return;
    const int64_t isz = index64_ ? 8 : 4;
    pool.parallelFor(pre * nidx, std::max<int64_t>(1, 16384 / postCount_), [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t p = t / nidx, j = t % nidx;
        int64_t inOff = offsetOf(p, pre_, dataStrides_, 0);
        int64_t outOff = offsetOf(p, pre_, outPre_, 0) + offsetOf(j, idxShape_, outIdx_, 0);
        const char *ip = idx + offsetOf(j, idxShape_, idxStrides_, 0) * isz;
        const int64_t index = index64_ ? readIndex<int64_t>(ip) : readIndex<int32_t>(ip);
        int64_t k = index < 0 ? index + axisLen_ : index;
        char *o = out + outOff * int64_t(elem_);
        if (k < 0 || k >= axisLen_)
          throwIndexOutOfRange(opName(OpKind::Gather), index, j, idxShape_, axis_, axisLen_);
        const char *src = data + (inOff + k * dataStrides_[size_t(axis_)]) * int64_t(elem_);
        postCopy_.runRange(o, src, 0, postCount_);
      }
    });
  }

private:
  static int64_t offsetOf(int64_t pos, const std::vector<int64_t> &shape,
                          const std::vector<int64_t> &strides, int64_t base) {
    for (size_t d = shape.size(); d-- > 0;) {
      base += (pos % shape[d]) * strides[d];
      pos /= shape[d];
    }
    return base;
  }

  int64_t axis_;
  size_t elem_ = 0;
  bool index64_ = false;
  int64_t axisLen_ = 0, postCount_ = 0;
  std::vector<int64_t> dataStrides_, pre_, post_, idxShape_, idxStrides_, outPre_, outIdx_, outPost_;
  CopyPlan postCopy_;
};

std::unique_ptr<Kernel> makeGather(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(2, 2);
  r.expectOutputs(1, 1);
  const KernelOperand &data = r.input(0, "data"), &indices = r.input(1, "indices");
  r.expectDType(indices, "indices", DTypeClass::Index);
  int64_t axis = r.getInt("axis", 0);
  int64_t rank = int64_t(data.shape.size());
  if (axis < 0 || axis >= rank)
    r.error(cat("axis ", axis, " is out of range for rank ", rank));
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  r.expectSameDType(data, "data", r.output(0), "output");
  r.expectShape(r.output(0), "output", shape);
  return std::make_unique<GatherKernel>(data, indices, r.output(0), axis);
}

class GatherElementsKernel final : public KernelBase {
public:
  GatherElementsKernel(const KernelOperand &data, const KernelOperand &indices,
                       const KernelOperand &out, int64_t axis)
      : axis_(size_t(axis)), shape_(indices.shape) {
    elem_ = cgc_dtype_size(data.dtype);
    index64_ = indices.dtype == CGC_DTYPE_INT64;
    dataShape_ = data.shape;
    dataStrides_ = data.effectiveStrides();
    idxStrides_ = indices.effectiveStrides();
    outStrides_ = out.effectiveStrides();
    description_ = cat("gather_elements ", dtypeName(data.dtype), " ", shapeStr(data.shape),
                       " axis ", axis);
  }

  void run(const KernelArgs &args, ThreadPool &pool) const override {
    const char *data = static_cast<const char *>(args.inputs[0]);
    const char *idx = static_cast<const char *>(args.inputs[1]);
    char *out = static_cast<char *>(args.outputs[0]);
    const int64_t total = numElements(shape_);
    const size_t rank = shape_.size();
    const int64_t isz = index64_ ? 8 : 4;
    pool.parallelFor(total, 16384, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        int64_t rem = t, dOff = 0, iOff = 0, oOff = 0;
        for (size_t d = rank; d-- > 0;) {
          int64_t c = rem % shape_[d];
          rem /= shape_[d];
          iOff += c * idxStrides_[d];
          oOff += c * outStrides_[d];
          if (d != axis_)
            dOff += c * dataStrides_[d];
        }
        const char *ip = idx + iOff * isz;
        const int64_t index = index64_ ? readIndex<int64_t>(ip) : readIndex<int32_t>(ip);
        int64_t len = dataShape_[axis_];
        int64_t k = index < 0 ? index + len : index;
        char *o = out + oOff * int64_t(elem_);
        if (k < 0 || k >= len)
          throwIndexOutOfRange(opName(OpKind::GatherElements), index, t, shape_, int64_t(axis_), len);

        std::memcpy(o, data + (dOff + k * dataStrides_[axis_]) * int64_t(elem_), elem_);
      }
    });
  }

private:
  size_t axis_;
  std::vector<int64_t> shape_, dataShape_, dataStrides_, idxStrides_, outStrides_;
  size_t elem_ = 0;
  bool index64_ = false;
};

std::unique_ptr<Kernel> makeGatherElements(const KernelDesc &desc, const KernelOptions &) {
  DescReader r(desc);
  r.expectInputs(2, 2);
  r.expectOutputs(1, 1);
  const KernelOperand &data = r.input(0, "data"), &indices = r.input(1, "indices");
  r.expectDType(indices, "indices", DTypeClass::Index);
  int64_t axis = r.getInt("axis", 0);
  if (indices.shape.size() != data.shape.size())
    r.error(cat("indices rank ", indices.shape.size(), " must equal data rank ",
                data.shape.size()));
  if (axis < 0 || axis >= int64_t(data.shape.size()))
    r.error(cat("axis ", axis, " is out of range for rank ", data.shape.size()));
  for (size_t d = 0; d < data.shape.size(); ++d)
    if (int64_t(d) != axis && indices.shape[d] > data.shape[d])
      r.error(cat("indices dimension ", d, " (", indices.shape[d], ") exceeds the data dimension (",
                  data.shape[d], ")"));
  r.expectSameDType(data, "data", r.output(0), "output");
  r.expectShape(r.output(0), "output", indices.shape);
  return std::make_unique<GatherElementsKernel>(data, indices, r.output(0), axis);
}

} // namespace

void registerMovementOps(std::vector<OpEntry> &ops) {
  ops.push_back({OpKind::Reshape, makeReshape, true});
  ops.push_back({OpKind::Transpose, makeTranspose, true});
  ops.push_back({OpKind::Concat, makeConcat, true});
  ops.push_back({OpKind::Split, makeSplit, true});
  ops.push_back({OpKind::Slice, makeSlice, true});
  ops.push_back({OpKind::Expand, makeExpand, true});
  ops.push_back({OpKind::Tile, makeTile, true});
  ops.push_back({OpKind::DepthToSpace, makeDepthSpace, true});
  ops.push_back({OpKind::SpaceToDepth, makeDepthSpace, true});
  ops.push_back({OpKind::Pad, makePad, true});
  ops.push_back({OpKind::Gather, makeGather, true});
  ops.push_back({OpKind::GatherElements, makeGatherElements, true});
}

} // namespace cgc::cpu
