//===- CopyChains.cpp - Chains of copies composed into one ---------------===//
//
// A slice or transpose that reads what another copy layer (a transpose, a
// slice or a concat) wrote reads through it instead, from that layer's own
// inputs; once nothing else reads the intermediate, the first layer goes.
// ShuffleNet's channel shuffle (concat, reshape, transpose, reshape, then two
// slices) becomes one strided copy per concat input and half: its data moves
// once instead of three times.
//
// Both layers are seen as element moves, dst[i] = src[i], over views of
// their buffers (shape, strides, byte offset). The reader's source view
// addresses the intermediate; since one dense output writes all of it, every
// address there has one coordinate in the writer's output (a mixed-radix
// number over its dimensions). Each dimension of the reader's view steps one
// such coordinate by a fixed amount, or, where it runs across a dimension of
// the writer's output (a reshape merged them), is split into pieces that do.
// The same coordinates then address the writer's source. A concat's inputs
// cover ranges of its axis: the reader is cut where it crosses from one
// input to the next, one copy per input it reads.
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Cpu/KernelPrograms.h"
#include "planning/kernel_program_queries.h"

#include <algorithm>
#include <numeric>
#include <optional>

namespace cgc::cpu_target {

using namespace cgc::planning;
namespace {

using Storage = KernelOperand::Storage;

/// A layer as element moves: the box of the output starting at `at` (in the
/// output's coordinates) takes `src`, a view of one input with the box's
/// shape.
struct Piece {
  std::vector<int64_t> at;
  KernelOperand src;
};

/// `o` seen with `shape` and `strides` (elements), `offset` bytes on.
KernelOperand view(const KernelOperand &o, std::vector<int64_t> shape,
                   std::vector<int64_t> strides, int64_t offset) {
  KernelOperand v = o;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.offset = uint64_t(offset);
  return v;
}

bool hasNegativeStride(const KernelOperand &o) {
  for (int64_t s : o.effectiveStrides())
    if (s < 0)
      return true;
  return false;
}

/// The pieces of output `o` of a copy layer: a transpose, a slice with
/// positive steps, a concat (one output each), a split. Nothing for any
/// other layer.
std::optional<std::vector<Piece>> copyPieces(const KernelDesc &k, size_t o = 0) {
  if (o >= k.outputs.size() || k.inputs.empty() ||
      (k.outputs.size() != 1 && k.kind() != OpKind::Split))
    return std::nullopt;
  const KernelOperand &out = k.outputs[o];
  const size_t rank = out.shape.size();
  for (const auto &in : k.inputs)
    if (!in || in->dtype != out.dtype || in->shape.size() != rank || hasNegativeStride(*in))
      return std::nullopt;
  if (hasNegativeStride(out) || out.numElements() == 0)
    return std::nullopt;
  const int64_t elem = int64_t(cgc_dtype_size(out.dtype));
  const std::vector<int64_t> origin(rank, 0);
  if (k.kind() == OpKind::Transpose && k.inputs.size() == 1) {
    const KernelOperand &in = *k.inputs[0];
    std::vector<int64_t> perm = k.getInts("perm"), shape(rank), strides(rank);
    std::vector<int64_t> inStrides = in.effectiveStrides();
    if (perm.size() != rank)
      return std::nullopt;
    std::vector<bool> seen(rank, false);
    for (size_t d = 0; d < rank; ++d) {
      if (perm[d] < 0 || perm[d] >= int64_t(rank) || seen[size_t(perm[d])])
        return std::nullopt;
      seen[size_t(perm[d])] = true;
      shape[d] = in.shape[size_t(perm[d])];
      strides[d] = inStrides[size_t(perm[d])];
    }
    if (shape != out.shape)
      return std::nullopt;
    return std::vector<Piece>{{origin, view(in, shape, strides, int64_t(in.offset))}};
  }
  if (k.kind() == OpKind::Slice && k.inputs.size() == 1) {
    const KernelOperand &in = *k.inputs[0];
    std::vector<int64_t> starts = k.getInts("starts"), ends = k.getInts("ends"),
                         steps = k.getInts("steps"), shape(rank), strides(rank);
    std::vector<int64_t> inStrides = in.effectiveStrides();
    if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
      return std::nullopt;
    int64_t offset = int64_t(in.offset);
    for (size_t d = 0; d < rank; ++d) {
      if (steps[d] <= 0 || starts[d] < 0 || ends[d] > in.shape[d] || starts[d] >= ends[d])
        return std::nullopt;
      shape[d] = (ends[d] - starts[d] + steps[d] - 1) / steps[d];
      strides[d] = inStrides[d] * steps[d];
      offset += starts[d] * inStrides[d] * elem;
    }
    if (shape != out.shape)
      return std::nullopt;
    return std::vector<Piece>{{origin, view(in, shape, strides, offset)}};
  }
  if (k.kind() == OpKind::Split && k.inputs.size() == 1) {
    const KernelOperand &in = *k.inputs[0];
    const int64_t axis = k.getInt("axis", -1);
    const std::vector<int64_t> sizes = k.getInts("sizes");
    if (axis < 0 || axis >= int64_t(rank) || sizes.size() != k.outputs.size())
      return std::nullopt;
    std::vector<int64_t> shape = in.shape;
    shape[size_t(axis)] = sizes[o];
    int64_t start = 0;
    for (size_t i = 0; i < o; ++i)
      start += sizes[i];
    const std::vector<int64_t> strides = in.effectiveStrides();
    if (shape != out.shape || start + sizes[o] > in.shape[size_t(axis)])
      return std::nullopt;
    return std::vector<Piece>{
        {origin, view(in, shape, strides,
                      int64_t(in.offset) + start * strides[size_t(axis)] * elem)}};
  }
  if (k.kind() == OpKind::Concat) {
    const int64_t axis = k.getInt("axis", -1);
    if (axis < 0 || axis >= int64_t(rank))
      return std::nullopt;
    std::vector<Piece> pieces;
    int64_t at = 0;
    for (const auto &in : k.inputs) {
      for (size_t d = 0; d < rank; ++d)
        if (int64_t(d) != axis && in->shape[d] != out.shape[d])
          return std::nullopt;
      std::vector<int64_t> corner = origin;
      corner[size_t(axis)] = at;
      if (in->numElements() > 0)
        pieces.push_back({corner, *in});
      at += in->shape[size_t(axis)];
    }
    if (at != out.shape[size_t(axis)])
      return std::nullopt;
    return pieces;
  }
  return std::nullopt;
}

/// One dimension of a reader's source view, resolved against the writer's
/// output: `size` steps of `step` along the output's dimension `dim`, `dst`
/// elements apart in the reader's result.
struct Stride {
  int64_t size, dst;
  size_t dim;
  int64_t step;
};

/// True if `o` addresses every element of its span exactly once in
/// row-major order of some permutation of its dimensions (a dense tensor in
/// any layout).
bool isDense(const KernelOperand &o) {
  std::vector<std::pair<int64_t, int64_t>> dims; // (stride, size)
  std::vector<int64_t> strides = o.effectiveStrides();
  for (size_t d = 0; d < o.shape.size(); ++d)
    if (o.shape[d] > 1)
      dims.emplace_back(strides[d], o.shape[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (auto [stride, size] : dims) {
    if (stride != expected)
      return false;
    expected *= size;
  }
  return true;
}

/// The reader's move `dst = src` (src a view of what `writer` wrote, dense)
/// rewritten as moves from the writer's pieces; nothing if some dimension of
/// src does not resolve against the writer's output.
std::optional<std::vector<Piece>> compose(const KernelOperand &dst, const KernelOperand &src,
                                          const KernelOperand &written,
                                          const std::vector<Piece> &pieces,
                                          std::vector<KernelOperand> &dsts) {
  const int64_t elem = int64_t(cgc_dtype_size(src.dtype));
  const std::vector<int64_t> wStrides = written.effectiveStrides();
  const size_t wRank = written.shape.size();
  // The output's dimensions of more than one element, outermost first.
  std::vector<size_t> order;
  for (size_t e = 0; e < wRank; ++e)
    if (written.shape[e] > 1)
      order.push_back(e);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return wStrides[a] > wStrides[b]; });
  // The coordinates of src's first element.
  if (src.offset < written.offset || (src.offset - written.offset) % uint64_t(elem))
    return std::nullopt;
  int64_t rest = int64_t(src.offset - written.offset) / elem;
  std::vector<int64_t> first(wRank, 0);
  for (size_t e : order) {
    first[e] = rest / wStrides[e];
    rest %= wStrides[e];
    if (first[e] >= written.shape[e])
      return std::nullopt;
  }
  if (rest != 0)
    return std::nullopt;

  // Resolve src's dimensions, splitting any that runs across an output
  // dimension into one step per output dimension it covers.
  std::vector<Stride> dims;
  const std::vector<int64_t> srcStrides = src.effectiveStrides(), dstStrides = dst.effectiveStrides();
  for (size_t d = 0; d < src.shape.size(); ++d) {
    int64_t size = src.shape[d], stride = srcStrides[d], dstStride = dstStrides[d];
    while (size > 1) {
      auto within = std::find_if(order.begin(), order.end(), [&](size_t e) {
        return stride >= wStrides[e] && stride % wStrides[e] == 0 &&
               stride / wStrides[e] < written.shape[e];
      });
      if (within == order.end())
        return std::nullopt;
      const size_t e = *within;
      const int64_t step = stride / wStrides[e];
      // The other steps along e: src's range must not run past the end.
      int64_t reach = first[e] + step * (size - 1);
      for (const Stride &s : dims)
        if (s.dim == e)
          reach += s.step * (s.size - 1);
      if (reach < written.shape[e]) {
        dims.push_back({size, dstStride, e, step});
        break;
      }
      // Across e into the next dimension out: whole rounds of e only.
      if (step != 1 || first[e] != 0 || size % written.shape[e] != 0 ||
          std::any_of(dims.begin(), dims.end(), [&](const Stride &s) { return s.dim == e; }))
        return std::nullopt;
      dims.push_back({written.shape[e], dstStride, e, 1});
      size /= written.shape[e];
      stride *= written.shape[e];
      dstStride *= written.shape[e];
    }
  }

  // The dimension the pieces differ along (a concat's axis), if any.
  std::optional<size_t> axis;
  for (const Piece &p : pieces)
    for (size_t e = 0; e < wRank; ++e)
      if (p.at[e] != 0 || p.src.shape[e] != written.shape[e]) {
        if (axis && *axis != e)
          return std::nullopt;
        axis = e;
      }
  // Runs of the outermost src dimension along the axis that one piece
  // covers: [begin, end) of that dimension, from piece `piece`.
  struct Run {
    int64_t begin, end;
    size_t piece;
  };
  std::vector<Run> runs;
  std::optional<size_t> outer; // index into dims
  if (axis) {
    int64_t inner = 0; // the reach of the other dimensions along the axis
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].dim != *axis)
        continue;
      if (!outer || dims[i].step > dims[*outer].step)
        outer = i;
    }
    for (size_t i = 0; i < dims.size(); ++i)
      if (dims[i].dim == *axis && i != *outer)
        inner += dims[i].step * (dims[i].size - 1);
    const int64_t count = outer ? dims[*outer].size : 1, step = outer ? dims[*outer].step : 0;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t lo = first[*axis] + step * t, hi = lo + inner;
      auto it = std::find_if(pieces.begin(), pieces.end(), [&](const Piece &p) {
        return p.at[*axis] <= lo && hi < p.at[*axis] + p.src.shape[*axis];
      });
      if (it == pieces.end())
        return std::nullopt;
      const size_t piece = size_t(it - pieces.begin());
      if (!runs.empty() && runs.back().piece == piece)
        runs.back().end = t + 1;
      else
        runs.push_back({t, t + 1, piece});
    }
  } else {
    runs.push_back({0, 1, 0});
  }

  std::vector<Piece> moves;
  for (const Run &run : runs) {
    const Piece &from = pieces[run.piece];
    const std::vector<int64_t> fromStrides = from.src.effectiveStrides();
    int64_t srcOffset = int64_t(from.src.offset), dstOffset = int64_t(dst.offset);
    for (size_t e = 0; e < wRank; ++e)
      srcOffset += fromStrides[e] * (first[e] - from.at[e]) * elem;
    std::vector<int64_t> shape, sStrides, dStrides;
    for (size_t i = 0; i < dims.size(); ++i) {
      const Stride &s = dims[i];
      int64_t size = s.size;
      if (outer && i == *outer) {
        size = run.end - run.begin;
        srcOffset += fromStrides[s.dim] * s.step * run.begin * elem;
        dstOffset += s.dst * run.begin * elem;
      }
      shape.push_back(size);
      sStrides.push_back(fromStrides[s.dim] * s.step);
      dStrides.push_back(s.dst);
    }
    if (shape.empty()) { // one element
      shape = {1};
      sStrides = dStrides = {1};
    }
    if (srcOffset < 0)
      return std::nullopt;
    moves.push_back({{}, view(from.src, shape, sStrides, srcOffset)});
    dsts.push_back(view(dst, shape, dStrides, dstOffset));
  }
  return moves;
}

/// A slice that copies all of `src` to `dst` (same shape).
KernelDesc copyLayer(const KernelOperand &dst, const KernelOperand &src) {
  KernelDesc k;
  k.op = opName(OpKind::Slice);
  k.inputs = {src};
  k.outputs = {dst};
  k.setAttr("starts", AttrValue::ofInts(std::vector<int64_t>(src.shape.size(), 0)));
  k.setAttr("ends", AttrValue::ofInts(src.shape));
  k.setAttr("steps", AttrValue::ofInts(std::vector<int64_t>(src.shape.size(), 1)));
  return k;
}

/// Composes every reader of the copy layer `w` with it, if all are slices,
/// transposes or splits that compose: each reader becomes the copies from
/// w's inputs it amounts to (per output, for a split), and w goes. False
/// (and no change) otherwise.
bool foldInto(KernelProgram &program, size_t w) {
  const KernelDesc &writer = program.kernels[w];
  if (writer.outputs.size() != 1) // a split stays: each output has readers of its own
    return false;
  std::optional<std::vector<Piece>> pieces = copyPieces(writer);
  if (!pieces || pieces->empty())
    return false;
  const KernelOperand &written = writer.outputs[0];
  if (written.storage != Storage::Temporary || !isDense(written) ||
      program.temporaries[written.index].bytes != written.byteSpan() || written.offset != 0 ||
      writersOf(program, written) != std::vector<size_t>{w})
    return false;
  std::vector<size_t> readers = readersOf(program, written, 0);
  if (readers.empty())
    return false;
  std::vector<std::vector<KernelDesc>> replacements;
  for (size_t r : readers) {
    const KernelDesc &reader = program.kernels[r];
    if (r <= w || (reader.kind() != OpKind::Slice && reader.kind() != OpKind::Transpose &&
                   reader.kind() != OpKind::Split) ||
        !overlaps(*reader.inputs[0], written))
      return false;
    // Each output of the reader (a split has several) is one move.
    std::vector<KernelDesc> layers;
    for (size_t o = 0; o < reader.outputs.size(); ++o) {
      std::optional<std::vector<Piece>> own = copyPieces(reader, o);
      if (!own || own->size() != 1)
        return false;
      const KernelOperand &dst = reader.outputs[o];
      std::vector<KernelOperand> dsts;
      std::optional<std::vector<Piece>> moves =
          compose(dst, own->front().src, written, *pieces, dsts);
      if (!moves)
        return false;
      // The writer's inputs must still hold their bytes when the reader
      // runs, and the moves must not write what they read.
      for (const auto &in : writer.inputs) {
        for (size_t k = w + 1; k < r; ++k)
          if (writes(program.kernels[k], *in))
            return false;
        if (overlaps(*in, dst))
          return false;
      }
      for (size_t i = 0; i < moves->size(); ++i)
        layers.push_back(copyLayer(dsts[i], (*moves)[i].src));
    }
    replacements.push_back(std::move(layers));
  }
  std::vector<KernelDesc> kernels;
  size_t next = 0;
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    if (k == w)
      continue;
    if (next < readers.size() && readers[next] == k) {
      for (KernelDesc &layer : replacements[next])
        kernels.push_back(std::move(layer));
      ++next;
      continue;
    }
    kernels.push_back(std::move(program.kernels[k]));
  }
  program.kernels = std::move(kernels);
  return true;
}

} // namespace

unsigned foldCopyChains(KernelProgram &program) {
  unsigned folded = 0;
  // Latest writers first, so that a chain composes from its end: the
  // slices through the transpose, then through the concat before it.
  // Folding at w changes only the layers after it: the earlier ones keep
  // their places.
  for (size_t w = program.kernels.size(); w-- > 0;)
    folded += foldInto(program, w) ? 1 : 0;
  return folded;
}

} // namespace cgc::cpu_target
