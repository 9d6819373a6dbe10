//===- ProtoWriter.cpp - Writing ONNX protobuf messages -------------------===//

#include "ProtoWriter.h"

#include <cstring>

namespace cgc::ort_ep {

void ProtoWriter::rawVarint(uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void ProtoWriter::tag(int field, int wireType) {
  rawVarint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wireType));
}

void ProtoWriter::varint(int field, uint64_t value) {
  tag(field, 0);
  rawVarint(value);
}

void ProtoWriter::float32(int field, float value) {
  tag(field, 5);
  char bits[4];
  std::memcpy(bits, &value, 4); // little-endian hosts only, as the runtime
  out.append(bits, 4);
}

void ProtoWriter::bytes(int field, const void *data, size_t size) {
  tag(field, 2);
  rawVarint(size);
  out.append(static_cast<const char *>(data), size);
}

void ProtoWriter::packedInt64(int field, const int64_t *values, size_t count) {
  ProtoWriter packed;
  for (size_t i = 0; i < count; ++i)
    packed.rawVarint(static_cast<uint64_t>(values[i]));
  bytes(field, packed.out.data(), packed.out.size());
}

void ProtoWriter::packedFloat(int field, const float *values, size_t count) {
  bytes(field, values, count * sizeof(float));
}

} // namespace cgc::ort_ep
