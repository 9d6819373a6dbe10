//===- tile_table.h - Register-tile kernels chosen at run time --*- C++ -*-===//
//
// The register-tiled kernels (sgemm.cpp, stem.cpp) instantiate one function
// per tile shape: R rows of V zmm vectors, R * V <= 24 accumulators. This
// picks the instantiation for a shape known only at run time. Private to
// cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_TILE_TABLE_H
#define CGC_CPU_KERNELS_TILE_TABLE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace cgc::cpu {

namespace detail {
template <class Fn, template <int, int> class Pick, int V, size_t... R>
constexpr std::array<Fn, sizeof...(R)> tileRow(std::index_sequence<R...>) {
  return {Pick<int(R) + 1, V>::value...};
}

/// Pick<rows, V>::value for rows in [1, 24 / V], built once.
template <class Fn, template <int, int> class Pick, int V> const Fn *tileRowOf() {
  static const auto row = tileRow<Fn, Pick, V>(std::make_index_sequence<24 / V>());
  return row.data();
}
} // namespace detail

/// Pick<rows, vectors>::value (a function pointer of type Fn) for rows in
/// [1, 24 / vectors], vectors one of `Vectors` (null for another count).
template <class Fn, template <int, int> class Pick, int... Vectors>
Fn pickTileOf(int64_t rows, int64_t vectors) {
  Fn fn = nullptr;
  ((vectors == Vectors ? (fn = detail::tileRowOf<Fn, Pick, Vectors>()[rows - 1]) : fn), ...);
  return fn;
}

/// pickTileOf for vectors in [1, 4]: the 16-column tiles.
template <class Fn, template <int, int> class Pick>
Fn pickTile(int64_t rows, int64_t vectors) {
  return pickTileOf<Fn, Pick, 1, 2, 3, 4>(rows, vectors);
}

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_TILE_TABLE_H
