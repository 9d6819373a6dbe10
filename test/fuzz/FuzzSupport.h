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
#include <cstring>
#include <vector>

namespace cgc::fuzz {

/// `data` with the header's total size (bytes [24, 28)) set to its real
/// size and bytes [4, 20) to the MD5 of [20, size), when it is long enough to
/// hold a header; else a plain copy.
inline std::vector<uint8_t> redigested(const uint8_t *data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  if (size >= kContainerHeaderSize && size <= UINT32_MAX) {
    uint32_t total = uint32_t(size);
    for (int i = 0; i < 4; ++i)
      copy[24 + i] = uint8_t(total >> (8 * i));
    md5(copy.data() + 20, size - 20, copy.data() + 4);
  }
  return copy;
}

} // namespace cgc::fuzz

#endif // CGC_TEST_FUZZ_FUZZSUPPORT_H
