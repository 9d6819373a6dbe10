//===- MappedModel.cpp - Parse an ONNX model leaving weights mapped -------===//

#include "compiler/Import/MappedModel.h"

#include <string>

namespace cgc::import {
namespace {

// Field numbers of onnx.proto.
constexpr uint32_t kModelGraph = 7;
constexpr uint32_t kGraphNode = 1;
constexpr uint32_t kGraphInitializer = 5;
constexpr uint32_t kNodeAttribute = 5;
constexpr uint32_t kAttributeTensor = 5;
constexpr uint32_t kTensorRawData = 9;

enum WireType { Varint = 0, Fixed64 = 1, Length = 2, Fixed32 = 5 };

struct Field {
  uint32_t number = 0;
  int type = 0;
  const uint8_t *start = nullptr, *end = nullptr;
  const uint8_t *payload = nullptr;
  const uint8_t *payloadEnd = nullptr;
};

/// Walks the wire format of one message, field by field.
class Reader {
public:
  Reader(const uint8_t *begin, const uint8_t *end, const uint8_t *fileStart,
         std::string &error)
      : p(begin), end(end), fileStart(fileStart), error(error) {}

  bool done() const { return p >= end; }

  bool next(Field &field) {
    field.start = p;
    uint64_t tag;
    if (!readVarint(tag))
      return false;
    field.number = static_cast<uint32_t>(tag >> 3);
    field.type = static_cast<int>(tag & 7);
    if (field.number == 0)
      return fail("a field number of 0");
    uint64_t skip = 0;
    switch (field.type) {
    case Varint: {
      uint64_t ignored;
      if (!readVarint(ignored))
        return false;
      break;
    }
    case Fixed64:
      skip = 8;
      break;
    case Fixed32:
      skip = 4;
      break;
    case Length:
      if (!readVarint(skip))
        return false;
      field.payload = p;
      break;
    default:
      return fail("wire type " + std::to_string(field.type) +
                  " (groups are not used by ONNX)");
    }
    if (skip > static_cast<uint64_t>(end - p))
      return fail("a field that runs past the end of its message");
    p += skip;
    field.payloadEnd = p;
    field.end = p;
    return true;
  }

private:
  bool readVarint(uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end)
        return fail("a truncated varint");
      uint8_t byte = *p++;
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return fail("a malformed varint");
  }

  bool fail(const std::string &what) {
    error = what + " at byte " + std::to_string(p - fileStart);
    return false;
  }

  const uint8_t *p, *end, *fileStart;
  std::string &error;
};

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void appendMessage(std::string &out, uint32_t number,
                   const std::string &payload) {
  appendVarint(out, (static_cast<uint64_t>(number) << 3) | Length);
  appendVarint(out, payload.size());
  out += payload;
}

void appendField(std::string &out, const Field &field) {
  out.append(reinterpret_cast<const char *>(field.start),
             field.end - field.start);
}

class Stripper {
public:
  Stripper(const uint8_t *fileStart, MappedTensorData &data)
      : fileStart(fileStart), data(data) {}

  std::string error;

  bool tensor(const uint8_t *begin, const uint8_t *end, std::string &out,
              std::optional<llvm::ArrayRef<uint8_t>> &raw) {
    Reader reader(begin, end, fileStart, error);
    Field field;
    while (!reader.done()) {
      if (!reader.next(field))
        return false;
      if (field.number == kTensorRawData && field.type == Length)
        raw = llvm::ArrayRef<uint8_t>(field.payload,
                                      field.payloadEnd - field.payload);
      else
        appendField(out, field);
    }
    return true;
  }

  bool node(const uint8_t *begin, const uint8_t *end, std::string &out,
            int nodeIndex) {
    Reader reader(begin, end, fileStart, error);
    Field field;
    int attributeIndex = 0;
    while (!reader.done()) {
      if (!reader.next(field))
        return false;
      if (field.number != kNodeAttribute || field.type != Length) {
        appendField(out, field);
        continue;
      }
      // An attribute: strip the raw data of its tensor value.
      std::string attribute;
      Reader inner(field.payload, field.payloadEnd, fileStart, error);
      Field attributeField;
      std::optional<llvm::ArrayRef<uint8_t>> raw;
      while (!inner.done()) {
        if (!inner.next(attributeField))
          return false;
        if (attributeField.number == kAttributeTensor &&
            attributeField.type == Length) {
          std::string stripped;
          if (!tensor(attributeField.payload, attributeField.payloadEnd,
                      stripped, raw))
            return false;
          appendMessage(attribute, kAttributeTensor, stripped);
        } else {
          appendField(attribute, attributeField);
        }
      }
      if (raw)
        data.nodeAttributes[{nodeIndex, attributeIndex}] = *raw;
      ++attributeIndex;
      appendMessage(out, kNodeAttribute, attribute);
    }
    return true;
  }

  bool graph(const uint8_t *begin, const uint8_t *end, std::string &out) {
    Reader reader(begin, end, fileStart, error);
    Field field;
    int nodeIndex = 0;
    while (!reader.done()) {
      if (!reader.next(field))
        return false;
      if (field.type == Length && field.number == kGraphInitializer) {
        std::string stripped;
        std::optional<llvm::ArrayRef<uint8_t>> raw;
        if (!tensor(field.payload, field.payloadEnd, stripped, raw))
          return false;
        data.initializers.push_back(raw);
        appendMessage(out, kGraphInitializer, stripped);
      } else if (field.type == Length && field.number == kGraphNode) {
        std::string stripped;
        if (!node(field.payload, field.payloadEnd, stripped, nodeIndex++))
          return false;
        appendMessage(out, kGraphNode, stripped);
      } else {
        appendField(out, field);
      }
    }
    return true;
  }

  bool model(const uint8_t *begin, const uint8_t *end, std::string &out) {
    Reader reader(begin, end, fileStart, error);
    Field field;
    bool seenGraph = false;
    while (!reader.done()) {
      if (!reader.next(field))
        return false;
      if (field.type == Length && field.number == kModelGraph) {
        if (seenGraph) {
          error = "the model holds its graph field twice";
          return false;
        }
        seenGraph = true;
        std::string stripped;
        if (!graph(field.payload, field.payloadEnd, stripped))
          return false;
        appendMessage(out, kModelGraph, stripped);
      } else {
        appendField(out, field);
      }
    }
    return true;
  }

private:
  const uint8_t *fileStart;
  MappedTensorData &data;
};

} // namespace

std::string parseMappedModel(std::shared_ptr<llvm::MemoryBuffer> file,
                             onnx::ModelProto &model, MappedTensorData &data) {
  data = MappedTensorData();
  data.file = file;
  const auto *begin =
      reinterpret_cast<const uint8_t *>(file->getBufferStart());
  const auto *end = reinterpret_cast<const uint8_t *>(file->getBufferEnd());
  Stripper stripper(begin, data);
  std::string stripped;
  if (!stripper.model(begin, end, stripped))
    return "the protobuf wire format is broken: " + stripper.error;
  if (!model.ParseFromString(stripped))
    return "the protobuf does not parse as an onnx.ModelProto";
  if (static_cast<int>(data.initializers.size()) !=
      model.graph().initializer_size())
    return "the initializers do not match the parsed graph";
  return "";
}

} // namespace cgc::import
