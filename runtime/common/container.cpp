//===- container.cpp - DX containers and MLIR interface GUIDs -------------===//

#include "cgc/container.h"
#include "cgc/dtype.h"

#include <algorithm>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <atomic>

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

void ContainerWriter::addAlignedPartRef(uint32_t fourCC,
                                        std::vector<ByteView> segments,
                                        size_t alignment) {
  Part part{fourCC, {}, alignment ? alignment : 1, std::move(segments)};
  parts_.push_back(std::move(part));
}

size_t ContainerWriter::Part::payloadSize() const {
  if (refs.empty())
    return data.size();
  size_t size = 0;
  for (const ByteView &ref : refs)
    size += ref.size;
  return size;
}

struct ContainerWriter::Layout {
  size_t size = 0;
  std::vector<size_t> offsets, paddings, payloads;
  // The 'CGCK' part, last (checksumShift_ != 0).
  size_t checksumOffset = 0, checksumCount = 0;
};

void ContainerWriter::addChecksums(unsigned chunkShift) {
  checksumShift_ = std::clamp(chunkShift, 12u, 30u);
}

namespace {
/// Checksums of consecutive chunks of a byte stream.
class ChunkHasher {
public:
  explicit ChunkHasher(unsigned shift) : chunk_(size_t(1) << shift) {}
  void update(const uint8_t *p, size_t n) {
    while (n) {
      if (buffer_.empty() && n >= chunk_) {
        sums_.push_back(fastChecksum(p, chunk_));
        p += chunk_;
        n -= chunk_;
        continue;
      }
      size_t take = std::min(n, chunk_ - buffer_.size());
      buffer_.insert(buffer_.end(), p, p + take);
      p += take;
      n -= take;
      if (buffer_.size() == chunk_) {
        sums_.push_back(fastChecksum(buffer_.data(), buffer_.size()));
        buffer_.clear();
      }
    }
  }
  const std::vector<uint64_t> &finish() {
    if (!buffer_.empty())
      sums_.push_back(fastChecksum(buffer_.data(), buffer_.size()));
    buffer_.clear();
    return sums_;
  }

private:
  size_t chunk_;
  std::vector<uint8_t> buffer_;
  std::vector<uint64_t> sums_;
};
} // namespace

bool ContainerWriter::layout(Layout &out, std::string *error) const {
  // Header, offset table, then each part (header + payload).
  const size_t partCount = parts_.size() + (checksumShift_ ? 1 : 0);
  size_t offset = kContainerHeaderSize + 4 * partCount;
  for (const Part &part : parts_) {
    out.offsets.push_back(offset);
    size_t payload = part.payloadSize();
    size_t padding = 0;
    if (part.alignment) {
      size_t dataStart = offset + 8 + 4;
      padding = (part.alignment - dataStart % part.alignment) % part.alignment;
      payload += 4 + padding;
    }
    out.paddings.push_back(padding);
    out.payloads.push_back(payload);
    offset += 8 + payload;
  }
  if (checksumShift_) {
    const size_t chunk = size_t(1) << checksumShift_;
    out.checksumOffset = offset;
    out.checksumCount = (offset - 20 + chunk - 1) / chunk;
    offset += 8 + 24 + 8 * out.checksumCount;
  }
  if (offset > UINT32_MAX) {
    if (error)
      *error = "container of " + std::to_string(offset) +
               " bytes exceeds the 4 GiB limit of the DX container format";
    return false;
  }
  out.size = offset;
  return true;
}

bool ContainerWriter::writeTo(
    const std::function<bool(const void *, size_t)> &sink,
    std::string *error) const {
  return writeTo(sink, error, /*computeDigest=*/true);
}

bool ContainerWriter::writeTo(
    const std::function<bool(const void *, size_t)> &sink, std::string *error,
    bool computeDigest) const {
  Layout l;
  if (!layout(l, error))
    return false;
  // The header and offset table, then per part its header (and padding)
  // and payload pieces: hashed first, then written.
  const size_t partCount = parts_.size() + (checksumShift_ ? 1 : 0);
  std::vector<uint8_t> head(kContainerHeaderSize + 4 * partCount, 0);
  put32(head.data(), kContainerFourCC);
  put16(head.data() + 20, kContainerMajor);
  put16(head.data() + 22, kContainerMinor);
  put32(head.data() + 24, uint32_t(l.size));
  put32(head.data() + 28, uint32_t(partCount));
  std::vector<std::vector<uint8_t>> partHeads(parts_.size());
  for (size_t i = 0; i < parts_.size(); ++i) {
    const Part &part = parts_[i];
    put32(head.data() + kContainerHeaderSize + 4 * i, uint32_t(l.offsets[i]));
    std::vector<uint8_t> &h = partHeads[i];
    h.assign(8 + (part.alignment ? 4 + l.paddings[i] : 0), 0);
    put32(h.data(), part.fourCC);
    put32(h.data() + 4, uint32_t(l.payloads[i]));
    if (part.alignment)
      put32(h.data() + 8, uint32_t(l.paddings[i]));
  }
  if (checksumShift_)
    put32(head.data() + kContainerHeaderSize + 4 * parts_.size(), uint32_t(l.checksumOffset));
  auto forEachPiece = [&](const std::function<bool(const uint8_t *, size_t)> &fn) {
    for (size_t i = 0; i < parts_.size(); ++i) {
      const Part &part = parts_[i];
      if (!fn(partHeads[i].data(), partHeads[i].size()))
        return false;
      if (part.refs.empty()) {
        if (!part.data.empty() && !fn(part.data.data(), part.data.size()))
          return false;
      } else {
        for (const ByteView &ref : part.refs)
          if (ref.size && !fn(ref.data, ref.size))
            return false;
      }
    }
    return true;
  };
  // The 'CGCK' part, from the checksums of everything before it.
  std::optional<ChunkHasher> chunks;
  if (checksumShift_)
    chunks.emplace(checksumShift_);
  std::vector<uint8_t> checksumPart;
  auto finishChecksums = [&] {
    const std::vector<uint64_t> &sums = chunks->finish();
    checksumPart.assign(8 + 24 + 8 * sums.size(), 0);
    uint8_t *p = checksumPart.data();
    put32(p, parts::kChecksums);
    put32(p + 4, uint32_t(checksumPart.size() - 8));
    put32(p + 8, 1);
    put32(p + 12, checksumShift_);
    for (int i = 0; i < 8; ++i) {
      p[16 + i] = uint8_t(uint64_t(l.checksumOffset) >> (8 * i));
      p[24 + i] = uint8_t(uint64_t(sums.size()) >> (8 * i));
    }
    for (size_t c = 0; c < sums.size(); ++c)
      for (int i = 0; i < 8; ++i)
        p[32 + 8 * c + i] = uint8_t(sums[c] >> (8 * i));
  };
  if (computeDigest) {
    MD5Hasher hasher;
    hasher.update(head.data() + 20, head.size() - 20);
    if (chunks)
      chunks->update(head.data() + 20, head.size() - 20);
    forEachPiece([&](const uint8_t *data, size_t size) {
      hasher.update(data, size);
      if (chunks)
        chunks->update(data, size);
      return true;
    });
    if (chunks) {
      finishChecksums();
      hasher.update(checksumPart.data(), checksumPart.size());
    }
    hasher.final(head.data() + 4);
    if (!sink(head.data(), head.size()))
      return false;
    if (!forEachPiece([&](const uint8_t *data, size_t size) { return sink(data, size); }))
      return false;
    return checksumPart.empty() || sink(checksumPart.data(), checksumPart.size());
  }
  if (chunks)
    chunks->update(head.data() + 20, head.size() - 20);
  if (!sink(head.data(), head.size()))
    return false;
  if (!forEachPiece([&](const uint8_t *data, size_t size) {
        if (chunks)
          chunks->update(data, size);
        return sink(data, size);
      }))
    return false;
  if (!chunks)
    return true;
  finishChecksums();
  return sink(checksumPart.data(), checksumPart.size());
}

bool ContainerWriter::writeToOnePass(
    const std::function<bool(const void *, size_t)> &sink, uint8_t digest[16],
    std::string *error) const {
  MD5Hasher hasher;
  bool first = true;
  // The first piece is the header: the digest covers bytes [20, size), so
  // its first 20 bytes are not hashed. The other pieces are hashed in 1 MiB
  // slices right before they are written, while they are in cache.
  bool ok = writeTo(
      [&](const void *data, size_t size) {
        const uint8_t *bytes = static_cast<const uint8_t *>(data);
        if (first) {
          first = false;
          std::vector<uint8_t> head(bytes, bytes + size);
          std::memset(head.data() + 4, 0, 16);
          hasher.update(head.data() + 20, size - 20);
          return sink(head.data(), head.size());
        }
        constexpr size_t kSlice = 1 << 20;
        for (size_t at = 0; at < size; at += kSlice) {
          size_t n = std::min(kSlice, size - at);
          hasher.update(bytes + at, n);
          if (!sink(bytes + at, n))
            return false;
        }
        return true;
      },
      error, /*computeDigest=*/false);
  if (ok)
    hasher.final(digest);
  return ok;
}

std::vector<uint8_t> ContainerWriter::finish(std::string *error) const {
  Layout l;
  if (!layout(l, error))
    return {};
  std::vector<uint8_t> out;
  out.reserve(l.size);
  writeTo(
      [&](const void *data, size_t size) {
        const uint8_t *bytes = static_cast<const uint8_t *>(data);
        out.insert(out.end(), bytes, bytes + size);
        return true;
      },
      error);
  return out;
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

bool ContainerReader::open(const void *data, size_t size, std::string &error) {
  return open(data, size, /*releaseHashed=*/false, error);
}

bool ContainerReader::openMappedFile(const void *mapping, size_t size,
                                     std::string &error) {
  return open(mapping, size, /*releaseHashed=*/true, error);
}

namespace {
/// MD5 of [data, data + size); with `release`, the whole pages of each slice
/// are dropped from the (file-backed, never written) mapping once hashed.
void md5Releasing(const uint8_t *data, size_t size, bool release,
                  uint8_t digest[16]) {
  if (!release) {
    md5(data, size, digest);
    return;
  }
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  constexpr size_t kSlice = size_t(8) << 20;
  MD5Hasher hasher;
  for (size_t at = 0; at < size; at += kSlice) {
    size_t n = std::min(kSlice, size - at);
    hasher.update(data + at, n);
    uintptr_t begin = (uintptr_t(data + at) + page - 1) & ~(page - 1);
    uintptr_t end = uintptr_t(data + at + n) & ~(page - 1);
    if (end > begin)
      madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
  hasher.final(digest);
}
} // namespace

namespace {
/// Checks the chunks of bytes [20, covered) of `base` against `sums` (little-
/// endian uint64s) on up to 8 threads; with `release`, the pages of each
/// chunk are dropped from the (file-backed) mapping once checked.
bool verifyChunks(const uint8_t *base, uint64_t covered, size_t chunk, const uint8_t *sums,
                  uint64_t count, bool release, std::string &error) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> bad{UINT64_MAX};
  auto work = [&] {
    constexpr uint64_t kBatch = 4;
    for (uint64_t first; (first = next.fetch_add(kBatch)) < count;) {
      for (uint64_t c = first; c < std::min(count, first + kBatch); ++c) {
        const uint8_t *at = base + 20 + c * chunk;
        size_t n = size_t(std::min<uint64_t>(chunk, covered - 20 - c * chunk));
        uint64_t expected;
        std::memcpy(&expected, sums + 8 * c, 8);
        if (fastChecksum(at, n) != expected) {
          uint64_t seen = bad.load();
          while (c < seen && !bad.compare_exchange_weak(seen, c)) {
          }
        }
        if (release) {
          uintptr_t b = (uintptr_t(at) + page - 1) & ~(page - 1);
          uintptr_t e = uintptr_t(at + n) & ~(page - 1);
          if (e > b)
            madvise(reinterpret_cast<void *>(b), e - b, MADV_DONTNEED);
        }
      }
    }
  };
  unsigned threads = std::min<unsigned>(8, std::max(1u, std::thread::hardware_concurrency()));
  if (count < 8)
    threads = 1;
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (bad.load() != UINT64_MAX) {
    uint64_t c = bad.load();
    error = "container checksum mismatch in bytes [" + std::to_string(20 + c * chunk) + ", " +
            std::to_string(std::min<uint64_t>(covered, 20 + (c + 1) * chunk)) +
            "): the contents were modified after they were written";
    return false;
  }
  return true;
}
} // namespace

bool ContainerReader::open(const void *data, size_t size, bool releaseHashed,
                           std::string &error) {
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
  checksummed_ = false;
  if (!parts_.empty() && parts_.back().fourCC == parts::kChecksums) {
    // Chunk checksums instead of the digest (see the header).
    const Part cgck = parts_.back();
    parts_.pop_back();
    const uint8_t *p = cgck.data.data;
    uint64_t covered = 0, count = 0;
    uint32_t version = cgck.data.size >= 24 ? get32(p) : 0;
    uint32_t shift = cgck.data.size >= 24 ? get32(p + 4) : 0;
    if (cgck.data.size >= 24) {
      std::memcpy(&covered, p + 8, 8);
      std::memcpy(&count, p + 16, 8);
    }
    const size_t chunk = shift >= 12 && shift <= 30 ? size_t(1) << shift : 0;
    if (version != 1 || !chunk || covered != cgck.offset ||
        count != (covered - 20 + chunk - 1) / chunk || cgck.data.size != 24 + 8 * count) {
      error = "malformed 'CGCK' checksums part (version " + std::to_string(version) +
              ", chunk shift " + std::to_string(shift) + ", " + std::to_string(count) +
              " checksums of bytes [20, " + std::to_string(covered) + "))";
      return false;
    }
    if (!verifyChunks(base_, covered, chunk, p + 24, count, releaseHashed, error))
      return false;
    checksummed_ = true;
    return true;
  }
  uint8_t digest[16];
  md5Releasing(base_ + 20, size - 20, releaseHashed, digest);
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
inline uint32_t rotl32(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

/// One 64-byte block, the four rounds unrolled (RFC 1321).
void md5Block(uint32_t state[4], const uint8_t *p) {
  uint32_t m[16];
  for (int i = 0; i < 16; ++i)
    m[i] = get32(p + 4 * i);
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
#define CGC_MD5_STEP(f, w, x, y, z, k, s)                                      \
  w += f(x, y, z) + (k);                                                       \
  w = rotl32(w, s) + x;
#define CGC_MD5_F(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define CGC_MD5_G(x, y, z) ((y) ^ ((z) & ((x) ^ (y))))
#define CGC_MD5_H(x, y, z) ((x) ^ (y) ^ (z))
#define CGC_MD5_I(x, y, z) ((y) ^ ((x) | ~(z)))
  CGC_MD5_STEP(CGC_MD5_F, a, b, c, d, m[0] + 0xd76aa478, 7)
  CGC_MD5_STEP(CGC_MD5_F, d, a, b, c, m[1] + 0xe8c7b756, 12)
  CGC_MD5_STEP(CGC_MD5_F, c, d, a, b, m[2] + 0x242070db, 17)
  CGC_MD5_STEP(CGC_MD5_F, b, c, d, a, m[3] + 0xc1bdceee, 22)
  CGC_MD5_STEP(CGC_MD5_F, a, b, c, d, m[4] + 0xf57c0faf, 7)
  CGC_MD5_STEP(CGC_MD5_F, d, a, b, c, m[5] + 0x4787c62a, 12)
  CGC_MD5_STEP(CGC_MD5_F, c, d, a, b, m[6] + 0xa8304613, 17)
  CGC_MD5_STEP(CGC_MD5_F, b, c, d, a, m[7] + 0xfd469501, 22)
  CGC_MD5_STEP(CGC_MD5_F, a, b, c, d, m[8] + 0x698098d8, 7)
  CGC_MD5_STEP(CGC_MD5_F, d, a, b, c, m[9] + 0x8b44f7af, 12)
  CGC_MD5_STEP(CGC_MD5_F, c, d, a, b, m[10] + 0xffff5bb1, 17)
  CGC_MD5_STEP(CGC_MD5_F, b, c, d, a, m[11] + 0x895cd7be, 22)
  CGC_MD5_STEP(CGC_MD5_F, a, b, c, d, m[12] + 0x6b901122, 7)
  CGC_MD5_STEP(CGC_MD5_F, d, a, b, c, m[13] + 0xfd987193, 12)
  CGC_MD5_STEP(CGC_MD5_F, c, d, a, b, m[14] + 0xa679438e, 17)
  CGC_MD5_STEP(CGC_MD5_F, b, c, d, a, m[15] + 0x49b40821, 22)
  CGC_MD5_STEP(CGC_MD5_G, a, b, c, d, m[1] + 0xf61e2562, 5)
  CGC_MD5_STEP(CGC_MD5_G, d, a, b, c, m[6] + 0xc040b340, 9)
  CGC_MD5_STEP(CGC_MD5_G, c, d, a, b, m[11] + 0x265e5a51, 14)
  CGC_MD5_STEP(CGC_MD5_G, b, c, d, a, m[0] + 0xe9b6c7aa, 20)
  CGC_MD5_STEP(CGC_MD5_G, a, b, c, d, m[5] + 0xd62f105d, 5)
  CGC_MD5_STEP(CGC_MD5_G, d, a, b, c, m[10] + 0x02441453, 9)
  CGC_MD5_STEP(CGC_MD5_G, c, d, a, b, m[15] + 0xd8a1e681, 14)
  CGC_MD5_STEP(CGC_MD5_G, b, c, d, a, m[4] + 0xe7d3fbc8, 20)
  CGC_MD5_STEP(CGC_MD5_G, a, b, c, d, m[9] + 0x21e1cde6, 5)
  CGC_MD5_STEP(CGC_MD5_G, d, a, b, c, m[14] + 0xc33707d6, 9)
  CGC_MD5_STEP(CGC_MD5_G, c, d, a, b, m[3] + 0xf4d50d87, 14)
  CGC_MD5_STEP(CGC_MD5_G, b, c, d, a, m[8] + 0x455a14ed, 20)
  CGC_MD5_STEP(CGC_MD5_G, a, b, c, d, m[13] + 0xa9e3e905, 5)
  CGC_MD5_STEP(CGC_MD5_G, d, a, b, c, m[2] + 0xfcefa3f8, 9)
  CGC_MD5_STEP(CGC_MD5_G, c, d, a, b, m[7] + 0x676f02d9, 14)
  CGC_MD5_STEP(CGC_MD5_G, b, c, d, a, m[12] + 0x8d2a4c8a, 20)
  CGC_MD5_STEP(CGC_MD5_H, a, b, c, d, m[5] + 0xfffa3942, 4)
  CGC_MD5_STEP(CGC_MD5_H, d, a, b, c, m[8] + 0x8771f681, 11)
  CGC_MD5_STEP(CGC_MD5_H, c, d, a, b, m[11] + 0x6d9d6122, 16)
  CGC_MD5_STEP(CGC_MD5_H, b, c, d, a, m[14] + 0xfde5380c, 23)
  CGC_MD5_STEP(CGC_MD5_H, a, b, c, d, m[1] + 0xa4beea44, 4)
  CGC_MD5_STEP(CGC_MD5_H, d, a, b, c, m[4] + 0x4bdecfa9, 11)
  CGC_MD5_STEP(CGC_MD5_H, c, d, a, b, m[7] + 0xf6bb4b60, 16)
  CGC_MD5_STEP(CGC_MD5_H, b, c, d, a, m[10] + 0xbebfbc70, 23)
  CGC_MD5_STEP(CGC_MD5_H, a, b, c, d, m[13] + 0x289b7ec6, 4)
  CGC_MD5_STEP(CGC_MD5_H, d, a, b, c, m[0] + 0xeaa127fa, 11)
  CGC_MD5_STEP(CGC_MD5_H, c, d, a, b, m[3] + 0xd4ef3085, 16)
  CGC_MD5_STEP(CGC_MD5_H, b, c, d, a, m[6] + 0x04881d05, 23)
  CGC_MD5_STEP(CGC_MD5_H, a, b, c, d, m[9] + 0xd9d4d039, 4)
  CGC_MD5_STEP(CGC_MD5_H, d, a, b, c, m[12] + 0xe6db99e5, 11)
  CGC_MD5_STEP(CGC_MD5_H, c, d, a, b, m[15] + 0x1fa27cf8, 16)
  CGC_MD5_STEP(CGC_MD5_H, b, c, d, a, m[2] + 0xc4ac5665, 23)
  CGC_MD5_STEP(CGC_MD5_I, a, b, c, d, m[0] + 0xf4292244, 6)
  CGC_MD5_STEP(CGC_MD5_I, d, a, b, c, m[7] + 0x432aff97, 10)
  CGC_MD5_STEP(CGC_MD5_I, c, d, a, b, m[14] + 0xab9423a7, 15)
  CGC_MD5_STEP(CGC_MD5_I, b, c, d, a, m[5] + 0xfc93a039, 21)
  CGC_MD5_STEP(CGC_MD5_I, a, b, c, d, m[12] + 0x655b59c3, 6)
  CGC_MD5_STEP(CGC_MD5_I, d, a, b, c, m[3] + 0x8f0ccc92, 10)
  CGC_MD5_STEP(CGC_MD5_I, c, d, a, b, m[10] + 0xffeff47d, 15)
  CGC_MD5_STEP(CGC_MD5_I, b, c, d, a, m[1] + 0x85845dd1, 21)
  CGC_MD5_STEP(CGC_MD5_I, a, b, c, d, m[8] + 0x6fa87e4f, 6)
  CGC_MD5_STEP(CGC_MD5_I, d, a, b, c, m[15] + 0xfe2ce6e0, 10)
  CGC_MD5_STEP(CGC_MD5_I, c, d, a, b, m[6] + 0xa3014314, 15)
  CGC_MD5_STEP(CGC_MD5_I, b, c, d, a, m[13] + 0x4e0811a1, 21)
  CGC_MD5_STEP(CGC_MD5_I, a, b, c, d, m[4] + 0xf7537e82, 6)
  CGC_MD5_STEP(CGC_MD5_I, d, a, b, c, m[11] + 0xbd3af235, 10)
  CGC_MD5_STEP(CGC_MD5_I, c, d, a, b, m[2] + 0x2ad7d2bb, 15)
  CGC_MD5_STEP(CGC_MD5_I, b, c, d, a, m[9] + 0xeb86d391, 21)
#undef CGC_MD5_STEP
#undef CGC_MD5_F
#undef CGC_MD5_G
#undef CGC_MD5_H
#undef CGC_MD5_I
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
}
} // namespace

MD5Hasher::MD5Hasher()
    : state_{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476} {}

void MD5Hasher::update(const void *data, size_t size) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  total_ += size;
  if (buffered_) {
    size_t take = std::min(size, sizeof(buffer_) - buffered_);
    std::memcpy(buffer_ + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < sizeof(buffer_))
      return;
    md5Block(state_, buffer_);
    buffered_ = 0;
  }
  for (; size >= 64; p += 64, size -= 64)
    md5Block(state_, p);
  std::memcpy(buffer_, p, size);
  buffered_ = size;
}

void MD5Hasher::final(uint8_t digest[16]) {
  uint64_t bits = total_ * 8;
  uint8_t tail[128] = {};
  std::memcpy(tail, buffer_, buffered_);
  tail[buffered_] = 0x80;
  size_t tailSize = buffered_ + 1 + 8 <= 64 ? 64 : 128;
  for (int i = 0; i < 8; ++i)
    tail[tailSize - 8 + i] = uint8_t(bits >> (8 * i));
  for (size_t i = 0; i < tailSize; i += 64)
    md5Block(state_, tail + i);
  for (int i = 0; i < 4; ++i)
    put32(digest + 4 * i, state_[i]);
}

void md5(const void *data, size_t size, uint8_t digest[16]) {
  MD5Hasher hasher;
  hasher.update(data, size);
  hasher.final(digest);
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

namespace cgc {

uint64_t fastChecksum(const void *data, size_t size) {
  // Four independent lanes over 32-byte stripes (multiply-rotate mixing,
  // as in the xxHash family), then the tail and a final avalanche.
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                     kP3 = 0x165667B19E3779F9ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t acc, uint64_t v) { return rotl(acc + v * kP2, 31) * kP1; };
  const auto *p = static_cast<const uint8_t *>(data);
  uint64_t lanes[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  size_t n = size;
  for (; n >= 32; p += 32, n -= 32)
    for (int i = 0; i < 4; ++i) {
      uint64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      lanes[i] = round(lanes[i], v);
    }
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18);
  h += uint64_t(size);
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    h = rotl(h ^ round(0, v), 27) * kP1 + kP3;
  }
  for (; n; ++p, --n)
    h = rotl(h ^ (*p * kP3), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

} // namespace cgc
