//===- movement.cpp - Layout, indexing, resampling and detection ops ------===//
//
// Each op maps every output multi-index to what it reads. Layout ops
// (reshape, transpose, concat, split, slice, expand, tile, pad,
// depth_to_space, space_to_depth) and the indexing ops (gather,
// gather_elements; the scatters without a reduction) copy element bytes
// (View::copyFrom), so they are exact for every dtype. Index operands are
// data: a negative index counts from the end once; one still outside its
// dimension fails the evaluation naming the op, the index, its position in
// the indices and the dimension. Resize, upsample and grid_sample
// interpolate in double; non_max_suppression writes a fixed number of rows
// and a count; check copies its input or fails with its message.
//
//===----------------------------------------------------------------------===//

#include "ops.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace cgc::reference {
namespace {

using Shape = std::vector<int64_t>;

std::string str(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string dtypeStr(cgc_dtype_t dtype) {
  const char *name = cgc_dtype_name(dtype);
  return name ? name : "invalid";
}

template <class T> std::string num(T v) { return std::to_string(v); }

bool isIndexDType(cgc_dtype_t dtype) {
  return dtype == CGC_DTYPE_INT32 || dtype == CGC_DTYPE_INT64;
}

//===----------------------------------------------------------------------===//
// Descriptor checks: each returns "" or what is wrong.
//===----------------------------------------------------------------------===//

/// Exactly `inputs` inputs, all present, and `outputs` outputs.
std::string checkArity(const KernelDesc &desc, size_t inputs, size_t outputs) {
  if (desc.inputs.size() != inputs)
    return "expects " + num(inputs) + " inputs, got " + num(desc.inputs.size());
  for (size_t i = 0; i < inputs; ++i)
    if (!desc.inputs[i])
      return "input " + num(i) + " is absent";
  if (desc.outputs.size() != outputs)
    return "expects " + num(outputs) + " outputs, got " + num(desc.outputs.size());
  return "";
}

std::string checkOutput(const KernelDesc &desc, size_t i, cgc_dtype_t dtype, const Shape &shape) {
  const KernelOperand &out = desc.outputs[i];
  if (out.dtype != dtype)
    return "output " + num(i) + " is " + dtypeStr(out.dtype) + ", expected " + dtypeStr(dtype);
  if (out.shape != shape)
    return "output " + num(i) + " has shape " + str(out.shape) + ", expected " + str(shape);
  return "";
}

/// A string attribute, absent (its default) or one of `allowed`.
std::string checkChoice(const KernelDesc &desc, const char *name,
                        std::initializer_list<const char *> allowed) {
  const AttrValue *a = desc.attr(name);
  if (!a)
    return "";
  if (a->kind != AttrValue::Kind::String)
    return std::string("'") + name + "' is not a string";
  for (const char *value : allowed)
    if (a->s == value)
      return "";
  return std::string("unsupported ") + name + " '" + a->s + "'";
}

/// An integer attribute: `required`, or absent (its default).
std::string checkInt(const KernelDesc &desc, const char *name, bool required) {
  const AttrValue *a = desc.attr(name);
  if (!a)
    return required ? std::string("needs an integer '") + name + "'" : "";
  if (a->kind != AttrValue::Kind::Int && a->kind != AttrValue::Kind::Bool)
    return std::string("'") + name + "' is not an integer";
  return "";
}

/// An integer array attribute of `length` entries (absent only when 0).
std::string checkInts(const KernelDesc &desc, const char *name, size_t length) {
  const AttrValue *a = desc.attr(name);
  if (!a && length == 0)
    return "";
  if (!a || a->kind != AttrValue::Kind::Ints)
    return std::string("needs an integer array '") + name + "'";
  if (a->ints.size() != length)
    return std::string("'") + name + "' has " + num(a->ints.size()) + " entries, expected " +
           num(length);
  return "";
}

/// `axis` (attribute "axis", default `fallback`) in [-rank, rank).
std::string checkAxis(const KernelDesc &desc, int64_t rank, bool required, int64_t fallback = 0) {
  if (std::string why = checkInt(desc, "axis", required); !why.empty())
    return why;
  int64_t axis = desc.getInt("axis", fallback);
  if (axis < -rank || axis >= rank)
    return "axis " + num(axis) + " is outside a rank-" + num(rank) + " operand";
  return "";
}

int64_t axisOf(const KernelDesc &desc, int64_t rank, int64_t fallback = 0) {
  int64_t axis = desc.getInt("axis", fallback);
  return axis < 0 ? axis + rank : axis;
}

/// The first non-empty reason.
std::string firstOf(std::initializer_list<std::string> reasons) {
  for (const std::string &why : reasons)
    if (!why.empty())
      return why;
  return "";
}

//===----------------------------------------------------------------------===//
// Evaluation helpers
//===----------------------------------------------------------------------===//

/// Element offsets of `view` in row-major order of its multi-indices.
std::vector<int64_t> rowMajorOffsets(const View &view) {
  std::vector<int64_t> offsets;
  offsets.reserve(size_t(std::max<int64_t>(view.count(), 0)));
  forEachIndex(view.shape, [&](const Shape &index) { offsets.push_back(view.offset(index)); });
  return offsets;
}

/// Copies `src` into `dst` element by element (same dtype and shape;
/// nothing to do when they are the same bytes in the same layout).
void copyAll(const View &dst, const View &src) {
  if (dst.data == src.data && dst.strides == src.strides)
    return;
  forEachIndex(dst.shape, [&](const Shape &index) {
    dst.copyFrom(dst.offset(index), src, src.offset(index));
  });
}

[[noreturn]] void indexOutOfRange(const KernelDesc &desc, int64_t index, const Shape &position,
                                  int64_t dimension, int64_t size) {
  fail(desc.op + ": index " + num(index) + " at indices" + str(position) +
       " is out of range for dimension " + num(dimension) + " of size " + num(size) +
       " (valid: " + num(-size) + " to " + num(size - 1) + ")");
}

/// `index` into a dimension of `size`, negative values counting from the
/// end (once).
int64_t wrapIndex(const KernelDesc &desc, int64_t index, const Shape &position, int64_t dimension,
                  int64_t size) {
  int64_t k = index < 0 ? index + size : index;
  if (k < 0 || k >= size)
    indexOutOfRange(desc, index, position, dimension, size);
  return k;
}

/// a * b, or -1 when it overflows (both >= 0).
int64_t product(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

/// numpy broadcasting of two shapes; false if they do not broadcast.
bool broadcastShapes(const Shape &a, const Shape &b, Shape &result) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    result[i] = da == 1 ? db : da;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// reshape, transpose, concat, split, slice, expand, tile
//===----------------------------------------------------------------------===//

// The elements in row-major order, laid out in the output's shape.
OpDef reshapeOp() {
  OpDef def;
  def.kind = OpKind::Reshape;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    const KernelOperand &out = desc.outputs[0];
    if (desc.attr("shape") && desc.getInts("shape") != out.shape)
      return "'shape' " + str(desc.getInts("shape")) + " differs from the output's " +
             str(out.shape);
    if (out.numElements() != in.numElements())
      return "cannot reshape " + str(in.shape) + " to " + str(out.shape);
    return checkOutput(desc, 0, in.dtype, out.shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    std::vector<int64_t> src = rowMajorOffsets(in), dst = rowMajorOffsets(out);
    for (size_t i = 0; i < dst.size(); ++i)
      out.copyFrom(dst[i], in, src[i]);
  };
  return def;
}

// Output dimension i is input dimension perm[i].
OpDef transposeOp() {
  OpDef def;
  def.kind = OpKind::Transpose;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    size_t rank = in.shape.size();
    if (std::string why = checkInts(desc, "perm", rank); !why.empty())
      return why;
    Shape perm = desc.getInts("perm"), shape;
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(rank) || seen[size_t(p)])
        return "perm " + str(perm) + " is not a permutation of [0, " + num(rank) + ")";
      seen[size_t(p)] = true;
      shape.push_back(in.shape[size_t(p)]);
    }
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    Shape perm = desc.getInts("perm"), src(perm.size());
    forEachIndex(out.shape, [&](const Shape &index) {
      for (size_t i = 0; i < perm.size(); ++i)
        src[size_t(perm[i])] = index[i];
      out.copyFrom(out.offset(index), in, in.offset(src));
    });
  };
  return def;
}

// The inputs one after another along `axis` (negative: from the end).
OpDef concatOp() {
  OpDef def;
  def.kind = OpKind::Concat;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (desc.inputs.empty())
      return "needs at least one input";
    if (std::string why = checkArity(desc, desc.inputs.size(), 1); !why.empty())
      return why;
    const KernelOperand &first = *desc.inputs[0];
    int64_t rank = int64_t(first.shape.size());
    if (rank == 0)
      return "cannot concatenate rank-0 operands";
    if (std::string why = checkAxis(desc, rank, true); !why.empty())
      return why;
    size_t axis = size_t(axisOf(desc, rank));
    Shape shape = first.shape;
    shape[axis] = 0;
    for (size_t i = 0; i < desc.inputs.size(); ++i) {
      const KernelOperand &in = *desc.inputs[i];
      if (in.dtype != first.dtype || in.shape.size() != first.shape.size())
        return "input " + num(i) + " (" + dtypeStr(in.dtype) + " " + str(in.shape) +
               ") differs from input 0 in dtype or rank";
      for (size_t d = 0; d < first.shape.size(); ++d)
        if (d != axis && in.shape[d] != first.shape[d])
          return "input " + num(i) + " differs from input 0 in dimension " + num(d);
      shape[axis] += in.shape[axis];
    }
    return checkOutput(desc, 0, first.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &out = ops.out[0];
    size_t axis = size_t(axisOf(desc, out.rank()));
    int64_t at = 0;
    for (size_t i = 0; i < desc.inputs.size(); ++i) {
      const View &in = ops.input(desc, i);
      forEachIndex(in.shape, [&](const Shape &index) {
        Shape dst = index;
        dst[axis] += at;
        out.copyFrom(out.offset(dst), in, in.offset(index));
      });
      at += in.shape[axis];
    }
  };
  return def;
}

// Consecutive pieces along `axis`, output i taking `sizes[i]` (which the
// output shapes repeat).
OpDef splitOp() {
  OpDef def;
  def.kind = OpKind::Split;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (desc.outputs.empty())
      return "needs at least one output";
    if (std::string why = checkArity(desc, 1, desc.outputs.size()); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    int64_t rank = int64_t(in.shape.size());
    if (rank == 0)
      return "cannot split a rank-0 operand";
    if (std::string why = checkAxis(desc, rank, true); !why.empty())
      return why;
    size_t axis = size_t(axisOf(desc, rank));
    if (desc.attr("sizes")) {
      if (std::string why = checkInts(desc, "sizes", desc.outputs.size()); !why.empty())
        return why;
    }
    Shape sizes = desc.getInts("sizes");
    int64_t total = 0;
    for (size_t i = 0; i < desc.outputs.size(); ++i) {
      Shape shape = in.shape;
      const Shape &outShape = desc.outputs[i].shape;
      shape[axis] =
          sizes.empty() ? (outShape.size() == in.shape.size() ? outShape[axis] : 0) : sizes[i];
      if (shape[axis] < 0)
        return "'sizes' " + str(sizes) + " has a negative entry";
      if (std::string why = checkOutput(desc, i, in.dtype, shape); !why.empty())
        return why;
      total += shape[axis];
    }
    if (total != in.shape[axis])
      return "the pieces add up to " + num(total) + " but dimension " + num(axis) + " is " +
             num(in.shape[axis]);
    return "";
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0);
    size_t axis = size_t(axisOf(desc, in.rank()));
    int64_t at = 0;
    for (const View &out : ops.out) {
      forEachIndex(out.shape, [&](const Shape &index) {
        Shape src = index;
        src[axis] += at;
        out.copyFrom(out.offset(index), in, in.offset(src));
      });
      at += out.shape[axis];
    }
  };
  return def;
}

/// The number of elements slice (start, end, step) takes from a dimension
/// of `dim`, or -1 when the values are not normalized (CGCOpOps.td: for a
/// positive step 0 <= start, end <= dim; for a negative one -1 <= start,
/// end <= dim - 1, an end of -1 meaning "through index 0").
int64_t sliceCount(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (step == 0)
    return -1;
  if (step > 0 ? start < 0 || start > dim || end < 0 || end > dim
               : start < -1 || start > dim - 1 || end < -1 || end > dim - 1)
    return -1;
  int64_t range = step > 0 ? end - start : start - end;
  int64_t magnitude = step > 0 ? step : -std::max(step, -dim - 1); // no overflow for INT64_MIN
  return range > 0 ? (range - 1) / magnitude + 1 : 0;
}

// Per dimension: starts[d], starts[d] + steps[d], ... while before ends[d]
// (after it for a negative step); one normalized entry per dimension.
OpDef sliceOp() {
  OpDef def;
  def.kind = OpKind::Slice;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    size_t rank = in.shape.size();
    if (std::string why = firstOf({checkInts(desc, "starts", rank), checkInts(desc, "ends", rank),
                                   checkInts(desc, "steps", rank)});
        !why.empty())
      return why;
    Shape starts = desc.getInts("starts"), ends = desc.getInts("ends"),
          steps = desc.getInts("steps"), shape;
    for (size_t d = 0; d < rank; ++d) {
      int64_t count = sliceCount(in.shape[d], starts[d], ends[d], steps[d]);
      if (count < 0)
        return "slice from " + num(starts[d]) + " to " + num(ends[d]) + " by " + num(steps[d]) +
               " of dimension " + num(d) + " (size " + num(in.shape[d]) + ") is not normalized";
      shape.push_back(count);
    }
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    Shape starts = desc.getInts("starts"), steps = desc.getInts("steps"), src(starts.size());
    forEachIndex(out.shape, [&](const Shape &index) {
      for (size_t d = 0; d < src.size(); ++d)
        src[d] = starts[d] + index[d] * steps[d];
      out.copyFrom(out.offset(index), in, in.offset(src));
    });
  };
  return def;
}

// numpy broadcasting of the input against `shape`.
OpDef expandOp() {
  OpDef def;
  def.kind = OpKind::Expand;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    const AttrValue *a = desc.attr("shape");
    if (!a || a->kind != AttrValue::Kind::Ints)
      return "needs an integer array 'shape'";
    Shape target = a->ints, shape;
    for (int64_t d : target)
      if (d < 0)
        return "'shape' " + str(target) + " has a negative entry";
    if (!broadcastShapes(in.shape, target, shape))
      return "input shape " + str(in.shape) + " does not broadcast with " + str(target);
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    forEachIndex(out.shape, [&](const Shape &index) {
      out.copyFrom(out.offset(index), in, in.offset(broadcastIndex(index, in.shape)));
    });
  };
  return def;
}

// The input repeated repeats[d] times along each dimension d.
OpDef tileOp() {
  OpDef def;
  def.kind = OpKind::Tile;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    if (std::string why = checkInts(desc, "repeats", in.shape.size()); !why.empty())
      return why;
    Shape repeats = desc.getInts("repeats"), shape;
    for (size_t d = 0; d < repeats.size(); ++d) {
      if (repeats[d] < 0 || product(in.shape[d], repeats[d]) < 0)
        return "'repeats' " + str(repeats) + " has a negative or too large entry";
      shape.push_back(in.shape[d] * repeats[d]);
    }
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    Shape src(in.shape.size());
    forEachIndex(out.shape, [&](const Shape &index) {
      for (size_t d = 0; d < src.size(); ++d)
        src[d] = index[d] % in.shape[d];
      out.copyFrom(out.offset(index), in, in.offset(src));
    });
  };
  return def;
}

//===----------------------------------------------------------------------===//
// pad, depth_to_space, space_to_depth
//===----------------------------------------------------------------------===//

/// Where output position `o` of a padded dimension reads (input size `n`,
/// `before` added in front), or -1 for the constant. Reflection mirrors
/// about the first and last elements without repeating them, again and
/// again for pads wider than the dimension (numpy's "reflect").
int64_t padSource(const std::string &mode, int64_t o, int64_t before, int64_t n) {
  int64_t i = o - before;
  if (i >= 0 && i < n)
    return i;
  if (mode == "constant")
    return -1;
  if (mode == "edge" || n == 1)
    return std::clamp<int64_t>(i, 0, n - 1);
  int64_t period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

// ONNX Pad: pads[d] elements before and pads[rank + d] after dimension d
// (negative values crop); the output reads the input at o - pads[d], and
// outside it `value` (constant), the nearest element (edge) or the mirror
// image (reflect).
OpDef padOp() {
  OpDef def;
  def.kind = OpKind::Pad;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    size_t rank = in.shape.size();
    if (std::string why = firstOf({checkInts(desc, "pads", 2 * rank),
                                   checkChoice(desc, "mode", {"constant", "reflect", "edge"})});
        !why.empty())
      return why;
    if (const AttrValue *v = desc.attr("value");
        v && v->kind != AttrValue::Kind::Float && v->kind != AttrValue::Kind::Int)
      return "'value' is not a number";
    std::string mode = desc.getString("mode", "constant");
    Shape pads = desc.getInts("pads"), shape;
    for (size_t d = 0; d < rank; ++d) {
      int64_t size;
      if (__builtin_add_overflow(in.shape[d], pads[d], &size) ||
          __builtin_add_overflow(size, pads[rank + d], &size))
        return "'pads' " + str(pads) + " overflow";
      if (size < 0)
        return "padding makes dimension " + num(d) + " negative (" + num(size) + ")";
      if (mode != "constant" && in.shape[d] == 0 && size > 0)
        return mode + " padding of the empty dimension " + num(d);
      shape.push_back(size);
    }
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    std::string mode = desc.getString("mode", "constant");
    double value = desc.getFloat("value", 0.0);
    Shape pads = desc.getInts("pads"), src(in.shape.size());
    size_t rank = src.size();
    forEachIndex(out.shape, [&](const Shape &index) {
      for (size_t d = 0; d < rank; ++d) {
        src[d] = padSource(mode, index[d], pads[d], in.shape[d]);
        if (src[d] < 0) {
          out.set(out.offset(index), value);
          return;
        }
      }
      out.copyFrom(out.offset(index), in, in.offset(src));
    });
  };
  return def;
}

// ONNX DepthToSpace: output[n, c, h*b + i, w*b + j] reads input channel
// (i*b + j) * C/(b*b) + c in DCR mode, c * b*b + i*b + j in CRD mode.
OpDef depthToSpaceOp() {
  OpDef def;
  def.kind = OpKind::DepthToSpace;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = firstOf({checkArity(desc, 1, 1), checkInt(desc, "blocksize", true),
                                   checkChoice(desc, "mode", {"DCR", "CRD"})});
        !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    int64_t b = desc.getInt("blocksize", 0);
    if (in.shape.size() != 4)
      return "input must be N x C x H x W";
    const Shape &s = in.shape;
    if (b < 1 || b > (1 << 20) || s[1] % (b * b) != 0 || product(s[2], b * b) < 0 ||
        product(s[3], b * b) < 0)
      return "channels (" + num(s[1]) + ") are not a multiple of blocksize^2 (blocksize " + num(b) +
             ")";
    return checkOutput(desc, 0, in.dtype, {s[0], s[1] / (b * b), s[2] * b, s[3] * b});
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    int64_t b = desc.getInt("blocksize", 1), channels = out.shape[1];
    bool dcr = desc.getString("mode", "DCR") == "DCR";
    forEachIndex(out.shape, [&](const Shape &index) {
      int64_t c = index[1], i = index[2] % b, j = index[3] % b;
      int64_t ic = dcr ? (i * b + j) * channels + c : c * b * b + i * b + j;
      out.copyFrom(out.offset(index), in, in.offset({index[0], ic, index[2] / b, index[3] / b}));
    });
  };
  return def;
}

// ONNX SpaceToDepth: output[n, (i*b + j) * C + c, h, w] reads
// input[n, c, h*b + i, w*b + j].
OpDef spaceToDepthOp() {
  OpDef def;
  def.kind = OpKind::SpaceToDepth;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = firstOf({checkArity(desc, 1, 1), checkInt(desc, "blocksize", true)});
        !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    int64_t b = desc.getInt("blocksize", 0);
    if (in.shape.size() != 4)
      return "input must be N x C x H x W";
    const Shape &s = in.shape;
    if (b < 1 || b > (1 << 20) || s[2] % b != 0 || s[3] % b != 0 || product(s[1], b * b) < 0)
      return "height and width (" + num(s[2]) + ", " + num(s[3]) +
             ") are not multiples of blocksize " + num(b);
    return checkOutput(desc, 0, in.dtype, {s[0], s[1] * b * b, s[2] / b, s[3] / b});
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    int64_t b = desc.getInt("blocksize", 1), channels = in.shape[1];
    forEachIndex(out.shape, [&](const Shape &index) {
      int64_t c = index[1] % channels, block = index[1] / channels;
      int64_t i = block / b, j = block % b;
      out.copyFrom(out.offset(index), in,
                   in.offset({index[0], c, index[2] * b + i, index[3] * b + j}));
    });
  };
  return def;
}

//===----------------------------------------------------------------------===//
// gather, gather_elements, scatter_elements, scatter_nd
//===----------------------------------------------------------------------===//

// ONNX Gather: output[pre..., idx..., post...] =
// data[pre..., indices[idx...], post...].
OpDef gatherOp() {
  OpDef def;
  def.kind = OpKind::Gather;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 2, 1); !why.empty())
      return why;
    const KernelOperand &data = *desc.inputs[0], &indices = *desc.inputs[1];
    if (!isIndexDType(indices.dtype))
      return "indices must be int32 or int64, not " + dtypeStr(indices.dtype);
    int64_t rank = int64_t(data.shape.size());
    if (rank == 0)
      return "data must have rank >= 1";
    if (std::string why = checkAxis(desc, rank, false); !why.empty())
      return why;
    int64_t axis = axisOf(desc, rank);
    Shape shape(data.shape.begin(), data.shape.begin() + axis);
    shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
    shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
    return checkOutput(desc, 0, data.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &data = ops.input(desc, 0), &indices = ops.input(desc, 1), &out = ops.out[0];
    size_t axis = size_t(axisOf(desc, data.rank())), q = indices.shape.size();
    forEachIndex(out.shape, [&](const Shape &index) {
      Shape position(index.begin() + axis, index.begin() + axis + q);
      int64_t k = wrapIndex(desc, indices.getInt(indices.offset(position)), position, int64_t(axis),
                            data.shape[axis]);
      Shape src(index.begin(), index.begin() + axis);
      src.push_back(k);
      src.insert(src.end(), index.begin() + axis + q, index.end());
      out.copyFrom(out.offset(index), data, data.offset(src));
    });
  };
  return def;
}

/// Checks shared by gather_elements and scatter_elements: `indices` has
/// the rank of `data` and, off the axis, no dimension larger than data's.
std::string checkElementIndices(const KernelDesc &desc, const KernelOperand &data,
                                const KernelOperand &indices) {
  if (!isIndexDType(indices.dtype))
    return "indices must be int32 or int64, not " + dtypeStr(indices.dtype);
  int64_t rank = int64_t(data.shape.size());
  if (int64_t(indices.shape.size()) != rank)
    return "indices rank " + num(indices.shape.size()) + " differs from data rank " + num(rank);
  if (rank == 0)
    return "data must have rank >= 1";
  if (std::string why = checkAxis(desc, rank, false); !why.empty())
    return why;
  int64_t axis = axisOf(desc, rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape[size_t(d)] > data.shape[size_t(d)])
      return "indices dimension " + num(d) + " (" + num(indices.shape[size_t(d)]) +
             ") exceeds the data's (" + num(data.shape[size_t(d)]) + ")";
  return "";
}

// ONNX GatherElements: output[p] = data[p with coordinate axis replaced by
// indices[p]].
OpDef gatherElementsOp() {
  OpDef def;
  def.kind = OpKind::GatherElements;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 2, 1); !why.empty())
      return why;
    const KernelOperand &data = *desc.inputs[0], &indices = *desc.inputs[1];
    if (std::string why = checkElementIndices(desc, data, indices); !why.empty())
      return why;
    return checkOutput(desc, 0, data.dtype, indices.shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &data = ops.input(desc, 0), &indices = ops.input(desc, 1), &out = ops.out[0];
    size_t axis = size_t(axisOf(desc, data.rank()));
    forEachIndex(indices.shape, [&](const Shape &index) {
      Shape src = index;
      src[axis] = wrapIndex(desc, indices.getInt(indices.offset(index)), index, int64_t(axis),
                            data.shape[axis]);
      out.copyFrom(out.offset(index), data, data.offset(src));
    });
  };
  return def;
}

enum class Reduction { None, Add, Mul, Max, Min };

Reduction reductionOf(const KernelDesc &desc) {
  std::string s = desc.getString("reduction", "none");
  return s == "add"   ? Reduction::Add
         : s == "mul" ? Reduction::Mul
         : s == "max" ? Reduction::Max
         : s == "min" ? Reduction::Min
                      : Reduction::None;
}

/// The reduction attribute and the dtypes of a scatter (data, updates,
/// output alike; no arithmetic reduction on bool).
std::string checkScatter(const KernelDesc &desc) {
  const KernelOperand &data = *desc.inputs[0], &updates = *desc.inputs[2];
  if (std::string why = checkChoice(desc, "reduction", {"none", "add", "mul", "max", "min"});
      !why.empty())
    return why;
  if (updates.dtype != data.dtype)
    return "updates are " + dtypeStr(updates.dtype) + ", data " + dtypeStr(data.dtype);
  if (data.dtype == CGC_DTYPE_BOOL && reductionOf(desc) != Reduction::None)
    return "reduction '" + desc.getString("reduction", "none") + "' on bool";
  return checkOutput(desc, 0, data.dtype, data.shape);
}

/// out[off] = reduction(out[off], updates[updOff]), in order. max and min
/// keep the value there unless the update is strictly greater (smaller),
/// as ONNX's reference (Python's max/min) and std::max do. Integers are
/// exact (add and mul wrap).
void combine(Reduction reduction, const View &out, int64_t off, const View &updates,
             int64_t updOff) {
  if (reduction == Reduction::None) {
    out.copyFrom(off, updates, updOff);
    return;
  }
  if (isInteger(out.dtype)) {
    int64_t a = out.getInt(off), b = updates.getInt(updOff);
    bool isU64 = out.dtype == CGC_DTYPE_UINT64;
    auto less = [&](int64_t x, int64_t y) { return isU64 ? uint64_t(x) < uint64_t(y) : x < y; };
    int64_t r = a;
    switch (reduction) {
    case Reduction::Add: r = int64_t(uint64_t(a) + uint64_t(b)); break;
    case Reduction::Mul: r = int64_t(uint64_t(a) * uint64_t(b)); break;
    case Reduction::Max: r = less(a, b) ? b : a; break;
    case Reduction::Min: r = less(b, a) ? b : a; break;
    case Reduction::None: break;
    }
    out.setInt(off, r);
    return;
  }
  double a = out.get(off), b = updates.get(updOff), r = a;
  switch (reduction) {
  case Reduction::Add: r = a + b; break;
  case Reduction::Mul: r = a * b; break;
  case Reduction::Max: r = b > a ? b : a; break;
  case Reduction::Min: r = b < a ? b : a; break;
  case Reduction::None: break;
  }
  out.set(off, r);
}

// ONNX ScatterElements: the output is data, then for every position p of
// indices in row-major order, the element at p with coordinate axis
// replaced by indices[p] receives (or is combined with) updates[p].
OpDef scatterElementsOp() {
  OpDef def;
  def.kind = OpKind::ScatterElements;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 3, 1); !why.empty())
      return why;
    const KernelOperand &data = *desc.inputs[0], &indices = *desc.inputs[1],
                        &updates = *desc.inputs[2];
    if (std::string why = checkElementIndices(desc, data, indices); !why.empty())
      return why;
    if (updates.shape != indices.shape)
      return "updates shape " + str(updates.shape) + " differs from indices shape " +
             str(indices.shape);
    return checkScatter(desc);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &data = ops.input(desc, 0), &indices = ops.input(desc, 1),
               &updates = ops.input(desc, 2), &out = ops.out[0];
    size_t axis = size_t(axisOf(desc, data.rank()));
    Reduction reduction = reductionOf(desc);
    copyAll(out, data);
    forEachIndex(indices.shape, [&](const Shape &index) {
      Shape dst = index;
      dst[axis] = wrapIndex(desc, indices.getInt(indices.offset(index)), index, int64_t(axis),
                            data.shape[axis]);
      combine(reduction, out, out.offset(dst), updates, updates.offset(index));
    });
  };
  return def;
}

// ONNX ScatterND: the output is data; each index tuple indices[t, :] (k
// components, in row-major order of t) addresses the slice
// data[i_0, ..., i_(k-1)] of shape data.shape[k:], which receives (or is
// combined with) updates[t].
OpDef scatterNDOp() {
  OpDef def;
  def.kind = OpKind::ScatterND;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 3, 1); !why.empty())
      return why;
    const KernelOperand &data = *desc.inputs[0], &indices = *desc.inputs[1],
                        &updates = *desc.inputs[2];
    if (!isIndexDType(indices.dtype))
      return "indices must be int32 or int64, not " + dtypeStr(indices.dtype);
    if (indices.shape.empty())
      return "indices must have rank >= 1";
    int64_t k = indices.shape.back();
    if (k < 0 || k > int64_t(data.shape.size()))
      return "index tuples of length " + num(k) + " for rank-" + num(data.shape.size()) + " data";
    Shape expected(indices.shape.begin(), indices.shape.end() - 1);
    expected.insert(expected.end(), data.shape.begin() + k, data.shape.end());
    if (updates.shape != expected)
      return "updates shape " + str(updates.shape) + ", expected " + str(expected);
    return checkScatter(desc);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &data = ops.input(desc, 0), &indices = ops.input(desc, 1),
               &updates = ops.input(desc, 2), &out = ops.out[0];
    Reduction reduction = reductionOf(desc);
    size_t k = size_t(indices.shape.back());
    Shape tuples(indices.shape.begin(), indices.shape.end() - 1);
    Shape slice(data.shape.begin() + int64_t(k), data.shape.end());
    copyAll(out, data);
    forEachIndex(tuples, [&](const Shape &t) {
      Shape base, position = t;
      position.push_back(0);
      for (size_t j = 0; j < k; ++j) {
        position.back() = int64_t(j);
        base.push_back(wrapIndex(desc, indices.getInt(indices.offset(position)), position,
                                 int64_t(j), data.shape[j]));
      }
      forEachIndex(slice, [&](const Shape &s) {
        Shape dst = base, src = t;
        dst.insert(dst.end(), s.begin(), s.end());
        src.insert(src.end(), s.begin(), s.end());
        combine(reduction, out, out.offset(dst), updates, updates.offset(src));
      });
    });
  };
  return def;
}

//===----------------------------------------------------------------------===//
// resize, upsample
//===----------------------------------------------------------------------===//

// Follows ONNX's reference implementation (onnx/reference/ops/op_resize.py,
// _interpolate_1d_with_x and _get_neighbor): per dimension, output index x
// maps to a source coordinate x_ori by the coordinate transformation mode
// (with output_width = scale * input length, unrounded); its taps are the n
// nearest indices (n = 2 for nearest and linear, 4 for cubic; ties to the
// lower index) of the input edge-padded by ceil(n / 2), so taps past an
// edge read the edge element; the weights come from
// ratio = x_ori - floor(x_ori), or 1 when x_ori is an integer (the left
// neighbour is preferred). exclude_outside zeroes the weights of taps
// outside the input and renormalizes the rest. tf_crop_and_resize returns
// extrapolation_value for a coordinate outside [0, length - 1]. The N-d
// value is the nested 1-D interpolation, the innermost dimension first.
// Zero-weight taps are left out (the reference multiplies them, so a NaN
// or infinity there would reach the result).

struct ResizeSpec {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
  std::vector<double> scales;
  std::vector<double> roi; // starts then ends; empty unless tf_crop_and_resize
};

struct Taps {
  /// tf_crop_and_resize outside the input: the extrapolation value.
  bool outside = false;
  std::vector<std::pair<int64_t, double>> taps; // (input index, weight)
};

std::vector<double> resizeCoeffs(const ResizeSpec &spec, double ratio) {
  if (spec.mode == "linear")
    return {1 - ratio, ratio};
  if (spec.mode == "cubic") {
    const double A = spec.cubicA, r = ratio, s = 1 - ratio;
    return {
        ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
        ((A + 2) * r - (A + 3)) * r * r + 1,
        ((A + 2) * s - (A + 3)) * s * s + 1,
        ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A,
    };
  }
  if (ratio == 1.0) // an integer coordinate: the right one of (x - 1, x)
    return {0, 1};
  if (spec.nearest == "round_prefer_ceil")
    return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
  if (spec.nearest == "floor")
    return {1, 0};
  if (spec.nearest == "ceil")
    return {0, 1};
  return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0}; // round_prefer_floor
}

/// The taps of output index `x` of dimension `dim` (input length `in`,
/// output length `out`).
Taps resizeTaps(const ResizeSpec &spec, size_t dim, int64_t in, int64_t out, double x) {
  const double scale = spec.scales[dim], inLen = double(in);
  const double outWidth = scale * inLen;
  const std::string &c = spec.coord;
  double xo;
  if (c == "align_corners") {
    xo = outWidth == 1 ? 0.0 : x * (inLen - 1) / (outWidth - 1);
  } else if (c == "asymmetric") {
    xo = x / scale;
  } else if (c == "tf_crop_and_resize") {
    double start = spec.roi[dim], end = spec.roi[spec.roi.size() / 2 + dim];
    xo = outWidth == 1 ? (end - start) * (inLen - 1) / 2
                       : x * (end - start) * (inLen - 1) / (outWidth - 1);
    xo += start * (inLen - 1);
    if (xo < 0 || xo > inLen - 1)
      return Taps{true, {}};
  } else if (c == "pytorch_half_pixel") {
    xo = outWidth == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  } else if (c == "half_pixel_symmetric") {
    double adjustment = double(out) / outWidth, center = inLen / 2;
    xo = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
  } else if (c == "tf_half_pixel_for_nn") { // opset 11
    xo = (x + 0.5) / scale;
  } else { // half_pixel
    xo = (x + 0.5) / scale - 0.5;
  }
  const double floorXo = std::floor(xo);
  std::vector<double> coeffs = resizeCoeffs(spec, xo == floorXo ? 1.0 : xo - floorXo);
  // The n nearest of the padded indices [0, in + 2 * pad) to xo + pad.
  const int64_t n = int64_t(coeffs.size()), pad = (n + 1) / 2;
  double start = std::ceil(xo + double(pad)) - double(n / 2);
  start = std::isnan(start) ? 0.0 : std::clamp(start, 0.0, double(in + 2 * pad - n));
  const int64_t first = int64_t(start) - pad; // in the input's coordinates
  if (spec.excludeOutside) {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (first + i < 0 || first + i >= in)
        coeffs[size_t(i)] = 0;
      sum += coeffs[size_t(i)];
    }
    if (sum != 0) // the reference divides 0 by 0 here (and fails for nearest)
      for (double &w : coeffs)
        w /= sum;
  }
  Taps taps;
  for (int64_t i = 0; i < n; ++i)
    if (coeffs[size_t(i)] != 0)
      taps.taps.push_back({std::clamp<int64_t>(first + i, 0, in - 1), coeffs[size_t(i)]});
  return taps;
}

/// The interpolated value at the taps `table[d][index[d]]`, from dimension
/// `d` inward, with `src` holding the input coordinates of the outer ones.
double resizeValue(const View &in, const std::vector<std::vector<Taps>> &table,
                   const ResizeSpec &spec, const Shape &index, Shape &src, size_t d) {
  if (d == index.size())
    return in.at(src);
  const Taps &t = table[d][size_t(index[d])];
  if (t.outside)
    return spec.extrapolation;
  double acc = 0;
  for (const auto &[i, w] : t.taps) {
    src[d] = i;
    acc += w * resizeValue(in, table, spec, index, src, d + 1);
  }
  return acc;
}

void runResize(const ResizeSpec &spec, const View &in, const View &out) {
  std::vector<std::vector<Taps>> table(in.shape.size());
  for (size_t d = 0; d < table.size(); ++d)
    for (int64_t x = 0; x < out.shape[d]; ++x)
      table[d].push_back(resizeTaps(spec, d, in.shape[d], out.shape[d], double(x)));
  Shape src(in.shape.size());
  forEachIndex(out.shape, [&](const Shape &index) {
    out.set(out.offset(index), resizeValue(in, table, spec, index, src, 0));
  });
}

/// A numeric dtype, and no output element without an input to read.
std::string checkResample(const KernelOperand &in, const Shape &outShape) {
  if (!isFloat(in.dtype) && !isInteger(in.dtype))
    return "input must be numeric, not " + dtypeStr(in.dtype);
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (in.shape[d] == 0 && outShape[d] > 0)
      return "cannot resize the empty dimension " + num(d) + " to " + num(outShape[d]);
  return "";
}

// ONNX Resize with the kernel form's attributes: the output shape
// (`sizes`), one scale per dimension (the importer's, sizes / input when
// ONNX gave sizes), and roi only with tf_crop_and_resize (default: the
// whole input). No antialias, axes or keep_aspect_ratio_policy.
OpDef resizeOp() {
  OpDef def;
  def.kind = OpKind::Resize;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 1, 1); !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    size_t rank = in.shape.size();
    if (std::string why =
            firstOf({checkInts(desc, "sizes", rank),
                     checkChoice(desc, "mode", {"nearest", "linear", "cubic"}),
                     checkChoice(desc, "coordinate_transformation_mode",
                                 {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                  "align_corners", "asymmetric", "tf_crop_and_resize",
                                  "tf_half_pixel_for_nn"}),
                     checkChoice(desc, "nearest_mode",
                                 {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})});
        !why.empty())
      return why;
    Shape sizes = desc.getInts("sizes");
    std::vector<double> scales = desc.getFloats("scales"), roi = desc.getFloats("roi");
    if (scales.size() != rank)
      return "'scales' has " + num(scales.size()) + " entries, expected " + num(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (sizes[d] < 0)
        return "'sizes' " + str(sizes) + " has a negative entry";
      if (sizes[d] > 0 && !(scales[d] > 0 && std::isfinite(scales[d])))
        return "scale " + std::to_string(scales[d]) + " of dimension " + num(d);
    }
    if (!roi.empty() && roi.size() != 2 * rank)
      return "'roi' has " + num(roi.size()) + " entries, expected " + num(2 * rank);
    if (std::string why = checkResample(in, sizes); !why.empty())
      return why;
    return checkOutput(desc, 0, in.dtype, sizes);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    ResizeSpec spec;
    spec.mode = desc.getString("mode", "nearest");
    spec.coord = desc.getString("coordinate_transformation_mode", "half_pixel");
    spec.nearest = desc.getString("nearest_mode", "round_prefer_floor");
    spec.cubicA = desc.getFloat("cubic_coeff_a", -0.75);
    spec.excludeOutside = desc.getBool("exclude_outside", false);
    spec.extrapolation = desc.getFloat("extrapolation_value", 0.0);
    spec.scales = desc.getFloats("scales");
    if (spec.coord == "tf_crop_and_resize") {
      spec.roi = desc.getFloats("roi");
      if (spec.roi.empty()) {
        spec.roi.assign(in.shape.size(), 0.0);
        spec.roi.resize(2 * in.shape.size(), 1.0);
      }
    }
    runResize(spec, in, out);
  };
  return def;
}

// The last len(scale_size) dimensions scaled by integer factors: nearest
// repeats (output i reads input floor(i / s): asymmetric, floor), linear
// interpolates with half-pixel centers (Resize's half_pixel linear).
OpDef upsampleOp() {
  OpDef def;
  def.kind = OpKind::Upsample;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why =
            firstOf({checkArity(desc, 1, 1), checkChoice(desc, "mode", {"nearest", "linear"})});
        !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0];
    const AttrValue *a = desc.attr("scale_size");
    if (!a || a->kind != AttrValue::Kind::Ints)
      return "needs an integer array 'scale_size'";
    Shape factors = a->ints, shape = in.shape;
    if (factors.empty() || factors.size() > shape.size())
      return "'scale_size' has " + num(factors.size()) + " entries for a rank-" +
             num(shape.size()) + " input";
    for (size_t i = 0; i < factors.size(); ++i) {
      int64_t &dim = shape[shape.size() - factors.size() + i];
      if (factors[i] < 1 || product(dim, factors[i]) < 0)
        return "'scale_size' " + str(factors) + " has an entry below 1 or too large";
      dim *= factors[i];
    }
    if (std::string why = checkResample(in, shape); !why.empty())
      return why;
    return checkOutput(desc, 0, in.dtype, shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &out = ops.out[0];
    Shape factors = desc.getInts("scale_size");
    ResizeSpec spec;
    spec.scales.assign(in.shape.size(), 1.0);
    for (size_t i = 0; i < factors.size(); ++i)
      spec.scales[in.shape.size() - factors.size() + i] = double(factors[i]);
    if (desc.getString("mode", "nearest") == "linear") {
      spec.mode = "linear";
      spec.coord = "half_pixel";
    } else {
      spec.mode = "nearest";
      spec.coord = "asymmetric";
      spec.nearest = "floor";
    }
    runResize(spec, in, out);
  };
  return def;
}

//===----------------------------------------------------------------------===//
// grid_sample
//===----------------------------------------------------------------------===//

// ONNX GridSample-16, which is PyTorch's grid_sampler_2d: a grid location
// (x, y) in [-1, 1] is unnormalized to pixel coordinates; bilinear and
// nearest first apply the padding mode to the coordinate (border: clip to
// [0, size - 1]; reflection: mirror at the pixel centers with
// align_corners, else at the edges, then clip) and read 0 for taps outside
// the image; bicubic applies the padding mode to each of its 4 x 4 taps'
// coordinates and reads 0 for taps still outside.

struct GridSampler {
  std::string mode, padding;
  bool align = false;

  double unnormalize(double v, int64_t size) const {
    return align ? (v + 1) / 2 * double(size - 1) : ((v + 1) * double(size) - 1) / 2;
  }
  static double clip(double v, int64_t size) {
    return std::min(double(size - 1), std::max(v, 0.0));
  }
  /// Mirrors `v` into [low, high] (given doubled).
  static double reflect(double v, double twiceLow, double twiceHigh) {
    if (twiceLow == twiceHigh)
      return 0;
    double low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    v = std::fabs(v - low);
    double extra = std::fmod(v, span), flips = std::floor(v / span);
    return std::fmod(flips, 2) == 0 ? extra + low : span - extra + low;
  }
  double padCoordinate(double v, int64_t size) const {
    if (padding == "border")
      return clip(v, size);
    if (padding == "reflection")
      return clip(
          align ? reflect(v, 0, 2 * double(size - 1)) : reflect(v, -1, 2 * double(size) - 1), size);
    return v;
  }
  static bool inside(const View &image, double x, double y) {
    return x >= 0 && x < double(image.shape[3]) && y >= 0 && y < double(image.shape[2]);
  }
  /// Pixel (x, y) of `image` (the H x W plane at `base`), 0 outside.
  static double pixel(const View &image, const Shape &base, double x, double y) {
    if (!inside(image, x, y))
      return 0;
    return image.at({base[0], base[1], int64_t(y), int64_t(x)});
  }
  static void cubicCoeffs(double t, double c[4]) {
    const double A = -0.75;
    auto near = [&](double x) { return ((A + 2) * x - (A + 3)) * x * x + 1; };
    auto far = [&](double x) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; };
    c[0] = far(t + 1);
    c[1] = near(t);
    c[2] = near(1 - t);
    c[3] = far(2 - t);
  }

  double sample(const View &image, const Shape &base, double gx, double gy) const {
    int64_t h = image.shape[2], w = image.shape[3];
    double x = unnormalize(gx, w), y = unnormalize(gy, h);
    if (mode == "bicubic") {
      double x0 = std::floor(x), y0 = std::floor(y), cx[4], cy[4];
      cubicCoeffs(x - x0, cx);
      cubicCoeffs(y - y0, cy);
      double acc = 0;
      for (int i = 0; i < 4; ++i) {
        double row = 0;
        for (int j = 0; j < 4; ++j)
          row += cx[j] * pixel(image, base, std::trunc(padCoordinate(x0 - 1 + j, w)),
                               std::trunc(padCoordinate(y0 - 1 + i, h)));
        acc += cy[i] * row;
      }
      return acc;
    }
    x = padCoordinate(x, w);
    y = padCoordinate(y, h);
    if (mode == "nearest")
      return pixel(image, base, std::nearbyint(x), std::nearbyint(y));
    // Taps outside the image add nothing (not even a NaN weight times 0).
    double x0 = std::floor(x), y0 = std::floor(y), dx = x - x0, dy = y - y0, acc = 0;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        if (inside(image, x0 + j, y0 + i))
          acc += (i ? dy : 1 - dy) * (j ? dx : 1 - dx) * pixel(image, base, x0 + j, y0 + i);
    return acc;
  }
};

OpDef gridSampleOp() {
  OpDef def;
  def.kind = OpKind::GridSample;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = firstOf(
            {checkArity(desc, 2, 1), checkChoice(desc, "mode", {"bilinear", "nearest", "bicubic"}),
             checkChoice(desc, "padding_mode", {"zeros", "border", "reflection"})});
        !why.empty())
      return why;
    const KernelOperand &in = *desc.inputs[0], &grid = *desc.inputs[1];
    if (!isFloat(in.dtype) || !isFloat(grid.dtype))
      return "input and grid must be floating-point";
    if (in.shape.size() != 4)
      return "input must be N x C x H x W";
    if (grid.shape.size() != 4 || grid.shape[3] != 2 || grid.shape[0] != in.shape[0])
      return "grid must be N x Ho x Wo x 2, got " + str(grid.shape);
    return checkOutput(desc, 0, in.dtype, {in.shape[0], in.shape[1], grid.shape[1], grid.shape[2]});
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &in = ops.input(desc, 0), &grid = ops.input(desc, 1), &out = ops.out[0];
    GridSampler s;
    s.mode = desc.getString("mode", "bilinear");
    s.padding = desc.getString("padding_mode", "zeros");
    s.align = desc.getBool("align_corners", false);
    forEachIndex(out.shape, [&](const Shape &index) {
      int64_t n = index[0], i = index[2], j = index[3];
      double gx = grid.at({n, i, j, 0}), gy = grid.at({n, i, j, 1});
      out.set(out.offset(index), s.sample(in, {n, index[1]}, gx, gy));
    });
  };
  return def;
}

//===----------------------------------------------------------------------===//
// non_max_suppression
//===----------------------------------------------------------------------===//

struct Box {
  double yMin, xMin, yMax, xMax;
};

/// ONNX Runtime's test: the intersection over union exceeds `threshold`;
/// boxes without area overlap nothing.
bool suppresses(const Box &a, const Box &b, double threshold) {
  double height = std::min(a.yMax, b.yMax) - std::max(a.yMin, b.yMin);
  double width = std::min(a.xMax, b.xMax) - std::max(a.xMin, b.xMin);
  if (!(height > 0 && width > 0))
    return false;
  double intersection = height * width;
  double areaA = (a.yMax - a.yMin) * (a.xMax - a.xMin),
         areaB = (b.yMax - b.yMin) * (b.xMax - b.xMin);
  double unionArea = areaA + areaB - intersection;
  if (!(areaA > 0 && areaB > 0 && unionArea > 0))
    return false;
  return intersection / unionArea > threshold;
}

// CGCOpOps.td's non_max_suppression (ONNX NonMaxSuppression with a fixed
// number of rows): per batch b and class c, the boxes whose score exceeds
// score_threshold (every non-NaN score when it is -inf, the importer's
// "absent"), by decreasing score (ties: the lower index first), each kept
// unless it overlaps a kept one by more than iou_threshold, up to
// max_output_boxes_per_class. Rows (b, c, box), then (0, 0, 0) to the end;
// count = the rows selected.
OpDef nonMaxSuppressionOp() {
  OpDef def;
  def.kind = OpKind::NonMaxSuppression;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why =
            firstOf({checkArity(desc, 4, 2), checkInt(desc, "max_output_boxes_per_class", true),
                     checkInt(desc, "center_point_box", false)});
        !why.empty())
      return why;
    const KernelOperand &boxes = *desc.inputs[0], &scores = *desc.inputs[1];
    for (size_t i = 0; i < 4; ++i)
      if (!isFloat(desc.inputs[i]->dtype))
        return "input " + num(i) + " must be floating-point";
    for (size_t i = 2; i < 4; ++i)
      if (desc.inputs[i]->numElements() != 1)
        return "the thresholds must have one element";
    if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
      return "boxes must be [batch, boxes, 4], not " + str(boxes.shape);
    const int64_t batch = boxes.shape[0], n = boxes.shape[1];
    if (scores.shape.size() != 3 || scores.shape[0] != batch || scores.shape[2] != n)
      return "scores must be [batch, classes, boxes], not " + str(scores.shape);
    int64_t perClass = desc.getInt("max_output_boxes_per_class", 0);
    if (perClass < 0)
      return "max_output_boxes_per_class " + num(perClass) + " is negative";
    int64_t rows = batch * scores.shape[1] * std::min(perClass, n);
    if (std::string why = checkOutput(desc, 0, CGC_DTYPE_INT64, {rows, 3}); !why.empty())
      return why;
    if (desc.outputs[1].dtype != CGC_DTYPE_INT64 || desc.outputs[1].numElements() != 1)
      return "count must be one int64";
    return "";
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    const View &boxes = ops.input(desc, 0), &scores = ops.input(desc, 1);
    const View &selected = ops.out[0], &count = ops.out[1];
    const int64_t batch = boxes.shape[0], n = boxes.shape[1], classes = scores.shape[1];
    const int64_t perClass = std::min(desc.getInt("max_output_boxes_per_class", 0), n);
    const bool centerPointBox = desc.getBool("center_point_box", false);
    const View &iouView = ops.input(desc, 2), &scoreView = ops.input(desc, 3);
    const double iouThreshold = iouView.get(0), scoreThreshold = scoreView.get(0);
    const bool filter = scoreThreshold != -std::numeric_limits<double>::infinity();
    forEachIndex(selected.shape,
                 [&](const Shape &index) { selected.setInt(selected.offset(index), 0); });
    int64_t rows = 0;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Box> corners;
      for (int64_t i = 0; i < n; ++i) {
        double v[4];
        for (int64_t k = 0; k < 4; ++k)
          v[k] = boxes.at({b, i, k});
        if (centerPointBox) // [x_center, y_center, width, height]
          corners.push_back({v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2});
        else // [y1, x1, y2, x2], either corner first
          corners.push_back({std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]),
                             std::max(v[1], v[3])});
      }
      for (int64_t c = 0; c < classes; ++c) {
        std::vector<int64_t> order;
        std::vector<double> score(size_t(n), 0.0);
        for (int64_t i = 0; i < n; ++i) {
          score[size_t(i)] = scores.at({b, c, i});
          if (!std::isnan(score[size_t(i)]) && (!filter || score[size_t(i)] > scoreThreshold))
            order.push_back(i);
        }
        std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return score[size_t(x)] != score[size_t(y)] ? score[size_t(x)] > score[size_t(y)] : x < y;
        });
        std::vector<int64_t> kept;
        for (int64_t candidate : order) {
          if (int64_t(kept.size()) >= perClass)
            break;
          bool suppressed = false;
          for (int64_t k : kept)
            suppressed = suppressed ||
                         suppresses(corners[size_t(candidate)], corners[size_t(k)], iouThreshold);
          if (suppressed)
            continue;
          kept.push_back(candidate);
          selected.setInt(selected.offset({rows, 0}), b);
          selected.setInt(selected.offset({rows, 1}), c);
          selected.setInt(selected.offset({rows, 2}), candidate);
          ++rows;
        }
      }
    }
    count.setInt(0, rows);
  };
  return def;
}

} // namespace

//===----------------------------------------------------------------------===//
// check
//===----------------------------------------------------------------------===//

// CGCOpOps.td's check: the input, copied element by element, when the
// one-element bool condition holds; otherwise the evaluation fails with the
// op's message.
OpDef checkOp() {
  OpDef def;
  def.kind = OpKind::Check;
  def.check = [](const KernelDesc &desc) -> std::string {
    if (std::string why = checkArity(desc, 2, 1); !why.empty())
      return why;
    const KernelOperand &condition = *desc.inputs[0], &input = *desc.inputs[1];
    if (condition.dtype != CGC_DTYPE_BOOL || condition.numElements() != 1)
      return "the condition must be one bool";
    if (!desc.attr("message"))
      return "the message is missing";
    return checkOutput(desc, 0, input.dtype, input.shape);
  };
  def.run = [](const KernelDesc &desc, const Operands &ops) {
    if (ops.input(desc, 0).getInt(0) == 0)
      fail("cgc_op.check: " + desc.getString("message", ""));
    const View &input = ops.input(desc, 1), &output = ops.out[0];
    forEachIndex(input.shape, [&](const Shape &index) {
      output.copyFrom(output.offset(index), input, input.offset(index));
    });
  };
  return def;
}

void addMovementOps(std::vector<OpDef> &ops) {
  ops.push_back(reshapeOp());
  ops.push_back(transposeOp());
  ops.push_back(concatOp());
  ops.push_back(splitOp());
  ops.push_back(sliceOp());
  ops.push_back(expandOp());
  ops.push_back(tileOp());
  ops.push_back(padOp());
  ops.push_back(depthToSpaceOp());
  ops.push_back(spaceToDepthOp());
  ops.push_back(gatherOp());
  ops.push_back(gatherElementsOp());
  ops.push_back(scatterElementsOp());
  ops.push_back(scatterNDOp());
  ops.push_back(resizeOp());
  ops.push_back(upsampleOp());
  ops.push_back(gridSampleOp());
  ops.push_back(nonMaxSuppressionOp());
  ops.push_back(checkOp());
}

} // namespace cgc::reference
