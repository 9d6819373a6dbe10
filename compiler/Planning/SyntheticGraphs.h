//===- SyntheticGraphs.h - Model-zoo-like and random graphs -----*- C++ -*-===//
//
// Graphs for testing and benchmarking the planner without the ONNX models:
// faithful layer-by-layer reconstructions of well-known architectures with
// their real fp32 tensor sizes (batch 1), and random DAGs. Library
// CGCPlanningSynthetic; not linked into the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_PLANNING_SYNTHETICGRAPHS_H
#define CGC_COMPILER_PLANNING_SYNTHETICGRAPHS_H

#include "compiler/Planning/Planning.h"

#include <string>
#include <vector>

namespace cgc::planning::synthetic {

/// How finely a model is cut into dispatches.
enum class Granularity {
  /// One node per fused conv+bn+activation(+residual add), per matmul with
  /// its bias/activation/residual epilogue, and per other layer (pooling,
  /// softmax, layer norm, squeeze-excite pieces). Residual epilogues may run
  /// in place of the residual.
  Fused,
  /// One node per ONNX-level layer: conv, batch norm, activation and add are
  /// separate nodes; the elementwise ones may run in place.
  Layers,
};

const char *granularityName(Granularity granularity);

/// ResNet-50 v1.5 (torchvision) at 1x3x224x224: stem, 16 bottleneck blocks
/// (4 with a projection shortcut), global pooling and the classifier.
Graph resnet50(Granularity granularity);
/// MobileNetV2 at 224x224: 17 inverted residual blocks.
Graph mobileNetV2(Granularity granularity);
/// EfficientNet-B0 at 224x224: 16 MBConv blocks with squeeze-excite.
Graph efficientNetB0(Granularity granularity);
/// A BERT-base encoder (hidden 768, 12 heads, FFN 3072) with `layers`
/// layers at sequence length `sequence`, with embeddings and pooler.
Graph bertBase(Granularity granularity, int layers = 12, int sequence = 128);

struct NamedGraph {
  std::string name;
  Graph graph;
};

/// Every zoo graph at both granularities.
std::vector<NamedGraph> modelZoo();

struct RandomGraphOptions {
  int32_t minNodes = 2;
  int32_t maxNodes = 120;
};

/// A random DAG, a different one per seed: chains with skip connections,
/// independent branches that join, or general DAGs with local and long
/// edges; fan-in 1-4, nodes with several outputs, elementwise nodes that are
/// in-place candidates, model inputs, constants, model outputs (some read
/// by later nodes), dead outputs and zero-byte tensors; sizes either
/// shape-like (channels x spatial x 4 bytes) or arbitrary byte counts.
Graph randomGraph(uint64_t seed, const RandomGraphOptions &options = {});

} // namespace cgc::planning::synthetic

#endif // CGC_COMPILER_PLANNING_SYNTHETICGRAPHS_H
