//===- FoldLayerNorm.cpp - Layer norms written out op by op ---------------===//
//
// ONNX has LayerNormalization only from opset 17; exporters targeting an
// older opset write each layer norm out as
//
//   m = ReduceMean(x, axes=[-1]); d = Sub(x, m); p = Pow(d, 2) (or Mul(d, d))
//   v = ReduceMean(p, axes=[-1]); s = Sqrt(Add(v, eps)); n = Div(d, s)
//   y = Add(Mul(n, scale), bias)
//
// (torch.onnx before opset 17, transformers' older exports). Imported node
// by node these are nine ops and nine passes over the tensor; ONNX Runtime
// fuses them, and so does the importer: each match becomes one
// LayerNormalization(x, scale, bias, axis=-1, epsilon=eps), converted where
// the first ReduceMean was. A match needs every intermediate read only
// inside the pattern (and no graph output), the exponent and eps scalar
// constants whose values the file holds, and scale and bias 1-D
// initializers (or Identity nodes of them); the importer then checks that
// x, scale and bias are defined where the first ReduceMean is converted and
// that x's last dimension is their length.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/ImporterImpl.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

using namespace cgc;
using namespace cgc::import;

namespace {

class Matcher {
public:
  explicit Matcher(const onnx::GraphProto &graph) : graph(graph) {
    for (int i = 0; i < graph.node_size(); ++i)
      for (const std::string &name : graph.node(i).input()) {
        std::vector<size_t> &readers = consumers[name];
        if (!name.empty() && (readers.empty() || readers.back() != size_t(i)))
          readers.push_back(size_t(i)); // once per node: Mul(d, d) reads d once
      }
    for (const onnx::ValueInfoProto &output : graph.output())
      graphOutputs.insert(output.name());
    for (const onnx::TensorProto &init : graph.initializer())
      initializers[init.name()] = &init;
    for (const onnx::NodeProto &node : graph.node()) {
      if (!node.domain().empty() || node.output_size() != 1)
        continue;
      if (node.op_type() == "Constant")
        for (const onnx::AttributeProto &attr : node.attribute())
          if (attr.name() == "value" && attr.has_t())
            constantNodes[node.output(0)] = &attr.t();
      if (node.op_type() == "Identity" && node.input_size() == 1)
        identities[node.output(0)] = node.input(0);
    }
  }

  std::optional<LayerNormFold> match(size_t first) const;

private:
  const onnx::NodeProto &node(size_t i) const { return graph.node(int(i)); }

  /// The one node reading `value` (an intermediate: no graph output), with
  /// op type `op`.
  std::optional<size_t> onlyReader(const std::string &value, const char *op) const {
    auto it = consumers.find(value);
    if (graphOutputs.count(value) || it == consumers.end() || it->second.size() != 1)
      return std::nullopt;
    const onnx::NodeProto &n = node(it->second[0]);
    if (n.op_type() != op || !n.domain().empty() || n.output_size() != 1)
      return std::nullopt;
    return it->second[0];
  }

  /// The value of a one-element float constant (an initializer or a
  /// Constant node's output held in the file).
  std::optional<double> scalar(const std::string &name) const {
    const onnx::TensorProto *tensor = nullptr;
    if (auto it = initializers.find(name); it != initializers.end())
      tensor = it->second;
    else if (auto c = constantNodes.find(name); c != constantNodes.end())
      tensor = c->second;
    if (!tensor || tensor->data_location() == onnx::TensorProto::EXTERNAL)
      return std::nullopt;
    HostTensor value;
    if (!decodeTensorProto(*tensor, value).empty() || value.getNumElements() != 1 ||
        !value.isFloat())
      return std::nullopt;
    return value.getFloat(0);
  }

  /// A 1-D initializer (scale or bias), directly or through Identity nodes
  /// (torch.onnx shares equal initializers so: ViT-B/16's zero biases).
  const onnx::TensorProto *vector(const std::string &value) const {
    std::string name = value;
    for (int hops = 0; hops < 8; ++hops) {
      if (auto it = initializers.find(name); it != initializers.end())
        return it->second->dims_size() == 1 ? it->second : nullptr;
      auto identity = identities.find(name);
      if (identity == identities.end())
        return nullptr;
      name = identity->second;
    }
    return nullptr;
  }

  /// The one node reading `value`, an `op` whose other operand is a 1-D
  /// initializer (vector()): the node and the initializer.
  std::optional<std::pair<size_t, const onnx::TensorProto *>>
  byVector(const std::string &value, const char *op) const {
    std::optional<size_t> n = onlyReader(value, op);
    std::optional<std::string> operand = n ? other(node(*n), value) : std::nullopt;
    const onnx::TensorProto *v = operand ? vector(*operand) : nullptr;
    if (!v)
      return std::nullopt;
    return std::make_pair(*n, v);
  }

  /// ReduceMean of `input` over the last axis, dimensions kept.
  bool isMeanOverLastAxis(const onnx::NodeProto &n, const std::string &input) const {
    if (n.op_type() != "ReduceMean" || !n.domain().empty() || n.input_size() < 1 ||
        n.input(0) != input)
      return false;
    bool lastAxis = false;
    for (const onnx::AttributeProto &attr : n.attribute()) {
      if (attr.name() == "keepdims" && attr.i() != 1)
        return false;
      if (attr.name() == "axes")
        lastAxis = attr.ints_size() == 1 && attr.ints(0) == -1;
    }
    if (n.input_size() >= 2 && !n.input(1).empty()) { // opset 18: axes as an input
      auto it = initializers.find(n.input(1));
      HostTensor axes;
      lastAxis = it != initializers.end() && decodeTensorProto(*it->second, axes).empty() &&
                 axes.getNumElements() == 1 && axes.getInt(0) == -1;
    }
    return lastAxis;
  }

  /// The operand of binary node `n` other than `value` (either order).
  static std::optional<std::string> other(const onnx::NodeProto &n, const std::string &value) {
    if (n.input_size() != 2)
      return std::nullopt;
    if (n.input(0) == value && n.input(1) != value)
      return n.input(1);
    if (n.input(1) == value && n.input(0) != value)
      return n.input(0);
    return std::nullopt;
  }

  const onnx::GraphProto &graph;
  std::map<std::string, std::vector<size_t>> consumers;
  std::set<std::string> graphOutputs;
  std::map<std::string, const onnx::TensorProto *> initializers, constantNodes;
  std::map<std::string, std::string> identities; // output -> input
};

std::optional<LayerNormFold> Matcher::match(size_t first) const {
  const onnx::NodeProto &mean = node(first);
  if (mean.input_size() < 1 || mean.output_size() != 1)
    return std::nullopt;
  const std::string &x = mean.input(0);
  if (!isMeanOverLastAxis(mean, x))
    return std::nullopt;
  // d = x - mean
  std::optional<size_t> sub = onlyReader(mean.output(0), "Sub");
  if (!sub || node(*sub).input_size() != 2 || node(*sub).input(0) != x)
    return std::nullopt;
  const std::string &d = node(*sub).output(0);
  // d is read by the square and by the division.
  auto readers = consumers.find(d);
  if (graphOutputs.count(d) || readers == consumers.end() || readers->second.size() != 2)
    return std::nullopt;
  std::optional<size_t> square, div;
  for (size_t r : readers->second) {
    const onnx::NodeProto &n = node(r);
    if (!n.domain().empty() || n.output_size() != 1 || n.input_size() != 2)
      return std::nullopt;
    if (n.op_type() == "Pow" && n.input(0) == d && scalar(n.input(1)) == 2.0)
      square = r;
    else if (n.op_type() == "Mul" && n.input(0) == d && n.input(1) == d)
      square = r;
    else if (n.op_type() == "Div" && n.input(0) == d)
      div = r;
  }
  if (!square || !div)
    return std::nullopt;
  // v = mean of the squares; s = sqrt(v + eps); d / s
  std::optional<size_t> variance = onlyReader(node(*square).output(0), "ReduceMean");
  if (!variance || !isMeanOverLastAxis(node(*variance), node(*square).output(0)))
    return std::nullopt;
  std::optional<size_t> addEps = onlyReader(node(*variance).output(0), "Add");
  if (!addEps)
    return std::nullopt;
  std::optional<std::string> epsName = other(node(*addEps), node(*variance).output(0));
  std::optional<double> eps = epsName ? scalar(*epsName) : std::nullopt;
  if (!eps || !(*eps >= 0))
    return std::nullopt;
  std::optional<size_t> sqrt = onlyReader(node(*addEps).output(0), "Sqrt");
  if (!sqrt || onlyReader(node(*sqrt).output(0), "Div") != div ||
      node(*div).input(1) != node(*sqrt).output(0))
    return std::nullopt;
  // y = n * scale + bias
  auto scale = byVector(node(*div).output(0), "Mul");
  auto bias = scale ? byVector(node(scale->first).output(0), "Add") : std::nullopt;
  if (!bias || bias->second->dims(0) != scale->second->dims(0))
    return std::nullopt;
  const size_t add = bias->first;

  LayerNormFold fold;
  fold.first = first;
  fold.nodes = {first, *sub, *square, *variance, *addEps, *sqrt, *div, scale->first, add};
  // The initializers themselves (defined from the start), not the Identity
  // nodes between, which may come later in the graph.
  fold.x = x;
  fold.scale = scale->second->name();
  fold.bias = bias->second->name();
  fold.length = scale->second->dims(0);
  onnx::NodeProto &fused = fold.fused;
  fused.set_op_type("LayerNormalization");
  fused.set_name(node(add).name());
  fused.add_input(x);
  fused.add_input(fold.scale);
  fused.add_input(fold.bias);
  fused.add_output(node(add).output(0));
  auto attribute = [&](const char *name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto *a = fused.add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  };
  attribute("axis", onnx::AttributeProto::INT)->set_i(-1);
  attribute("epsilon", onnx::AttributeProto::FLOAT)->set_f(float(*eps));
  return fold;
}

} // namespace

std::vector<LayerNormFold> cgc::import::findDecomposedLayerNorms(const onnx::GraphProto &graph) {
  std::vector<LayerNormFold> folds;
  // Most graphs have no ReduceMean: no maps of the whole graph for them.
  if (std::none_of(graph.node().begin(), graph.node().end(),
                   [](const onnx::NodeProto &n) { return n.op_type() == "ReduceMean"; }))
    return folds;
  Matcher matcher(graph);
  std::set<size_t> taken;
  for (int i = 0; i < graph.node_size(); ++i) {
    if (graph.node(i).op_type() != "ReduceMean" || taken.count(size_t(i)))
      continue;
    std::optional<LayerNormFold> fold = matcher.match(size_t(i));
    if (!fold)
      continue;
    taken.insert(fold->nodes.begin(), fold->nodes.end());
    folds.push_back(std::move(*fold));
  }
  return folds;
}
