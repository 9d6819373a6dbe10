//===- sort.h - Deterministic index sorting --------------------*- C++ -*-===//
//
// Part of cgc's planning library (planning/): what a target's compiler side
// and its driver must agree on, on plain data, with nothing but the C++
// standard library.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PLANNING_SORT_H
#define CGC_PLANNING_SORT_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace cgc::planning {

/// Sorts a list of distinct indices that starts in increasing order, as
/// std::stable_sort would (ties keep index order), with std::sort.
template <typename Index, typename Less>
void sortIndices(std::vector<Index> &v, Less less) {
  std::sort(v.begin(), v.end(), [&](Index a, Index b) {
    if (less(a, b))
      return true;
    if (less(b, a))
      return false;
    return a < b;
  });
}

} // namespace cgc::planning

#endif // CGC_PLANNING_SORT_H
