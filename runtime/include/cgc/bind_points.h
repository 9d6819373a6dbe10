//===- cgc/bind_points.h - Bind-point metadata ------------------*- C++ -*-===//
//
// Per partition, one entry per bind point (positional argument of the
// `cgc.partition`): what kind of buffer it binds, how many bytes the bound
// range must hold and how it must be aligned. Carried as a 'CGBP' part next
// to the Partition IR so the debug layer can validate bindings without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_BIND_POINTS_H
#define CGC_BIND_POINTS_H

#include "cgc/dtype.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cgc {

enum class BindPointKind {
  Argument, // a model input
  Output,   // a model output
  Scratch,  // a view into the scratch buffer
  Constant, // a view into the constants buffer
};

const char *bindPointKindName(BindPointKind kind);

struct BindPoint {
  std::string name;
  BindPointKind kind = BindPointKind::Argument;
  uint64_t bytes = 0;
  uint64_t alignment = 1;
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> shape;
  bool operator==(const BindPoint &other) const;
};

std::string serializeBindPoints(const std::vector<BindPoint> &bindPoints);
bool deserializeBindPoints(std::string_view text,
                           std::vector<BindPoint> &bindPoints,
                           std::string &error);

} // namespace cgc

#endif // CGC_BIND_POINTS_H
