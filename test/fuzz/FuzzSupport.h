//===- FuzzSupport.h - Helpers shared by cgc's fuzz targets -----*- C++ -*-===//
//
// Readers check a container's MD5 digest first, so most mutated inputs stop
// there. Targets that read containers run each input twice: as it is, and
// "re-digested" (the digest rewritten to match the mutated bytes), so the
// fuzzer reaches the checks behind the digest (the way a forger would).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_TEST_FUZZ_FUZZSUPPORT_H
#define CGC_TEST_FUZZ_FUZZSUPPORT_H

#include "cgc/container.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace cgc::fuzz {

/// `data` with bytes [4, 20) set to the MD5 of [20, size) when it is long
/// enough to hold a header; else a plain copy.
inline std::vector<uint8_t> redigested(const uint8_t *data, size_t size) {
  std::vector<uint8_t> copy(data, data + size);
  if (size >= kContainerHeaderSize)
    md5(copy.data() + 20, size - 20, copy.data() + 4);
  return copy;
}

} // namespace cgc::fuzz

#endif // CGC_TEST_FUZZ_FUZZSUPPORT_H
