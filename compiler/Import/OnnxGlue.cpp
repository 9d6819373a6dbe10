//===- OnnxGlue.cpp - Exception-safe calls into libonnx -------------------===//
//
// Compiled with -fexceptions (see CMakeLists.txt): every exception libonnx or
// protobuf may throw is caught here and returned as a message.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/OnnxGlue.h"

#include "onnx/defs/parser.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <exception>
#include <sstream>

namespace cgc::onnx_glue {

namespace {
/// Collects protobuf text-format errors with their line and column.
class TextErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, int column, const std::string &message) override {
    if (text.empty())
      text = "line " + std::to_string(line + 1) + ", column " +
             std::to_string(column + 1) + ": " + message;
  }
  std::string text;
};
} // namespace

std::string parseTextModel(const std::string &text, onnx::ModelProto &model) {
  try {
    onnx::OnnxParser parser(text.c_str());
    onnx::Status status = parser.Parse(model);
    if (!status.IsOK())
      return status.ErrorMessage();
    if (!parser.EndOfInput())
      return "unexpected text after the model";
    return "";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error while parsing ONNX text";
  }
}

std::string parseProtoTextModel(const std::string &text,
                                onnx::ModelProto &model) {
  try {
    google::protobuf::TextFormat::Parser parser;
    // As the binary parser's default: deeper nesting (subgraphs in
    // subgraphs) is refused instead of exhausting the stack.
    parser.SetRecursionLimit(100);
    TextErrorCollector errors;
    parser.RecordErrorsTo(&errors);
    if (!parser.ParseFromString(text, &model))
      return errors.text.empty() ? "malformed protobuf text" : errors.text;
    return "";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error while parsing protobuf text";
  }
}

std::string inferShapes(onnx::ModelProto &model) {
  try {
    onnx::ShapeInferenceOptions options(/*check_type=*/true,
                                        /*strict_mode=*/1,
                                        /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model,
                                       onnx::OpSchemaRegistry::Instance(),
                                       options);
    return "";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error in ONNX shape inference";
  }
}

const onnx::OpSchema *lookupSchema(const std::string &opType,
                                   const std::string &domain, int version) {
  try {
    return onnx::OpSchemaRegistry::Schema(opType, version, domain);
  } catch (...) {
    return nullptr;
  }
}

std::pair<int, int> getOpsetRange(const std::string &domain) {
  try {
    const auto &map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto it = map.find(domain);
    if (it == map.end())
      return {0, 0};
    return it->second;
  } catch (...) {
    return {0, 0};
  }
}

bool hasFunctionBody(const onnx::OpSchema &schema) {
  return schema.HasFunction() || schema.HasContextDependentFunction();
}

std::string buildFunctionBody(const onnx::OpSchema &schema,
                              const onnx::NodeProto &node,
                              const std::vector<onnx::TypeProto> &inputTypes,
                              onnx::FunctionProto &body) {
  try {
    if (schema.HasFunction()) {
      const onnx::FunctionProto *function = schema.GetFunction();
      if (!function)
        return "the schema has no function body";
      body = *function;
      return "";
    }
    if (!schema.HasContextDependentFunction())
      return "the schema has no function body";
    onnx::FunctionBodyBuildContextImpl context(node, inputTypes);
    if (!schema.BuildContextDependentFunction(context, body))
      return "ONNX could not build the function body for this node";
    return "";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error while building the function body";
  }
}

std::string verifyNode(const onnx::OpSchema &schema,
                       const onnx::NodeProto &node) {
  try {
    schema.Verify(node);
    return "";
  } catch (const std::exception &e) {
    return e.what();
  } catch (...) {
    return "unknown error while checking the node";
  }
}

SchemaSignature getSignature(const onnx::OpSchema &schema) {
  SchemaSignature signature;
  try {
    signature.sinceVersion = std::to_string(schema.SinceVersion());
    for (const auto &input : schema.inputs())
      signature.inputs.push_back(input.GetName());
    for (const auto &output : schema.outputs())
      signature.outputs.push_back(output.GetName());
    for (const auto &[name, attribute] : schema.attributes()) {
      bool hasDefault =
          attribute.default_value.type() != onnx::AttributeProto::UNDEFINED;
      signature.attributes.emplace_back(name, hasDefault);
      if (hasDefault) {
        signature.defaults.push_back(attribute.default_value);
        signature.defaults.back().set_name(name);
      }
    }
  } catch (...) {
  }
  return signature;
}

std::string getInputName(const onnx::OpSchema &schema, int index) {
  const auto &inputs = schema.inputs();
  if (inputs.empty() || index < 0)
    return "";
  if (static_cast<size_t>(index) < inputs.size())
    return inputs[index].GetName();
  // Trailing variadic inputs share the last formal name.
  if (inputs.back().GetOption() == onnx::OpSchema::Variadic)
    return inputs.back().GetName();
  return "";
}

} // namespace cgc::onnx_glue
