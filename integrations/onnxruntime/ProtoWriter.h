//===- ProtoWriter.h - Writing ONNX protobuf messages -----------*- C++ -*-===//
//
// The plugin execution provider hands cgc's compiler an ONNX model built from
// ONNX Runtime's OrtGraph. It writes the few ONNX messages it needs itself
// (the protobuf wire format is five encodings), so the plugin links neither
// libprotobuf nor libonnx into ONNX Runtime's process: the compiler module,
// loaded by the runtime when a model is compiled, owns those.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_ORT_EP_PROTOWRITER_H
#define CGC_ORT_EP_PROTOWRITER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cgc::ort_ep {

/// One protobuf message, written field by field in the order of the calls.
class ProtoWriter {
public:
  void varint(int field, uint64_t value);
  void signedVarint(int field, int64_t value) { varint(field, static_cast<uint64_t>(value)); }
  void float32(int field, float value);
  void bytes(int field, const void *data, size_t size);
  void string(int field, std::string_view text) { bytes(field, text.data(), text.size()); }
  void message(int field, const ProtoWriter &child) { bytes(field, child.out.data(), child.out.size()); }
  void packedInt64(int field, const int64_t *values, size_t count);
  void packedFloat(int field, const float *values, size_t count);

  const std::string &data() const { return out; }
  std::string take() { return std::move(out); }

private:
  void tag(int field, int wireType);
  void rawVarint(uint64_t value);
  std::string out;
};

/// Field numbers of onnx.proto (ONNX IR version 10) used by the exporter.
namespace onnx_field {
enum Model { kModelIrVersion = 1, kModelProducerName = 2, kModelGraph = 7, kModelOpsetImport = 8 };
enum OpsetId { kOpsetDomain = 1, kOpsetVersion = 2 };
enum Graph {
  kGraphNode = 1, kGraphName = 2, kGraphInitializer = 5, kGraphInput = 11, kGraphOutput = 12
};
enum Node {
  kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5,
  kNodeDomain = 7
};
enum Attribute {
  kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrT = 5, kAttrG = 6, kAttrFloats = 7,
  kAttrInts = 8, kAttrStrings = 9, kAttrType = 20
};
enum AttributeType {
  kAttrTypeFloat = 1, kAttrTypeInt = 2, kAttrTypeString = 3, kAttrTypeTensor = 4,
  kAttrTypeGraph = 5, kAttrTypeFloats = 6, kAttrTypeInts = 7, kAttrTypeStrings = 8
};
enum Tensor { kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9 };
enum ValueInfo { kValueInfoName = 1, kValueInfoType = 2 };
enum Type { kTypeTensor = 1 };
enum TensorType { kTensorTypeElemType = 1, kTensorTypeShape = 2 };
enum Shape { kShapeDim = 1 };
enum Dim { kDimValue = 1, kDimParam = 2 };
} // namespace onnx_field

} // namespace cgc::ort_ep

#endif // CGC_ORT_EP_PROTOWRITER_H
