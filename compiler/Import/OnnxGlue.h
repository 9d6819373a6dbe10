//===- OnnxGlue.h - Exception-safe calls into libonnx -----------*- C++ -*-===//
//
// libonnx reports errors by throwing C++ exceptions, and the compiler builds
// with -fno-exceptions. Every call into libonnx that may throw goes through
// this interface, whose one translation unit is compiled with -fexceptions
// and turns exceptions into error strings. Nothing here includes MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_ONNXGLUE_H
#define CGC_COMPILER_IMPORT_ONNXGLUE_H

#include "onnx/onnx_pb.h"

#include <string>
#include <utility>
#include <vector>

namespace onnx {
class OpSchema;
} // namespace onnx

namespace cgc::onnx_glue {

/// Parses ONNX's textual syntax (`<ir_version: 8, ...> graph (...) => (...)
/// {...}`) into `model`. Returns an error message, empty on success.
std::string parseTextModel(const std::string &text, onnx::ModelProto &model);

/// Parses protobuf text format (`ir_version: 8 graph { node { ... } }`).
std::string parseProtoTextModel(const std::string &text,
                                onnx::ModelProto &model);

/// Runs ONNX shape inference on the main graph with data propagation; errors
/// of node-level inference are reported (strict mode). Writes the inferred
/// types to `model.graph().value_info()`. Returns an error message, empty on
/// success.
std::string inferShapes(onnx::ModelProto &model);

/// The schema of `opType` in `domain` at opset `version` (the newest version
/// not after it), or null. Never throws.
const onnx::OpSchema *lookupSchema(const std::string &opType,
                                   const std::string &domain, int version);

/// The [min, max] opset versions libonnx knows for `domain`; {0, 0} if none.
std::pair<int, int> getOpsetRange(const std::string &domain);

/// Whether `schema` has a function body (static or built from the node's
/// context).
bool hasFunctionBody(const onnx::OpSchema &schema);

/// Builds the function body of `node` under `schema`: the static body, or
/// the context-dependent one built for `inputTypes` (one per node input;
/// default-constructed for absent inputs). Returns an error message, empty on
/// success.
std::string buildFunctionBody(const onnx::OpSchema &schema,
                              const onnx::NodeProto &node,
                              const std::vector<onnx::TypeProto> &inputTypes,
                              onnx::FunctionProto &body);

/// Checks `node` against `schema` (input and output counts, attribute names
/// and types, required attributes). Returns an error message, empty if the
/// node is valid.
std::string verifyNode(const onnx::OpSchema &schema,
                       const onnx::NodeProto &node);

/// The names of the formal inputs, outputs and attributes of `schema`.
struct SchemaSignature {
  std::string sinceVersion;
  std::vector<std::string> inputs, outputs;
  /// Attribute name and whether the schema gives it a default.
  std::vector<std::pair<std::string, bool>> attributes;
  /// Default values of attributes that have one.
  std::vector<onnx::AttributeProto> defaults;
};
SchemaSignature getSignature(const onnx::OpSchema &schema);

/// The name of a formal input or output of `schema` ("" if out of range).
std::string getInputName(const onnx::OpSchema &schema, int index);

} // namespace cgc::onnx_glue

#endif // CGC_COMPILER_IMPORT_ONNXGLUE_H
