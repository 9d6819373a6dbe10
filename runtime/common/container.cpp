//===- container.cpp - DX containers and MLIR interface GUIDs -------------===//

#include "cgc/container.h"
#include "cgc/dtype.h"

#include <cstdio>
#include <cstring>

namespace cgc {

//===----------------------------------------------------------------------===//
// GUIDs
//===----------------------------------------------------------------------===//

bool Guid::operator==(const Guid &other) const {
  return data1 == other.data1 && data2 == other.data2 &&
         data3 == other.data3 &&
         std::memcmp(data4, other.data4, sizeof(data4)) == 0;
}

std::string Guid::str() const {
  char text[40];
  std::snprintf(text, sizeof(text),
                "{%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X}", data1,
                data2, data3, data4[0], data4[1], data4[2], data4[3], data4[4],
                data4[5], data4[6], data4[7]);
  return text;
}

static int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::optional<Guid> Guid::parse(std::string_view text) {
  if (text.size() == 38 && text.front() == '{' && text.back() == '}')
    text = text.substr(1, 36);
  if (text.size() != 36 || text[8] != '-' || text[13] != '-' ||
      text[18] != '-' || text[23] != '-')
    return std::nullopt;
  uint8_t bytes[16];
  size_t n = 0;
  for (size_t i = 0; i < text.size() && n < 16;) {
    if (text[i] == '-') {
      ++i;
      continue;
    }
    int hi = hexValue(text[i]), lo = hexValue(text[i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    bytes[n++] = uint8_t(hi << 4 | lo);
    i += 2;
  }
  if (n != 16)
    return std::nullopt;
  Guid guid;
  guid.data1 = uint32_t(bytes[0]) << 24 | uint32_t(bytes[1]) << 16 |
               uint32_t(bytes[2]) << 8 | bytes[3];
  guid.data2 = uint16_t(bytes[4] << 8 | bytes[5]);
  guid.data3 = uint16_t(bytes[6] << 8 | bytes[7]);
  std::memcpy(guid.data4, bytes + 8, 8);
  return guid;
}

namespace interfaces {
// Values from the spec's appendix "DXCGC MLIR Interfaces".
const Guid kInput = {0x7fc4f23f, 0x2474, 0x4ae8,
                     {0xae, 0x7a, 0x27, 0x22, 0x11, 0x8b, 0x35, 0x0e}};
const Guid kOutput = {0xf53e923f, 0x5300, 0x4eef,
                      {0x8f, 0x1e, 0xad, 0xa0, 0x3f, 0xff, 0x26, 0x05}};
const Guid kSubgraphPartition = {
    0xeaa277c3, 0x190d, 0x4049, {0xa7, 0xb0, 0xa6, 0x11, 0xb1, 0x17, 0x01, 0xb6}};
const Guid kSubgraphDeclarationRequest = {
    0xeb53032a, 0x1116, 0x4e71, {0x83, 0x09, 0x54, 0x34, 0x7c, 0x1e, 0x5a, 0x26}};
const Guid kSubgraphDeclaration = {
    0xbe441609, 0x6ab8, 0x4fa8, {0xb5, 0x51, 0x01, 0x9e, 0xd9, 0x38, 0xc2, 0x98}};
const Guid kSubgraphSpecializationRequest = {
    0xebed5ed6, 0x2206, 0x457b, {0x8b, 0xd0, 0xab, 0xfc, 0xc6, 0x77, 0x19, 0x5b}};
const Guid kSubgraphSpecialization = {
    0xf90a981e, 0x0fcd, 0x46d8, {0x8a, 0xa1, 0x16, 0x69, 0x94, 0xc4, 0xde, 0x02}};

const char *name(const Guid &guid) {
  struct Entry {
    const Guid *guid;
    const char *name;
  };
  static const Entry entries[] = {
      {&kInput, "CGC_INPUT"},
      {&kOutput, "CGC_OUTPUT"},
      {&kSubgraphPartition, "CGC_SUBGRAPH_PARTITION"},
      {&kSubgraphDeclarationRequest, "CGC_SUBGRAPH_DECLARATION_REQUEST"},
      {&kSubgraphDeclaration, "CGC_SUBGRAPH_DECLARATION"},
      {&kSubgraphSpecializationRequest, "CGC_SUBGRAPH_SPECIALIZATION_REQUEST"},
      {&kSubgraphSpecialization, "CGC_SUBGRAPH_SPECIALIZATION"},
  };
  for (const Entry &entry : entries)
    if (*entry.guid == guid)
      return entry.name;
  return nullptr;
}

bool isKnown(const Guid &guid) { return name(guid) != nullptr; }
} // namespace interfaces

std::string fourCCString(uint32_t fourCC) {
  char text[5];
  for (int i = 0; i < 4; ++i) {
    char c = char((fourCC >> (8 * i)) & 0xff);
    if (c < 0x20 || c > 0x7e) {
      char hex[16];
      std::snprintf(hex, sizeof(hex), "0x%08X", fourCC);
      return hex;
    }
    text[i] = c;
  }
  text[4] = 0;
  return text;
}

//===----------------------------------------------------------------------===//
// Little-endian helpers
//===----------------------------------------------------------------------===//

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
static void put16(uint8_t *p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
static uint32_t get32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
static uint16_t get16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }

static void putGuid(uint8_t *p, const Guid &g) {
  put32(p, g.data1);
  put16(p + 4, g.data2);
  put16(p + 6, g.data3);
  std::memcpy(p + 8, g.data4, 8);
}
static Guid getGuid(const uint8_t *p) {
  Guid g;
  g.data1 = get32(p);
  g.data2 = get16(p + 4);
  g.data3 = get16(p + 6);
  std::memcpy(g.data4, p + 8, 8);
  return g;
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void ContainerWriter::addPart(uint32_t fourCC, const void *data, size_t size) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  parts_.push_back({fourCC, std::vector<uint8_t>(bytes, bytes + size), 0});
}

void ContainerWriter::addMLIRPart(const Guid &interface,
                                  std::string_view bytecode) {
  std::vector<uint8_t> data(16 + bytecode.size());
  putGuid(data.data(), interface);
  std::memcpy(data.data() + 16, bytecode.data(), bytecode.size());
  parts_.push_back({parts::kMLIR, std::move(data), 0});
}

void ContainerWriter::addAlignedPart(uint32_t fourCC, const void *data,
                                     size_t size, size_t alignment) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  parts_.push_back({fourCC, std::vector<uint8_t>(bytes, bytes + size),
                    alignment ? alignment : 1});
}

std::vector<uint8_t> ContainerWriter::finish(std::string *error) const {
  // Lay out: header, offset table, then each part (header + payload).
  size_t offset = kContainerHeaderSize + 4 * parts_.size();
  std::vector<size_t> offsets, paddings;
  for (const Part &part : parts_) {
    offsets.push_back(offset);
    size_t payload = part.data.size();
    size_t padding = 0;
    if (part.alignment) {
      size_t dataStart = offset + 8 + 4;
      padding = (part.alignment - dataStart % part.alignment) % part.alignment;
      payload += 4 + padding;
    }
    paddings.push_back(padding);
    offset += 8 + payload;
  }
  if (offset > UINT32_MAX) {
    if (error)
      *error = "container of " + std::to_string(offset) +
               " bytes exceeds the 4 GiB limit of the DX container format";
    return {};
  }
  std::vector<uint8_t> out(offset, 0);
  put32(out.data(), kContainerFourCC);
  put16(out.data() + 20, kContainerMajor);
  put16(out.data() + 22, kContainerMinor);
  put32(out.data() + 24, uint32_t(offset));
  put32(out.data() + 28, uint32_t(parts_.size()));
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part &part = parts_[i];
    uint8_t *p = out.data() + offsets[i];
    put32(out.data() + kContainerHeaderSize + 4 * i, uint32_t(offsets[i]));
    size_t payload = part.data.size() + (part.alignment ? 4 + paddings[i] : 0);
    put32(p, part.fourCC);
    put32(p + 4, uint32_t(payload));
    p += 8;
    if (part.alignment) {
      put32(p, uint32_t(paddings[i]));
      p += 4 + paddings[i];
    }
    if (!part.data.empty())
      std::memcpy(p, part.data.data(), part.data.size());
  }
  md5(out.data() + 20, out.size() - 20, out.data() + 4);
  return out;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

bool ContainerReader::open(const void *data, size_t size, std::string &error) {
  base_ = static_cast<const uint8_t *>(data);
  size_ = size;
  parts_.clear();
  if (size < kContainerHeaderSize) {
    error = "container is truncated: " + std::to_string(size) +
            " bytes, smaller than the 32-byte header";
    return false;
  }
  if (get32(base_) != kContainerFourCC) {
    error = "not a DX container: the file does not start with 'DXBC'";
    return false;
  }
  uint16_t major = get16(base_ + 20), minor = get16(base_ + 22);
  if (major != kContainerMajor) {
    error = "unsupported DX container version " + std::to_string(major) + "." +
            std::to_string(minor) + " (this build reads " +
            std::to_string(kContainerMajor) + ".x)";
    return false;
  }
  uint32_t total = get32(base_ + 24);
  if (total != size) {
    error = "container size field says " + std::to_string(total) +
            " bytes but " + std::to_string(size) +
            " are present (truncated or padded)";
    return false;
  }
  uint32_t count = get32(base_ + 28);
  if (count > (size - kContainerHeaderSize) / 4) {
    error = "part count " + std::to_string(count) +
            " does not fit in the container";
    return false;
  }
  size_t expected = kContainerHeaderSize + 4 * size_t(count);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t offset = get32(base_ + kContainerHeaderSize + 4 * i);
    if (offset != expected) {
      error = "part " + std::to_string(i) + " starts at byte " +
              std::to_string(offset) + " but the previous part ends at " +
              std::to_string(expected) + " (parts must not overlap or leave gaps)";
      return false;
    }
    if (size - offset < 8) {
      error = "part " + std::to_string(i) + " header runs past the end";
      return false;
    }
    uint32_t fourCC = get32(base_ + offset);
    uint32_t partSize = get32(base_ + offset + 4);
    if (partSize > size - offset - 8) {
      error = "part " + std::to_string(i) + " ('" + fourCCString(fourCC) +
              "') of " + std::to_string(partSize) +
              " bytes runs past the end of the container";
      return false;
    }
    parts_.push_back({fourCC, offset, {base_ + offset + 8, partSize}});
    expected = size_t(offset) + 8 + partSize;
  }
  if (expected != size) {
    error = "container has " + std::to_string(size - expected) +
            " bytes after its last part";
    return false;
  }
  uint8_t digest[16];
  md5(base_ + 20, size - 20, digest);
  if (std::memcmp(digest, base_ + 4, 16) != 0) {
    error = "container digest mismatch: the contents were modified after "
            "they were written";
    return false;
  }
  return true;
}

std::vector<const ContainerReader::Part *>
ContainerReader::find(uint32_t fourCC) const {
  std::vector<const Part *> found;
  for (const Part &part : parts_)
    if (part.fourCC == fourCC)
      found.push_back(&part);
  return found;
}

bool ContainerReader::checkKnownParts(const std::vector<uint32_t> &known,
                                      std::string &error) const {
  for (size_t i = 0; i < parts_.size(); ++i) {
    bool ok = false;
    for (uint32_t fourCC : known)
      ok |= parts_[i].fourCC == fourCC;
    if (!ok) {
      error = "unknown part '" + fourCCString(parts_[i].fourCC) +
              "' (part " + std::to_string(i) + ")";
      return false;
    }
  }
  return true;
}

bool ContainerReader::splitMLIRPart(const Part &part, Guid &interface,
                                    ByteView &bytecode, std::string &error) {
  if (part.fourCC != parts::kMLIR) {
    error = "part '" + fourCCString(part.fourCC) + "' is not an 'MLIR' part";
    return false;
  }
  if (part.data.size < 16) {
    error = "'MLIR' part is too small to hold its interface GUID";
    return false;
  }
  interface = getGuid(part.data.data);
  bytecode = {part.data.data + 16, part.data.size - 16};
  return true;
}

bool ContainerReader::alignedPayload(const Part &part, ByteView &payload,
                                     std::string &error) {
  if (part.data.size < 4) {
    error = "part '" + fourCCString(part.fourCC) + "' is too small";
    return false;
  }
  uint32_t padding = get32(part.data.data);
  if (padding > part.data.size - 4) {
    error = "part '" + fourCCString(part.fourCC) +
            "' padding runs past its end";
    return false;
  }
  payload = {part.data.data + 4 + padding, part.data.size - 4 - padding};
  return true;
}

//===----------------------------------------------------------------------===//
// MD5 (RFC 1321)
//===----------------------------------------------------------------------===//

namespace {
struct MD5State {
  uint32_t a = 0x67452301, b = 0xefcdab89, c = 0x98badcfe, d = 0x10325476;

  static uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

  void block(const uint8_t *p) {
    static const uint32_t k[64] = {
        0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
        0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
        0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
        0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
        0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
        0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
        0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
        0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
        0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
        0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
        0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
    static const int r[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7,
                              12, 17, 22, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,
                              14, 20, 5, 9,  14, 20, 4, 11, 16, 23, 4, 11, 16,
                              23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21,
                              6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
    uint32_t m[16];
    for (int i = 0; i < 16; ++i)
      m[i] = get32(p + 4 * i);
    uint32_t A = a, B = b, C = c, D = d;
    for (int i = 0; i < 64; ++i) {
      uint32_t f;
      int g;
      if (i < 16) {
        f = (B & C) | (~B & D);
        g = i;
      } else if (i < 32) {
        f = (D & B) | (~D & C);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = B ^ C ^ D;
        g = (3 * i + 5) % 16;
      } else {
        f = C ^ (B | ~D);
        g = (7 * i) % 16;
      }
      uint32_t next = D;
      D = C;
      C = B;
      B = B + rotl(A + f + k[i] + m[g], r[i]);
      A = next;
    }
    a += A;
    b += B;
    c += C;
    d += D;
  }
};
} // namespace

void md5(const void *data, size_t size, uint8_t digest[16]) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  MD5State state;
  size_t full = size / 64 * 64;
  for (size_t i = 0; i < full; i += 64)
    state.block(p + i);
  uint8_t tail[128] = {};
  size_t rest = size - full;
  std::memcpy(tail, p + full, rest);
  tail[rest] = 0x80;
  size_t tailSize = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bits = uint64_t(size) * 8;
  for (int i = 0; i < 8; ++i)
    tail[tailSize - 8 + i] = uint8_t(bits >> (8 * i));
  for (size_t i = 0; i < tailSize; i += 64)
    state.block(tail + i);
  put32(digest, state.a);
  put32(digest + 4, state.b);
  put32(digest + 8, state.c);
  put32(digest + 12, state.d);
}

} // namespace cgc

extern "C" cgc_dtype_t cgc_dtype_from_name(const char *name) {
  if (!name)
    return CGC_DTYPE_INVALID;
  static const cgc_dtype_t all[] = {
      CGC_DTYPE_FLOAT32, CGC_DTYPE_UINT8,   CGC_DTYPE_INT8,    CGC_DTYPE_UINT16,
      CGC_DTYPE_INT16,   CGC_DTYPE_INT32,   CGC_DTYPE_INT64,   CGC_DTYPE_BOOL,
      CGC_DTYPE_FLOAT16, CGC_DTYPE_FLOAT64, CGC_DTYPE_UINT32,  CGC_DTYPE_UINT64,
      CGC_DTYPE_BFLOAT16};
  for (cgc_dtype_t dtype : all)
    if (std::strcmp(cgc_dtype_name(dtype), name) == 0)
      return dtype;
  return CGC_DTYPE_INVALID;
}
