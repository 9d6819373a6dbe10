//===- SyntheticGraphs.cpp - Model-zoo-like and random graphs -------------===//

#include "compiler/Planning/SyntheticGraphs.h"

#include <algorithm>
#include <cmath>

namespace cgc::planning::synthetic {
namespace {

constexpr uint64_t kF32 = 4;

class Builder {
public:
  int32_t tensor(const std::string &name, uint64_t bytes, BufferKind kind,
                 int32_t index = 0) {
    graph.tensors.push_back({name, bytes, kind, index});
    return int32_t(graph.tensors.size() - 1);
  }
  int32_t input(const std::string &name, uint64_t bytes) {
    return tensor(name, bytes, BufferKind::Input, inputs++);
  }
  int32_t constant(const std::string &name, uint64_t bytes) {
    return tensor(name, bytes, BufferKind::Constant, constants++);
  }
  /// A node with one output of `bytes`; `inPlace` is the input tensor the
  /// output may overwrite, or -1.
  int32_t op(const std::string &name, std::vector<int32_t> inputs,
             uint64_t bytes, int32_t inPlace = -1) {
    int32_t out = tensor(name, bytes, BufferKind::Scratch);
    Node node;
    node.name = name;
    node.inputs = std::move(inputs);
    node.outputs = {out};
    if (inPlace >= 0)
      node.inPlaceOf = {inPlace};
    graph.nodes.push_back(std::move(node));
    return out;
  }
  void markOutput(int32_t t) {
    graph.tensors[t].kind = BufferKind::Output;
    graph.tensors[t].index = outputs++;
  }

  Graph graph;

private:
  int32_t inputs = 0, constants = 0, outputs = 0;
};

/// Convolution (+ batch norm + activation) over an NCHW tensor: one fused
/// node, or conv, bn and activation nodes with the last two in place.
/// `act` is "relu", "relu6", "swish" or "" (none); `channels` are the
/// output channels (batch-norm parameters).
int32_t convBlock(Builder &b, Granularity g, const std::string &name,
                  int32_t x, uint64_t outElems, uint64_t weightElems,
                  const std::string &act, uint64_t channels) {
  int32_t w = b.constant(name + ".weight", weightElems * kF32);
  if (g == Granularity::Fused) {
    std::string label = name + " (conv+bn" + (act.empty() ? "" : "+" + act) +
                        ")";
    return b.op(label, {x, w}, outElems * kF32);
  }
  int32_t y = b.op(name + ".conv", {x, w}, outElems * kF32);
  int32_t bn = b.constant(name + ".bn", 4 * channels * kF32);
  y = b.op(name + ".bn", {y, bn}, outElems * kF32, y);
  if (act == "swish") {
    // Exported as Sigmoid then Mul: the sigmoid needs its own buffer because
    // its input is read again by the multiply.
    int32_t s = b.op(name + ".sigmoid", {y}, outElems * kF32);
    return b.op(name + ".mul", {y, s}, outElems * kF32, y);
  }
  if (!act.empty())
    y = b.op(name + "." + act, {y}, outElems * kF32, y);
  return y;
}

/// A residual add (+ activation) in the Layers granularity.
int32_t residual(Builder &b, const std::string &name, int32_t y,
                 int32_t shortcut, uint64_t elems, const std::string &act) {
  int32_t s = b.op(name + ".add", {y, shortcut}, elems * kF32, y);
  if (!act.empty())
    s = b.op(name + "." + act, {s}, elems * kF32, s);
  return s;
}

} // namespace

const char *granularityName(Granularity granularity) {
  return granularity == Granularity::Fused ? "fused" : "layers";
}

//===----------------------------------------------------------------------===//
// ResNet-50
//===----------------------------------------------------------------------===//

Graph resnet50(Granularity g) {
  Builder b;
  int32_t x = b.input("input", 3ULL * 224 * 224 * kF32);
  int32_t t = convBlock(b, g, "conv1", x, 64ULL * 112 * 112, 64ULL * 3 * 49,
                        "relu", 64);
  t = b.op("maxpool", {t}, 64ULL * 56 * 56 * kF32);
  uint64_t inC = 64, H = 56;
  struct Stage {
    uint64_t mid, out;
    int blocks, stride;
  } stages[] = {{64, 256, 3, 1}, {128, 512, 4, 2}, {256, 1024, 6, 2},
                {512, 2048, 3, 2}};
  int layer = 1;
  for (const Stage &st : stages) {
    for (int blk = 0; blk < st.blocks; ++blk) {
      std::string name =
          "layer" + std::to_string(layer) + "." + std::to_string(blk);
      uint64_t s = blk == 0 ? uint64_t(st.stride) : 1, Ho = H / s;
      int32_t a = convBlock(b, g, name + ".conv1", t, st.mid * H * H,
                            st.mid * inC, "relu", st.mid);
      int32_t c = convBlock(b, g, name + ".conv2", a, st.mid * Ho * Ho,
                            st.mid * st.mid * 9, "relu", st.mid);
      uint64_t outElems = st.out * Ho * Ho;
      int32_t shortcut = t;
      if (g == Granularity::Fused) {
        if (blk == 0)
          shortcut = convBlock(b, g, name + ".downsample", t, outElems,
                               st.out * inC, "", st.out);
        int32_t w = b.constant(name + ".conv3.weight",
                               st.out * st.mid * kF32);
        t = b.op(name + ".conv3 (conv+bn+add+relu)", {c, w, shortcut},
                 outElems * kF32, shortcut);
      } else {
        int32_t y = convBlock(b, g, name + ".conv3", c, outElems,
                              st.out * st.mid, "", st.out);
        if (blk == 0)
          shortcut = convBlock(b, g, name + ".downsample", t, outElems,
                               st.out * inC, "", st.out);
        t = residual(b, name, y, shortcut, outElems, "relu");
      }
      inC = st.out;
      H = Ho;
    }
    ++layer;
  }
  t = b.op("avgpool", {t}, 2048 * kF32);
  int32_t w = b.constant("fc.weight", 1000ULL * 2048 * kF32);
  int32_t logits = b.op("fc", {t, w}, 1000 * kF32);
  b.markOutput(logits);
  return b.graph;
}

//===----------------------------------------------------------------------===//
// MobileNetV2
//===----------------------------------------------------------------------===//

Graph mobileNetV2(Granularity g) {
  Builder b;
  int32_t x = b.input("input", 3ULL * 224 * 224 * kF32);
  int32_t t = convBlock(b, g, "features.0", x, 32ULL * 112 * 112,
                        32ULL * 3 * 9, "relu6", 32);
  uint64_t inC = 32, H = 112;
  struct Setting {
    uint64_t t, c;
    int n, s;
  } settings[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2},
                  {6, 64, 4, 2},  {6, 96, 3, 1},  {6, 160, 3, 2},
                  {6, 320, 1, 1}};
  int index = 1;
  for (const Setting &st : settings) {
    for (int i = 0; i < st.n; ++i, ++index) {
      std::string name = "features." + std::to_string(index);
      uint64_t s = i == 0 ? uint64_t(st.s) : 1, Ho = H / s;
      uint64_t hidden = inC * st.t;
      bool res = s == 1 && inC == st.c;
      int32_t h = t;
      if (st.t != 1)
        h = convBlock(b, g, name + ".expand", t, hidden * H * H,
                      hidden * inC, "relu6", hidden);
      h = convBlock(b, g, name + ".dw", h, hidden * Ho * Ho, hidden * 9,
                    "relu6", hidden);
      uint64_t outElems = st.c * Ho * Ho;
      if (g == Granularity::Fused) {
        int32_t w = b.constant(name + ".project.weight", st.c * hidden * kF32);
        if (res)
          t = b.op(name + ".project (conv+bn+add)", {h, w, t}, outElems * kF32,
                   t);
        else
          t = b.op(name + ".project (conv+bn)", {h, w}, outElems * kF32);
      } else {
        int32_t y = convBlock(b, g, name + ".project", h, outElems,
                              st.c * hidden, "", st.c);
        t = res ? residual(b, name, y, t, outElems, "") : y;
      }
      inC = st.c;
      H = Ho;
    }
  }
  t = convBlock(b, g, "features.18", t, 1280ULL * 7 * 7, 1280ULL * 320,
                "relu6", 1280);
  t = b.op("avgpool", {t}, 1280 * kF32);
  int32_t w = b.constant("classifier.weight", 1000ULL * 1280 * kF32);
  int32_t logits = b.op("classifier", {t, w}, 1000 * kF32);
  b.markOutput(logits);
  return b.graph;
}

//===----------------------------------------------------------------------===//
// EfficientNet-B0
//===----------------------------------------------------------------------===//

Graph efficientNetB0(Granularity g) {
  Builder b;
  int32_t x = b.input("input", 3ULL * 224 * 224 * kF32);
  int32_t t = convBlock(b, g, "stem", x, 32ULL * 112 * 112, 32ULL * 3 * 9,
                        "swish", 32);
  uint64_t inC = 32, H = 112;
  struct Stage {
    uint64_t expand, kernel;
    int stride;
    uint64_t out;
    int repeats;
  } stages[] = {{1, 3, 1, 16, 1},  {6, 3, 2, 24, 2},  {6, 5, 2, 40, 2},
                {6, 3, 2, 80, 3},  {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4},
                {6, 3, 1, 320, 1}};
  int stageIndex = 1;
  for (const Stage &st : stages) {
    for (int r = 0; r < st.repeats; ++r) {
      std::string name = "blocks." + std::to_string(stageIndex) + "." +
                         std::to_string(r);
      uint64_t s = r == 0 ? uint64_t(st.stride) : 1, Ho = H / s;
      uint64_t hidden = inC * st.expand;
      uint64_t se = std::max<uint64_t>(1, inC / 4);
      bool res = s == 1 && inC == st.out;
      int32_t h = t;
      if (st.expand != 1)
        h = convBlock(b, g, name + ".expand", t, hidden * H * H,
                      hidden * inC, "swish", hidden);
      h = convBlock(b, g, name + ".dw", h, hidden * Ho * Ho,
                    hidden * st.kernel * st.kernel, "swish", hidden);
      // Squeeze and excite.
      int32_t pooled = b.op(name + ".se.pool", {h}, hidden * kF32);
      int32_t w1 = b.constant(name + ".se.reduce.weight", se * hidden * kF32);
      int32_t w2 = b.constant(name + ".se.expand.weight", hidden * se * kF32);
      int32_t gate;
      if (g == Granularity::Fused) {
        int32_t red = b.op(name + ".se.reduce (conv+swish)", {pooled, w1},
                           se * kF32);
        gate = b.op(name + ".se.expand (conv+sigmoid)", {red, w2},
                    hidden * kF32);
      } else {
        int32_t red = b.op(name + ".se.reduce.conv", {pooled, w1}, se * kF32);
        int32_t sig = b.op(name + ".se.reduce.sigmoid", {red}, se * kF32);
        red = b.op(name + ".se.reduce.mul", {red, sig}, se * kF32, red);
        gate = b.op(name + ".se.expand.conv", {red, w2}, hidden * kF32);
        gate = b.op(name + ".se.expand.sigmoid", {gate}, hidden * kF32, gate);
      }
      h = b.op(name + ".se.scale", {h, gate}, hidden * Ho * Ho * kF32, h);
      uint64_t outElems = st.out * Ho * Ho;
      if (g == Granularity::Fused) {
        int32_t w = b.constant(name + ".project.weight",
                               st.out * hidden * kF32);
        if (res)
          t = b.op(name + ".project (conv+bn+add)", {h, w, t}, outElems * kF32,
                   t);
        else
          t = b.op(name + ".project (conv+bn)", {h, w}, outElems * kF32);
      } else {
        int32_t y = convBlock(b, g, name + ".project", h, outElems,
                              st.out * hidden, "", st.out);
        t = res ? residual(b, name, y, t, outElems, "") : y;
      }
      inC = st.out;
      H = Ho;
    }
    ++stageIndex;
  }
  t = convBlock(b, g, "head", t, 1280ULL * 7 * 7, 1280ULL * 320, "swish", 1280);
  t = b.op("avgpool", {t}, 1280 * kF32);
  int32_t w = b.constant("classifier.weight", 1000ULL * 1280 * kF32);
  int32_t logits = b.op("classifier", {t, w}, 1000 * kF32);
  b.markOutput(logits);
  return b.graph;
}

//===----------------------------------------------------------------------===//
// BERT-base
//===----------------------------------------------------------------------===//

Graph bertBase(Granularity g, int layers, int sequence) {
  Builder b;
  const uint64_t S = uint64_t(sequence), Hd = 768, heads = 12, ffn = 3072;
  const uint64_t act = S * Hd * kF32, scores = heads * S * S * kF32,
                 wide = S * ffn * kF32;
  int32_t ids = b.input("input_ids", S * 8);
  int32_t types = b.input("token_type_ids", S * 8);
  int32_t mask = b.input("attention_mask", S * 8);
  int32_t wordEmb = b.constant("embeddings.word", 30522ULL * Hd * kF32);
  int32_t posEmb = b.constant("embeddings.position", 512ULL * Hd * kF32);
  int32_t typeEmb = b.constant("embeddings.token_type", 2ULL * Hd * kF32);
  int32_t lnEmb = b.constant("embeddings.layernorm", 2 * Hd * kF32);
  int32_t x;
  if (g == Granularity::Fused) {
    x = b.op("embeddings (gather+add)", {ids, types, wordEmb, posEmb, typeEmb},
             act);
  } else {
    int32_t w = b.op("embeddings.word.gather", {ids, wordEmb}, act);
    int32_t t = b.op("embeddings.token_type.gather", {types, typeEmb}, act);
    w = b.op("embeddings.add_type", {w, t}, act, w);
    x = b.op("embeddings.add_position", {w, posEmb}, act, w);
  }
  x = b.op("embeddings.layernorm", {x, lnEmb}, act);
  int32_t extMask = b.op("extended_attention_mask", {mask}, S * kF32);
  for (int l = 0; l < layers; ++l) {
    std::string n = "encoder.layer." + std::to_string(l);
    auto weight = [&](const std::string &what, uint64_t elems) {
      return b.constant(n + "." + what, elems * kF32);
    };
    int32_t wq = weight("attention.query", Hd * Hd + Hd);
    int32_t wk = weight("attention.key", Hd * Hd + Hd);
    int32_t wv = weight("attention.value", Hd * Hd + Hd);
    int32_t wo = weight("attention.output", Hd * Hd + Hd);
    int32_t ln1w = weight("attention.layernorm", 2 * Hd);
    int32_t wi = weight("intermediate", ffn * Hd + ffn);
    int32_t wout = weight("output", Hd * ffn + Hd);
    int32_t ln2w = weight("output.layernorm", 2 * Hd);
    int32_t ln1, ln2;
    if (g == Granularity::Fused) {
      int32_t q = b.op(n + ".query (matmul+bias)", {x, wq}, act);
      int32_t k = b.op(n + ".key (matmul+bias)", {x, wk}, act);
      int32_t v = b.op(n + ".value (matmul+bias)", {x, wv}, act);
      int32_t sc = b.op(n + ".scores (matmul+scale+mask)", {q, k, extMask},
                        scores);
      int32_t p = b.op(n + ".softmax", {sc}, scores);
      int32_t ctx = b.op(n + ".context (matmul)", {p, v}, act);
      int32_t att = b.op(n + ".attention.output (matmul+bias+add)",
                         {ctx, wo, x}, act, x);
      ln1 = b.op(n + ".attention.layernorm", {att, ln1w}, act);
      int32_t hmid = b.op(n + ".intermediate (matmul+bias+gelu)", {ln1, wi},
                          wide);
      int32_t out = b.op(n + ".output (matmul+bias+add)", {hmid, wout, ln1},
                         act, ln1);
      ln2 = b.op(n + ".output.layernorm", {out, ln2w}, act);
    } else {
      auto linear = [&](const std::string &what, int32_t in, int32_t w,
                        uint64_t bytes) {
        int32_t mm = b.op(n + "." + what + ".matmul", {in, w}, bytes);
        return b.op(n + "." + what + ".bias", {mm, w}, bytes, mm);
      };
      int32_t q = linear("query", x, wq, act);
      int32_t k = linear("key", x, wk, act);
      int32_t v = linear("value", x, wv, act);
      q = b.op(n + ".query.transpose", {q}, act);
      k = b.op(n + ".key.transpose", {k}, act);
      v = b.op(n + ".value.transpose", {v}, act);
      int32_t sc = b.op(n + ".scores.matmul", {q, k}, scores);
      sc = b.op(n + ".scores.scale", {sc}, scores, sc);
      sc = b.op(n + ".scores.mask", {sc, extMask}, scores, sc);
      int32_t p = b.op(n + ".softmax", {sc}, scores);
      int32_t ctx = b.op(n + ".context.matmul", {p, v}, act);
      ctx = b.op(n + ".context.transpose", {ctx}, act);
      int32_t att = linear("attention.output", ctx, wo, act);
      att = b.op(n + ".attention.residual", {att, x}, act, att);
      ln1 = b.op(n + ".attention.layernorm", {att, ln1w}, act);
      int32_t hmid = linear("intermediate", ln1, wi, wide);
      hmid = b.op(n + ".intermediate.gelu", {hmid}, wide, hmid);
      int32_t out = linear("output", hmid, wout, act);
      out = b.op(n + ".output.residual", {out, ln1}, act, out);
      ln2 = b.op(n + ".output.layernorm", {out, ln2w}, act);
    }
    x = ln2;
  }
  b.markOutput(x);
  int32_t wp = b.constant("pooler.dense", Hd * Hd + Hd);
  int32_t pooled = b.op("pooler (first token, dense+tanh)", {x, wp}, Hd * kF32);
  b.markOutput(pooled);
  return b.graph;
}

std::vector<NamedGraph> modelZoo() {
  std::vector<NamedGraph> zoo;
  for (Granularity g : {Granularity::Fused, Granularity::Layers}) {
    std::string suffix = std::string(" (") + granularityName(g) + ")";
    zoo.push_back({"resnet50" + suffix, resnet50(g)});
    zoo.push_back({"mobilenet_v2" + suffix, mobileNetV2(g)});
    zoo.push_back({"efficientnet_b0" + suffix, efficientNetB0(g)});
    zoo.push_back({"bert_base_seq128" + suffix, bertBase(g)});
  }
  return zoo;
}

//===----------------------------------------------------------------------===//
// Random graphs
//===----------------------------------------------------------------------===//

namespace {

struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x2545f4914f6cdd1dULL + 1) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  int64_t range(int64_t lo, int64_t hi) { // inclusive
    return lo + int64_t(below(uint64_t(hi - lo + 1)));
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return uniform() < p; }
};

} // namespace

Graph randomGraph(uint64_t seed, const RandomGraphOptions &options) {
  Rng rng(seed);
  Builder b;
  // Node count: log-uniform over [minNodes, maxNodes].
  double lo = std::log(double(std::max(1, options.minNodes)));
  double hi = std::log(double(std::max(options.minNodes, options.maxNodes)));
  int32_t N = int32_t(std::lround(std::exp(lo + (hi - lo) * rng.uniform())));
  N = std::clamp(N, std::max(1, options.minNodes),
                 std::max(options.minNodes, options.maxNodes));
  enum Family { ChainWithSkips, Branches, RandomDag } family =
      Family(rng.below(3));
  bool shapeLike = rng.chance(0.5);
  double elementwise = 0.1 + 0.4 * rng.uniform();
  double zeroBytes = rng.chance(0.2) ? 0.03 : 0.0;
  auto randomBytes = [&]() -> uint64_t {
    if (rng.chance(zeroBytes))
      return 0;
    if (shapeLike) {
      static const uint64_t channels[] = {8,  16,  24,  32,  64,
                                          96, 128, 256, 512, 1024};
      static const uint64_t spatial[] = {1, 7, 14, 28, 56, 112};
      uint64_t s = spatial[rng.below(6)];
      return channels[rng.below(10)] * s * s * 4;
    }
    // Log-uniform over [1, 4 MiB].
    return uint64_t(std::exp(std::log(4.0 * 1024 * 1024) * rng.uniform()));
  };

  std::vector<int32_t> modelInputs;
  int32_t inputCount = int32_t(rng.range(1, 3));
  for (int32_t i = 0; i < inputCount; ++i)
    modelInputs.push_back(
        b.input("in" + std::to_string(i), std::max<uint64_t>(randomBytes(), 1)));
  std::vector<int32_t> produced; // scratch tensors in creation order
  int32_t branches = family == Branches ? int32_t(rng.range(2, 6)) : 1;
  std::vector<int32_t> head(size_t(branches), -1);
  int32_t window = int32_t(rng.range(2, 30));
  double skip = 0.1 + 0.3 * rng.uniform();

  for (int32_t n = 0; n < N; ++n) {
    std::vector<int32_t> ins;
    int32_t branch = int32_t(rng.below(uint64_t(branches)));
    bool last = n == N - 1;
    auto pickRecent = [&](int32_t w) {
      size_t count = std::min<size_t>(produced.size(), size_t(w));
      return produced[produced.size() - 1 - rng.below(count)];
    };
    if (produced.empty()) {
      ins.push_back(modelInputs[rng.below(modelInputs.size())]);
    } else if (family == ChainWithSkips) {
      ins.push_back(produced.back());
      if (rng.chance(skip))
        ins.push_back(pickRecent(int32_t(rng.range(2, 16))));
    } else if (family == Branches) {
      if (last) {
        for (int32_t h : head)
          if (h >= 0)
            ins.push_back(h);
      } else {
        ins.push_back(head[branch] >= 0 ? head[branch] : produced.back());
        if (rng.chance(0.1)) { // a cross edge between branches
          int32_t other = head[rng.below(uint64_t(branches))];
          ins.push_back(other >= 0 ? other : produced.back());
        }
      }
    } else {
      int32_t fanIn = int32_t(1 + rng.below(rng.chance(0.3) ? 4 : 2));
      for (int32_t i = 0; i < fanIn; ++i)
        ins.push_back(rng.chance(0.15) ? produced[rng.below(produced.size())]
                                       : pickRecent(window));
    }
    if (ins.empty())
      ins.push_back(produced.back());
    if (rng.chance(0.1))
      ins.push_back(modelInputs[rng.below(modelInputs.size())]);
    int32_t constants = int32_t(rng.below(3));
    for (int32_t c = 0; c < constants; ++c)
      ins.push_back(b.constant("w" + std::to_string(n) + "_" +
                                   std::to_string(c),
                               1 + rng.below(65536)));
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    // Put a scratch input first (the in-place candidate) in random order.
    for (size_t i = ins.size(); i > 1; --i)
      std::swap(ins[i - 1], ins[rng.below(i)]);

    int32_t outs = rng.chance(0.85) ? 1 : (rng.chance(0.8) ? 2 : 3);
    Node node;
    node.name = "n" + std::to_string(n);
    node.inputs = ins;
    bool anyInPlace = false;
    for (int32_t k = 0; k < outs; ++k) {
      uint64_t bytes = randomBytes();
      int32_t inPlace = -1;
      if (rng.chance(elementwise)) {
        int32_t src = ins[rng.below(ins.size())];
        bytes = b.graph.tensors[src].bytes;
        inPlace = src;
        anyInPlace = true;
      }
      int32_t t = b.tensor(node.name + (outs > 1 ? "." + std::to_string(k)
                                                 : std::string()),
                           bytes, BufferKind::Scratch);
      node.outputs.push_back(t);
      node.inPlaceOf.push_back(inPlace);
      produced.push_back(t);
    }
    if (!anyInPlace)
      node.inPlaceOf.clear();
    if (family == Branches)
      head[branch] = node.outputs[0];
    b.graph.nodes.push_back(std::move(node));
  }

  // Model outputs: most tensors nobody reads, plus a few that are read.
  std::vector<int32_t> readers(b.graph.tensors.size(), 0);
  for (const Node &node : b.graph.nodes)
    for (int32_t t : node.inputs)
      ++readers[t];
  double readOutput = rng.chance(0.5) ? 0.05 : 0.0;
  for (int32_t t : produced) {
    bool sink = readers[t] == 0;
    if ((sink && (t == produced.back() || rng.chance(0.7))) ||
        (!sink && rng.chance(readOutput)))
      b.markOutput(t);
  }
  return b.graph;
}

} // namespace cgc::planning::synthetic
