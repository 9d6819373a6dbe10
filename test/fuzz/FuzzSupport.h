//===- FuzzSupport.h - Helpers shared by cgc's fuzz targets -----*- C++ -*-===//
//
// Readers check a container's size and MD5 digest first, so most mutated
// inputs stop there. Targets that read containers run each input twice: as
// it is, and "re-digested" (size and digest rewritten to match the mutated
// bytes), so the fuzzer reaches the checks behind them (as a forger would).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_FUZZ_FUZZSUPPORT_H
#define CGC_TEST_FUZZ_FUZZSUPPORT_H

#include "cgc/container.h"

#include <cstdint>
#include <algorithm>
#include <cstring>
#include <vector>

namespace cgc::fuzz {

/// `data` with the header's total size (bytes [24, 28)) set to its real
/// size, a last 'CGCK' part's chunk checksums recomputed (when its header
/// fields are consistent) and bytes [4, 20) set to the MD5 of [20, size),
/// when it is long enough to hold a header; else a plain copy.
inline std::vector<uint8_t> redigested(const uint8_t *data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  if (size >= kContainerHeaderSize && size <= UINT32_MAX) {
    uint32_t total = uint32_t(size);
    for (int i = 0; i < 4; ++i)
      copy[24 + i] = uint8_t(total >> (8 * i));
    auto get32 = [&](size_t at) {
      uint32_t v;
      std::memcpy(&v, copy.data() + at, 4);
      return v;
    };
    uint32_t count = get32(28);
    if (count && count <= (size - kContainerHeaderSize) / 4) {
      uint32_t offset = get32(kContainerHeaderSize + 4 * (count - 1));
      if (offset >= kContainerHeaderSize && offset <= size && size - offset >= 8 + 24 &&
          get32(offset) == parts::kChecksums) {
        uint32_t shift = get32(offset + 12);
        uint64_t covered = 0, chunks = 0;
        std::memcpy(&covered, copy.data() + offset + 16, 8);
        std::memcpy(&chunks, copy.data() + offset + 24, 8);
        const size_t chunk = shift >= 12 && shift <= 30 ? size_t(1) << shift : 0;
        if (chunk && covered == offset && chunks == (covered - 20 + chunk - 1) / chunk &&
            (size - offset - 32) / 8 >= chunks)
          for (uint64_t c = 0; c < chunks; ++c) {
            size_t begin = 20 + size_t(c) * chunk;
            size_t n = std::min<size_t>(chunk, covered - begin);
            uint64_t sum = fastChecksum(copy.data() + begin, n);
            std::memcpy(copy.data() + offset + 32 + 8 * c, &sum, 8);
          }
      }
    }
    md5(copy.data() + 20, size - 20, copy.data() + 4);
  }
  return copy;
}

} // namespace cgc::fuzz

#endif // CGC_TEST_FUZZ_FUZZSUPPORT_H
