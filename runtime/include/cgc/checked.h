//===- cgc/checked.h - Checked sizes, offsets and element counts -*- C++ -*-===//
//
// One helper for every size computed from untrusted numbers (an ONNX file's
// dims, a flag's shape, a compiled model's plan): multiplication and addition
// with overflow detection, element counts and byte sizes of tensors, and the
// limits cgc accepts. Header-only, C++17, no MLIR, no exceptions: the compiler
// (built with -fno-exceptions) and the runtime both use it, and callers turn a
// refusal into a message naming the tensor.
//
//   std::optional<uint64_t> bytes = cgc::tensorBytes(shape, cgc_dtype_size(dt));
//   if (!bytes)
//     return error("tensor 'w': " + cgc::tensorSizeError(shape, dt_size));
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CHECKED_H
#define CGC_CHECKED_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace cgc {

/// The largest tensor or buffer cgc accepts, in bytes: 2^47 (128 TiB), the
/// user address space of x86-64 and AArch64 Linux. No buffer larger than this
/// can exist in a process, so a larger size is a malformed input; sums of a
/// few thousand such sizes still fit in 64 bits.
inline constexpr uint64_t kMaxTensorBytes = uint64_t(1) << 47;
/// The largest element count of a tensor (of 1-byte elements).
inline constexpr int64_t kMaxTensorElements = int64_t(kMaxTensorBytes);
/// The largest rank cgc accepts (ONNX has no limit; real models stay below 8).
inline constexpr size_t kMaxTensorRank = 64;

/// The largest alignment cgc accepts for buffers and offsets (scratch
/// offsets, constants, bind points): 64 KiB, D3D12's default placement
/// alignment. Larger values only waste memory (and an alignment near 2^64
/// makes padding arithmetic overflow).
inline constexpr uint64_t kMaxAlignment = uint64_t(1) << 16;

/// The most threads a pool, a device or a tool flag (--threads,
/// --compile-threads) may ask for. Each thread reserves a stack (8 MiB of
/// address space by default): 100 million of them cannot start, and more
/// threads than a few times the cores only slow a run down.
inline constexpr uint32_t kMaxThreads = 1024;

/// a * b, or nullopt when it overflows 64 bits.
inline std::optional<uint64_t> checkedMul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
/// a + b, or nullopt when it overflows 64 bits.
inline std::optional<uint64_t> checkedAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
/// a * b for signed values, or nullopt when it overflows.
inline std::optional<int64_t> checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}
inline std::optional<int64_t> checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

/// value rounded up to a multiple of alignment (> 0), or nullopt on overflow.
inline std::optional<uint64_t> checkedAlignUp(uint64_t value, uint64_t alignment) {
  if (alignment == 0)
    return std::nullopt;
  std::optional<uint64_t> sum = checkedAdd(value, alignment - 1);
  if (!sum)
    return std::nullopt;
  return *sum / alignment * alignment;
}

/// The number of elements of a shape (dims[0] x dims[1] x ...): nullopt when
/// a dimension is negative, the rank exceeds kMaxTensorRank or the product
/// exceeds kMaxTensorElements (even where a later dimension is 0: a shape
/// whose other dimensions overflow is malformed whatever its size).
template <typename Dim>
std::optional<int64_t> elementCount(const Dim *dims, size_t rank) {
  if (rank > kMaxTensorRank)
    return std::nullopt;
  int64_t count = 1;
  bool zero = false;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0 || uint64_t(dims[i]) > uint64_t(kMaxTensorElements))
      return std::nullopt;
    if (dims[i] == 0) {
      zero = true;
      continue;
    }
    std::optional<int64_t> next = checkedMul(count, int64_t(dims[i]));
    if (!next || *next > kMaxTensorElements)
      return std::nullopt;
    count = *next;
  }
  return zero ? 0 : count;
}
template <typename Shape> std::optional<int64_t> elementCount(const Shape &shape) {
  return elementCount(std::data(shape), std::size(shape));
}

/// count elements of elementSize bytes: nullopt beyond kMaxTensorBytes.
inline std::optional<uint64_t> tensorBytes(int64_t count, size_t elementSize) {
  if (count < 0)
    return std::nullopt;
  std::optional<uint64_t> bytes = checkedMul(uint64_t(count), uint64_t(elementSize));
  if (!bytes || *bytes > kMaxTensorBytes)
    return std::nullopt;
  return bytes;
}
template <typename Shape>
std::optional<uint64_t> tensorBytes(const Shape &shape, size_t elementSize) {
  std::optional<int64_t> count = elementCount(shape);
  if (!count)
    return std::nullopt;
  return tensorBytes(*count, elementSize);
}

/// "128 TiB": the limit, for messages.
inline std::string maxTensorBytesText() { return "2^47 bytes (128 TiB)"; }

/// Why tensorBytes(shape, elementSize) refused the shape, for a message that
/// the caller prefixes with the tensor's name: "its shape 4294967296x
/// 4294967296 of 4-byte elements is larger than cgc's limit of 2^47 bytes
/// (128 TiB)". Empty when the shape is acceptable.
template <typename Shape>
std::string tensorSizeError(const Shape &shape, size_t elementSize) {
  std::string text;
  for (size_t i = 0; i < std::size(shape); ++i)
    text += (i ? "x" : "") + std::to_string(static_cast<long long>(std::data(shape)[i]));
  if (std::size(shape) > kMaxTensorRank)
    return "its rank " + std::to_string(std::size(shape)) + " is larger than cgc's limit of " +
           std::to_string(kMaxTensorRank);
  for (size_t i = 0; i < std::size(shape); ++i)
    if (std::data(shape)[i] < 0)
      return "its shape " + text + " has a negative dimension";
  if (tensorBytes(shape, elementSize))
    return "";
  return "its shape " + text + " of " + std::to_string(elementSize) +
         "-byte elements is larger than cgc's limit of " + maxTensorBytesText();
}

} // namespace cgc

#endif // CGC_CHECKED_H
