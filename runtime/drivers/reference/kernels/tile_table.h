//===- tile_table.h - Register-tile kernels chosen at run time --*- C++ -*-===//
//
// The register-tiled kernels (sgemm.cpp, stem.cpp) instantiate one function
// per tile shape: R rows of V zmm vectors, R * V <= 24 accumulators. This
// picks the instantiation for a shape known only at run time. Private to
// cgc_ref_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_REFERENCE_KERNELS_TILE_TABLE_H
#define CGC_REFERENCE_KERNELS_TILE_TABLE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace cgc::ref {

namespace detail {
template <class Fn, template <int, int> class Pick, int V, size_t... R>
constexpr std::array<Fn, sizeof...(R)> tileRow(std::index_sequence<R...>) {
  return {Pick<int(R) + 1, V>::value...};
}
} // namespace detail

/// Pick<rows, vectors>::value (a function pointer of type Fn) for rows in
/// [1, 24 / vectors], vectors in [1, 4].
template <class Fn, template <int, int> class Pick>
Fn pickTile(int64_t rows, int64_t vectors) {
  static const auto t1 = detail::tileRow<Fn, Pick, 1>(std::make_index_sequence<24>());
  static const auto t2 = detail::tileRow<Fn, Pick, 2>(std::make_index_sequence<12>());
  static const auto t3 = detail::tileRow<Fn, Pick, 3>(std::make_index_sequence<8>());
  static const auto t4 = detail::tileRow<Fn, Pick, 4>(std::make_index_sequence<6>());
  switch (vectors) {
  case 1:
    return t1[size_t(rows - 1)];
  case 2:
    return t2[size_t(rows - 1)];
  case 3:
    return t3[size_t(rows - 1)];
  default:
    return t4[size_t(rows - 1)];
  }
}

} // namespace cgc::ref

#endif // CGC_REFERENCE_KERNELS_TILE_TABLE_H
