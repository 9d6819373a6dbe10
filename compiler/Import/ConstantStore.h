//===- ConstantStore.h - Named constants of an imported model ---*- C++ -*-===//
//
// The bytes of a model's constants (weights), kept out of the IR. Input IR
// refers to each by name (`cgc.constant("name")`); later stages place them in
// the compiled model's constants buffer. An entry is a dtype, a static shape
// and a byte range that the store keeps alive: bytes taken over from the
// parsed protobuf (no copy), a slice of a memory-mapped external-data file,
// or bytes computed at import time.
//
// Entries keep their insertion order, which is the order in which the
// importer met them (initializers first, then folded constants).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_IMPORT_CONSTANTSTORE_H
#define CGC_COMPILER_IMPORT_CONSTANTSTORE_H

#include "cgc/dtype.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/iterator.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cgc {

class ConstantStore {
public:
  /// One named constant. `data` points at `byteSize` bytes that stay valid as
  /// long as the store (or a copy of `owner`) lives. The data is only
  /// byte-aligned in general (a slice of an external file can start at any
  /// offset); copy it or check `isAligned` before reading wider types.
  struct Entry {
    std::string name;
    cgc_dtype_t dtype = CGC_DTYPE_INVALID;
    std::vector<int64_t> shape;
    const uint8_t *data = nullptr;
    size_t byteSize = 0;
    /// Keeps the bytes alive (a string, a vector, a mapped file, ...).
    std::shared_ptr<const void> owner;

    int64_t getNumElements() const;
    llvm::ArrayRef<uint8_t> getBytes() const { return {data, byteSize}; }
    bool isAligned(size_t alignment) const {
      return reinterpret_cast<uintptr_t>(data) % alignment == 0;
    }
  };

  ConstantStore() = default;
  ConstantStore(ConstantStore &&) = default;
  ConstantStore &operator=(ConstantStore &&) = default;
  ConstantStore(const ConstantStore &) = delete;
  ConstantStore &operator=(const ConstantStore &) = delete;

  /// Adds an entry that takes ownership of `bytes`. The name must be new
  /// (see `contains` / `makeUniqueName`) and the size must match dtype and
  /// shape; both are asserted.
  const Entry &add(llvm::StringRef name, cgc_dtype_t dtype,
                   llvm::ArrayRef<int64_t> shape, std::string &&bytes);
  const Entry &add(llvm::StringRef name, cgc_dtype_t dtype,
                   llvm::ArrayRef<int64_t> shape, std::vector<uint8_t> &&bytes);
  /// Adds an entry over bytes owned by `owner` (for example a mapped file).
  const Entry &addView(llvm::StringRef name, cgc_dtype_t dtype,
                       llvm::ArrayRef<int64_t> shape, const uint8_t *data,
                       size_t byteSize, std::shared_ptr<const void> owner);

  /// The entry called `name`, or null.
  const Entry *lookup(llvm::StringRef name) const;
  bool contains(llvm::StringRef name) const { return index.count(name); }
  /// `base` if no entry has that name, else `base_1`, `base_2`, ...
  std::string makeUniqueName(llvm::StringRef base) const;

  /// Keeps only the entries for which `keep` is true, in order.
  void retain(const std::function<bool(const Entry &)> &keep);

  size_t size() const { return entries.size(); }
  bool empty() const { return entries.empty(); }
  /// Sum of the entries' byte sizes.
  uint64_t getTotalBytes() const;

  class iterator
      : public llvm::iterator_adaptor_base<
            iterator, std::vector<std::unique_ptr<Entry>>::const_iterator,
            std::random_access_iterator_tag, const Entry> {
  public:
    explicit iterator(std::vector<std::unique_ptr<Entry>>::const_iterator it)
        : iterator_adaptor_base(it) {}
    const Entry &operator*() const { return **I; }
  };
  iterator begin() const { return iterator(entries.begin()); }
  iterator end() const { return iterator(entries.end()); }

private:
  const Entry &insert(std::unique_ptr<Entry> entry);

  std::vector<std::unique_ptr<Entry>> entries;
  llvm::StringMap<size_t> index;
};

} // namespace cgc

#endif // CGC_COMPILER_IMPORT_CONSTANTSTORE_H
