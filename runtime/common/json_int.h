//===- json_int.h - Integers read from JSON, range-checked ------*- C++ -*-===//
//
// nlohmann::json's get<uint64_t>() on a number that does not fit (a float
// such as 2.4e67, a negative number for an unsigned field) converts it with
// static_cast: undefined behaviour for floats out of range, silent
// wrap-around otherwise. The readers of compiled models, kernel programs and
// bind points take their integers through JsonInt instead:
//
//   plan.scratchBytes = j.at("bytes").get<JsonInt<uint64_t>>();
//   t.shape = jsonInts<int64_t>(j.at("shape"));
//
// A value that is not an integer of T's range throws std::out_of_range,
// which the readers turn into their error message.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_RUNTIME_COMMON_JSON_INT_H
#define CGC_RUNTIME_COMMON_JSON_INT_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace cgc {

template <class T> struct JsonInt {
  T value{};
  operator T() const { return value; }
};

template <class T> void from_json(const nlohmann::json &j, JsonInt<T> &out) {
  static_assert(std::is_integral_v<T>);
  using Limits = std::numeric_limits<T>;
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v <= uint64_t(Limits::max())) {
      out.value = T(v);
      return;
    }
  } else if (j.is_number_integer()) {
    int64_t v = j.get<int64_t>();
    if (v >= int64_t(Limits::min()) && (v < 0 || uint64_t(v) <= uint64_t(Limits::max()))) {
      out.value = T(v);
      return;
    }
  } else if (!j.is_number()) {
    throw std::out_of_range("expected an integer, got " + std::string(j.type_name()));
  }
  throw std::out_of_range("the number " + j.dump() + " is not an integer from " +
                          std::to_string(Limits::min()) + " to " + std::to_string(Limits::max()));
}

/// A JSON array of integers of T's range.
template <class T> std::vector<T> jsonInts(const nlohmann::json &j) {
  std::vector<T> values;
  for (const JsonInt<T> &v : j.get<std::vector<JsonInt<T>>>())
    values.push_back(v);
  return values;
}

} // namespace cgc

#endif // CGC_RUNTIME_COMMON_JSON_INT_H
