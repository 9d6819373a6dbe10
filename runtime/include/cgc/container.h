//===- cgc/container.h - DX containers and MLIR interface GUIDs -*- C++ -*-===//
//
// Every boundary the spec names (compiler <-> runtime, runtime <-> driver,
// compiler <-> target) carries bytes in a DX container with DXIL's layout:
//
//   offset  0  'DXBC'                    uint32 FourCC
//           4  digest                    16 bytes, MD5 of bytes [20, size)
//          20  version                   uint16 major (1), uint16 minor (0)
//          24  container size in bytes   uint32
//          28  part count                uint32
//          32  part offsets              uint32[part count]
//              parts, back to back       { uint32 FourCC; uint32 size; bytes }
//
// Parts follow the offset table with no gaps and the last part ends at the
// container's end. All integers are little-endian. The digest is computed on
// write and checked on read.
//
// Large containers (a model's weights) may end with a 'CGCK' part: 64-bit
// checksums (fastChecksum) of consecutive chunks of bytes [20, offset of the
// 'CGCK' part). A reader then checks those, on every core at memory speed,
// instead of the MD5 digest (MD5 reads ~0.4 GB/s on one core: 1 s for a
// BERT-base model at each load). Both detect corruption; neither is proof
// against tampering. The digest is still written, over everything, so other
// DX container tools still accept the file. Payload:
//   uint32 version (1), uint32 log2 of the chunk size (12..30),
//   uint64 covered end (the 'CGCK' part's offset), uint64 chunk count,
//   uint64 checksums[count]
//
// Parts cgc uses (docs/interchange.md):
//   'MLIR'  an MLIR interface GUID (16 bytes) followed by MLIR bytecode
//   'CGVN'  versions (JSON)          'CGBP'  bind-point metadata (JSON)
//   'CGPL'  execution plan (JSON)    'CGKP'  kernel program (JSON)
//   'CGCN'  constants (aligned)      'CGRS'  a target's answer (JSON)
//   'CGPC'  a precompiled program    'CGPK'  a precompiled program's key
//           (cgc/precompiled_program.h)      (JSON)
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CONTAINER_H
#define CGC_CONTAINER_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cgc {

/// Layout-compatible with the Windows GUID.
struct Guid {
  uint32_t data1 = 0;
  uint16_t data2 = 0;
  uint16_t data3 = 0;
  uint8_t data4[8] = {};

  bool operator==(const Guid &other) const;
  bool operator!=(const Guid &other) const { return !(*this == other); }
  /// "{7FC4F23F-2474-4AE8-AE7A-2722118B350E}".
  std::string str() const;
  /// Parses the form str() writes (braces optional).
  static std::optional<Guid> parse(std::string_view text);
};

/// The DXCGC MLIR interfaces of the spec's appendix.
namespace interfaces {
extern const Guid kInput;                         // CGC_INPUT
extern const Guid kOutput;                        // CGC_OUTPUT
extern const Guid kSubgraphPartition;             // CGC_SUBGRAPH_PARTITION
extern const Guid kSubgraphDeclarationRequest;    // CGC_SUBGRAPH_DECLARATION_REQUEST
extern const Guid kSubgraphDeclaration;           // CGC_SUBGRAPH_DECLARATION
extern const Guid kSubgraphSpecializationRequest; // CGC_SUBGRAPH_SPECIALIZATION_REQUEST
extern const Guid kSubgraphSpecialization;        // CGC_SUBGRAPH_SPECIALIZATION

/// The spec's name of a known interface ("CGC_INPUT", ...), or nullptr.
const char *name(const Guid &guid);
bool isKnown(const Guid &guid);
} // namespace interfaces

constexpr uint32_t makeFourCC(char a, char b, char c, char d) {
  return uint32_t(uint8_t(a)) | uint32_t(uint8_t(b)) << 8 |
         uint32_t(uint8_t(c)) << 16 | uint32_t(uint8_t(d)) << 24;
}
/// "DXBC", or the hex value if not printable.
std::string fourCCString(uint32_t fourCC);

namespace parts {
constexpr uint32_t kMLIR = makeFourCC('M', 'L', 'I', 'R');
constexpr uint32_t kVersions = makeFourCC('C', 'G', 'V', 'N');
constexpr uint32_t kBindPoints = makeFourCC('C', 'G', 'B', 'P');
constexpr uint32_t kPlan = makeFourCC('C', 'G', 'P', 'L');
constexpr uint32_t kKernelProgram = makeFourCC('C', 'G', 'K', 'P');
constexpr uint32_t kConstants = makeFourCC('C', 'G', 'C', 'N');
constexpr uint32_t kResponse = makeFourCC('C', 'G', 'R', 'S');
/// A compiled model's precompiled MLIR program (the payload is the blob of
/// cgc/precompiled_program.h) and, inside a blob, its key.
constexpr uint32_t kPrecompiledProgram = makeFourCC('C', 'G', 'P', 'C');
constexpr uint32_t kPrecompiledKey = makeFourCC('C', 'G', 'P', 'K');
/// The container's chunk checksums (ContainerWriter::addChecksums); a
/// reader verifies them instead of the MD5 digest and does not list the part.
constexpr uint32_t kChecksums = makeFourCC('C', 'G', 'C', 'K');
} // namespace parts

constexpr uint32_t kContainerFourCC = makeFourCC('D', 'X', 'B', 'C');
constexpr uint16_t kContainerMajor = 1;
constexpr uint16_t kContainerMinor = 0;
constexpr size_t kContainerHeaderSize = 32;

/// A view of bytes owned elsewhere.
struct ByteView {
  const uint8_t *data = nullptr;
  size_t size = 0;
  std::string_view str() const {
    return std::string_view(reinterpret_cast<const char *>(data), size);
  }
};

/// Builds a container. Parts are written in the order they are added.
class ContainerWriter {
public:
  void addPart(uint32_t fourCC, const void *data, size_t size);
  void addPart(uint32_t fourCC, std::string_view data) {
    addPart(fourCC, data.data(), data.size());
  }
  /// Adds an 'MLIR' part: the interface GUID, then the bytecode.
  void addMLIRPart(const Guid &interface, std::string_view bytecode);
  /// Adds a part whose payload is `uint32 padding`, `padding` zero bytes, then
  /// `data`, with `padding` chosen so that `data` starts at a multiple of
  /// `alignment` from the start of the container (which the reader maps at a
  /// page boundary). Read it back with ContainerReader::alignedPayload.
  void addAlignedPart(uint32_t fourCC, const void *data, size_t size,
                      size_t alignment);

  /// Like addAlignedPart, but the payload is the concatenation of
  /// `segments`, which the writer references instead of copying: they must
  /// stay alive until finish() or writeTo() returns. For large payloads
  /// (a model's weights) gathered from where they already are.
  void addAlignedPartRef(uint32_t fourCC, std::vector<ByteView> segments,
                         size_t alignment);

  /// Ends the container with a 'CGCK' part of checksums of chunks of
  /// 2^chunkShift bytes (see the layout above), whatever parts are added
  /// before or after this call.
  void addChecksums(unsigned chunkShift = 20);

  /// Lays the parts out, computes the digest and returns the container; the
  /// error string is set (and the result empty) if it would exceed 4 GiB.
  std::vector<uint8_t> finish(std::string *error = nullptr) const;

  /// The same bytes as finish(), streamed to `sink` in consecutive chunks
  /// without building the container in memory (the digest is computed
  /// first). Returns false if the container would exceed 4 GiB (error set)
  /// or `sink` returns false.
  bool writeTo(const std::function<bool(const void *data, size_t size)> &sink,
               std::string *error = nullptr) const;

  /// One pass for seekable outputs: streams the container with a zero
  /// digest, hashing each piece as it goes, and returns the digest in
  /// `digest`; the caller writes it at byte offset 4 afterwards. Reads
  /// every payload once instead of twice.
  bool writeToOnePass(
      const std::function<bool(const void *data, size_t size)> &sink,
      uint8_t digest[16], std::string *error = nullptr) const;

private:
  struct Part {
    uint32_t fourCC;
    std::vector<uint8_t> data;
    size_t alignment = 0; // 0: plain part
    std::vector<ByteView> refs; // payload by reference (data empty)
    size_t payloadSize() const;
  };
  struct Layout;
  bool layout(Layout &out, std::string *error) const;
  unsigned checksumShift_ = 0; // 0: no 'CGCK' part
  bool writeTo(const std::function<bool(const void *, size_t)> &sink,
               std::string *error, bool computeDigest) const;
  std::vector<Part> parts_;
};

/// Reads and validates a container in memory it does not own.
class ContainerReader {
public:
  struct Part {
    uint32_t fourCC;
    size_t offset; // of the part header, from the container start
    ByteView data;
  };

  /// Validates the header, the part table (bounds, no gaps, no overlap, the
  /// last part ending at the end) and the digest. Returns false with a
  /// message naming the problem.
  bool open(const void *data, size_t size, std::string &error);
  /// The same for a read-only private file mapping: the pages the digest
  /// check reads are released from the process as it goes (they stay in the
  /// page cache and fault back in when a part is used), so checking a large
  /// container does not make all of it resident at once.
  bool openMappedFile(const void *mapping, size_t size, std::string &error);

  const std::vector<Part> &getParts() const { return parts_; }
  /// Parts with the given FourCC, in order.
  std::vector<const Part *> find(uint32_t fourCC) const;
  /// Checks that every part's FourCC is in `known`; names the first that is
  /// not.
  bool checkKnownParts(const std::vector<uint32_t> &known,
                       std::string &error) const;

  /// Splits an 'MLIR' part into its interface GUID and bytecode.
  static bool splitMLIRPart(const Part &part, Guid &interface,
                            ByteView &bytecode, std::string &error);
  /// The data of a part written by addAlignedPart.
  static bool alignedPayload(const Part &part, ByteView &payload,
                             std::string &error);

  ByteView bytes() const { return {base_, size_}; }
  /// Whether the container was verified by its chunk checksums ('CGCK',
  /// not listed in getParts()) rather than its MD5 digest.
  bool verifiedByChecksums() const { return checksummed_; }

private:
  bool open(const void *data, size_t size, bool releaseHashed,
            std::string &error);
  const uint8_t *base_ = nullptr;
  size_t size_ = 0;
  bool checksummed_ = false;
  std::vector<Part> parts_;
};

/// MD5 (RFC 1321) of `size` bytes.
void md5(const void *data, size_t size, uint8_t digest[16]);

/// A fast 64-bit checksum (not cryptographic): detects corruption of large
/// values (prepared constants beside a precompiled database) at memory
/// speed, where MD5 would take seconds.
uint64_t fastChecksum(const void *data, size_t size);

/// Incremental MD5: update() with consecutive pieces, then final().
class MD5Hasher {
public:
  MD5Hasher();
  void update(const void *data, size_t size);
  void final(uint8_t digest[16]);

private:
  uint32_t state_[4];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

} // namespace cgc

#endif // CGC_CONTAINER_H
