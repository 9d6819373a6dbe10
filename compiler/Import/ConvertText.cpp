//===- ConvertText.cpp - TfIdfVectorizer -----------------------------------===//
//
// TfIdfVectorizer over integer token ids: for every n-gram length n in
// [min_gram_length, max_gram_length] and every skip s (n > 1: 0 ...
// max_skip_count), the n-grams x[i], x[i + s + 1], ... are compared with the
// pool's n-grams of that length (constants from the attributes): one
// [batch, positions, pool n-grams] equality per n-gram element, combined
// with And and summed over the positions. The counts go to their output
// columns (ngram_indexes) through a constant 0/1 matrix, weighted per mode
// (TF: counts; IDF: weight if present; TFIDF: weight x count). Memory is
// batch x positions x pool n-grams booleans per step.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

using namespace mlir;

namespace cgc::import {
namespace {

LogicalResult convertTfIdfVectorizer(NodeContext &ctx) {
  if (ctx.hasAttr("pool_strings"))
    return ctx.unsupported("TfIdfVectorizer over strings (pool_strings)");
  Value x = ctx.input(0);
  if (!isIntegerKind(kindOf(x)) || rankOf(x) < 1 || rankOf(x) > 2)
    return ctx.fail("TfIdfVectorizer needs [C] or [N, C] integer token ids");
  const std::string mode = ctx.getString("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    return ctx.fail("mode must be TF, IDF or TFIDF, not '" + mode + "'");
  const int64_t minLength = ctx.getInt("min_gram_length", 0);
  const int64_t maxLength = ctx.getInt("max_gram_length", 0);
  const int64_t maxSkip = ctx.getInt("max_skip_count", 0);
  SmallVector<int64_t> counts = ctx.getInts("ngram_counts");
  SmallVector<int64_t> indexes = ctx.getInts("ngram_indexes");
  SmallVector<int64_t> pool = ctx.getInts("pool_int64s");
  SmallVector<float> weights = ctx.getFloats("weights");
  if (minLength < 1 || maxLength < minLength ||
      maxLength > static_cast<int64_t>(counts.size()) || maxSkip < 0)
    return ctx.fail("needs 1 <= min_gram_length <= max_gram_length <= "
                    "len(ngram_counts) and max_skip_count >= 0");
  // The pool's n-grams by length: [counts[n - 1], counts[n]) holds those of
  // length n; they are numbered in pool order.
  SmallVector<int64_t> firstGram(counts.size() + 1, 0), gramsOf(counts.size(), 0);
  int64_t grams = 0;
  for (size_t n = 1; n <= counts.size(); ++n) {
    const int64_t begin = counts[n - 1];
    const int64_t end = n < counts.size() ? counts[n] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % static_cast<int64_t>(n) != 0)
      return ctx.fail("ngram_counts does not split pool_int64s (" +
                      Twine(pool.size()) + " ids) into whole n-grams");
    firstGram[n - 1] = grams;
    gramsOf[n - 1] = (end - begin) / static_cast<int64_t>(n);
    grams += gramsOf[n - 1];
  }
  if (static_cast<int64_t>(indexes.size()) != grams)
    return ctx.fail("ngram_indexes has " + Twine(indexes.size()) +
                    " entries for " + Twine(grams) + " pool n-grams");
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != grams)
    return ctx.fail("weights has " + Twine(weights.size()) + " entries for " +
                    Twine(grams) + " pool n-grams");
  int64_t columns = 0;
  for (int64_t index : indexes) {
    if (index < 0 || index >= (int64_t(1) << 24))
      return ctx.fail("ngram_indexes holds " + Twine(index) + ", outside [0, 2^24)");
    columns = std::max(columns, index + 1);
  }
  const bool batched = rankOf(x) == 2;
  const int64_t batch = batched ? shapeOf(x)[0] : 1;
  const int64_t length = shapeOf(x).back();
  Value ids = ctx.reshape(ctx.cast(x, ElementKind::Int64), {batch, length, 1});
  if (!ids)
    return failure();

  // Each step compares [batch, positions, pool n-grams] ids.
  if (batch * length * std::max<int64_t>(grams, 1) > (int64_t(1) << 28))
    return ctx.unsupported("TfIdfVectorizer comparing " + Twine(batch) + " x " + Twine(length) +
                           " ids with " + Twine(grams) + " pool n-grams (at most 2^28 "
                           "comparisons per step)");
  if (static_cast<int64_t>(grams) * columns > (int64_t(1) << 26))
    return ctx.unsupported("TfIdfVectorizer placing " + Twine(grams) + " n-grams into " +
                           Twine(columns) + " columns (at most 2^26)");
  Value result;
  for (int64_t n = minLength; n <= maxLength; ++n) {
    const int64_t g = gramsOf[n - 1], first = firstGram[n - 1];
    if (g == 0)
      continue;
    const int64_t poolBegin = counts[n - 1];
    Value found;
    for (int64_t skip = 0; skip <= (n == 1 ? 0 : maxSkip); ++skip) {
      const int64_t stride = skip + 1, positions = length - (n - 1) * stride;
      if (positions <= 0)
        break;
      Value match;
      for (int64_t j = 0; j < n; ++j) {
        HostTensor element(ElementKind::Int64, {g});
        for (int64_t k = 0; k < g; ++k)
          element.setInt(k, pool[poolBegin + k * n + j]);
        Value window = ctx.slice(ids, 1, j * stride, j * stride + positions);
        Value equal = window ? ctx.create<op::EqualOp>(
                                   {window, ctx.constant(std::move(element))})
                             : Value();
        match = match && equal ? ctx.create<op::AndOp>({match, equal}) : equal;
        if (!match)
          return failure();
      }
      Value occurrences = ctx.create<op::ReduceSumOp>(
          ctx.cast(match, ElementKind::Float32),
          {ctx.named("axes", ctx.i64s({1})), ctx.named("keepdims", ctx.boolean(false))});
      found = found ? ctx.add(found, occurrences) : occurrences;
      if (!found)
        return failure();
    }
    if (!found)
      continue;
    // Weigh per pool n-gram, then add into the output columns.
    HostTensor weight(ElementKind::Float32, {g});
    for (int64_t k = 0; k < g; ++k)
      weight.setFloat(k, weights.empty() ? 1.0 : weights[first + k]);
    Value scores = found;
    if (mode == "IDF")
      scores = ctx.create<op::MinOp>({found, ctx.scalar(ElementKind::Float32, 1.0)});
    if (mode != "TF" && !weights.empty())
      scores = ctx.mul(scores, ctx.constant(std::move(weight)));
    HostTensor placement(ElementKind::Float32, {g, columns});
    for (int64_t k = 0; k < g; ++k)
      placement.setFloat(k * columns + indexes[first + k], 1.0);
    Value placed = scores ? ctx.create<op::MatMulOp>(
                                {scores, ctx.constant(std::move(placement))})
                          : Value();
    result = result ? ctx.add(result, placed) : placed;
    if (!result)
      return failure();
  }
  if (!result)
    result = ctx.create<op::ExpandOp>(ctx.scalar(ElementKind::Float32, 0.0),
                                      {ctx.named("shape", ctx.i64s({batch, columns}))});
  if (!batched)
    result = ctx.reshape(result, {columns});
  return ctx.setOutput(result);
}

} // namespace

void registerTextConverters(ConverterRegistry &r) {
  r.add("TfIdfVectorizer", convertTfIdfVectorizer);
}

} // namespace cgc::import
