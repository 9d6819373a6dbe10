//===- ModelZoo.h - The models the C++ benchmarks measure -------*- C++ -*-===//
//
// The exports of scripts/export_models.py that bench/import and
// bench/pipeline read, with the input shapes that bind their symbolic
// dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_BENCH_MODELZOO_H
#define CGC_BENCH_MODELZOO_H

#include <vector>

namespace cgc::bench {

struct Model {
  const char *name;
  const char *file; // relative to the models directory
  std::vector<const char *> shapes;
  /// The BERT encoder again, its weights in a side file.
  bool externalData = false;
};

inline const std::vector<Model> &modelZoo() {
  static const std::vector<Model> zoo = {
      {"ResNet-50", "resnet50.onnx", {"input=1x3x224x224"}},
      {"MobileNetV2", "mobilenet_v2.onnx", {"input=1x3x224x224"}},
      {"EfficientNet-B0", "efficientnet_b0.onnx", {"input=1x3x224x224"}},
      {"BERT encoder", "bert_encoder.onnx",
       {"input_ids=1x128", "attention_mask=1x128"}},
      {"BERT encoder (external data)", "bert_encoder_external/model.onnx",
       {"input_ids=1x128", "attention_mask=1x128"}, /*externalData=*/true}};
  return zoo;
}

} // namespace cgc::bench

#endif // CGC_BENCH_MODELZOO_H
