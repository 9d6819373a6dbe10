//===- prepared_value.cpp - Prepared constants as a PSDB value ------------===//

#include "compiler_target.h"

#include <cstring>

namespace cgc::cpu {

std::string preparedValueKey(const Md5Digest &partition,
                             const std::vector<std::array<uint8_t, 16>> &digests,
                             const std::string &signature) {
  std::string text;
  for (const auto &d : digests)
    text.append(reinterpret_cast<const char *>(d.data()), d.size());
  text += signature;
  uint8_t which[16];
  md5(text.data(), text.size(), which);
  Md5Digest w;
  std::memcpy(w.data(), which, 16);
  return std::string(kAdapterFamily) + "/prepared/" + digestHex(partition) + "/" + digestHex(w);
}

namespace {
constexpr uint32_t kMagic = 0x52504743; // 'CGPR'
constexpr size_t kPage = 4096;

void put32(std::vector<uint8_t> &out, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
}
void put64(std::vector<uint8_t> &out, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
}
uint32_t get32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get64(const uint8_t *p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
size_t pad8(size_t n) { return (n + 7) / 8 * 8; }
} // namespace

std::vector<uint8_t> writePreparedValue(const std::vector<PreparedBlockRef> &blocks) {
  size_t header = 16;
  for (const auto &b : blocks)
    header += 24 + pad8(b.key.size());
  size_t at = (header + kPage - 1) / kPage * kPage;
  std::vector<size_t> offsets;
  for (const auto &b : blocks) {
    offsets.push_back(at);
    at = (at + b.bytes + kPage - 1) / kPage * kPage;
  }
  std::vector<uint8_t> out;
  out.reserve(at);
  put32(out, kMagic);
  put32(out, 1);
  put32(out, uint32_t(blocks.size()));
  put32(out, 0);
  for (size_t i = 0; i < blocks.size(); ++i) {
    put32(out, uint32_t(blocks[i].key.size()));
    put32(out, 0);
    put64(out, offsets[i]);
    put64(out, blocks[i].bytes);
    out.insert(out.end(), blocks[i].key.begin(), blocks[i].key.end());
    out.resize(pad8(out.size()), 0);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    out.resize(offsets[i], 0);
    const auto *p = static_cast<const uint8_t *>(blocks[i].data);
    out.insert(out.end(), p, p + blocks[i].bytes);
  }
  out.resize(at, 0);
  return out;
}

bool readPreparedValue(const void *value, size_t size, std::vector<PreparedBlockRef> &blocks,
                       std::string &error) {
  const auto *base = static_cast<const uint8_t *>(value);
  blocks.clear();
  if (size < 16 || get32(base) != kMagic || get32(base + 4) != 1) {
    error = "not a version-1 prepared-constants value";
    return false;
  }
  uint32_t count = get32(base + 8);
  size_t at = 16;
  for (uint32_t i = 0; i < count; ++i) {
    if (size - at < 24) {
      error = "block " + std::to_string(i) + "'s entry runs past the value";
      return false;
    }
    uint32_t keyBytes = get32(base + at);
    uint64_t offset = get64(base + at + 8), bytes = get64(base + at + 16);
    at += 24;
    if (keyBytes > size - at || pad8(keyBytes) > size - at) {
      error = "block " + std::to_string(i) + "'s key runs past the value";
      return false;
    }
    std::string key(reinterpret_cast<const char *>(base + at), keyBytes);
    at += pad8(keyBytes);
    if (offset % kPage || offset > size || bytes > size - offset || offset < at) {
      error = "block " + std::to_string(i) + " ('" + key + "') lies outside the value or is not "
              "page-aligned";
      return false;
    }
    blocks.push_back({std::move(key), base + offset, size_t(bytes)});
  }
  return true;
}

} // namespace cgc::cpu
