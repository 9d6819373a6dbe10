//===- ConstantStore.cpp - Named constants of an imported model -----------===//

#include "compiler/Import/ConstantStore.h"

#include "llvm/ADT/Twine.h"

#include <cassert>

namespace cgc {

int64_t ConstantStore::Entry::getNumElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

const ConstantStore::Entry &
ConstantStore::insert(std::unique_ptr<Entry> entry) {
  assert(!contains(entry->name) && "constant names must be unique");
  assert(entry->byteSize == static_cast<size_t>(entry->getNumElements()) *
                                cgc_dtype_size(entry->dtype) &&
         "constant byte size does not match its dtype and shape");
  index[entry->name] = entries.size();
  entries.push_back(std::move(entry));
  return *entries.back();
}

const ConstantStore::Entry &ConstantStore::add(llvm::StringRef name,
                                               cgc_dtype_t dtype,
                                               llvm::ArrayRef<int64_t> shape,
                                               std::string &&bytes) {
  auto owned = std::make_shared<std::string>(std::move(bytes));
  const uint8_t *data = reinterpret_cast<const uint8_t *>(owned->data());
  size_t size = owned->size();
  return addView(name, dtype, shape, data, size, std::move(owned));
}

const ConstantStore::Entry &ConstantStore::add(llvm::StringRef name,
                                               cgc_dtype_t dtype,
                                               llvm::ArrayRef<int64_t> shape,
                                               std::vector<uint8_t> &&bytes) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  const uint8_t *data = owned->data();
  size_t size = owned->size();
  return addView(name, dtype, shape, data, size, std::move(owned));
}

const ConstantStore::Entry &
ConstantStore::addView(llvm::StringRef name, cgc_dtype_t dtype,
                       llvm::ArrayRef<int64_t> shape, const uint8_t *data,
                       size_t byteSize, std::shared_ptr<const void> owner) {
  auto entry = std::make_unique<Entry>();
  entry->name = name.str();
  entry->dtype = dtype;
  entry->shape.assign(shape.begin(), shape.end());
  entry->data = data;
  entry->byteSize = byteSize;
  entry->owner = std::move(owner);
  return insert(std::move(entry));
}

const ConstantStore::Entry *ConstantStore::lookup(llvm::StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : entries[it->second].get();
}

std::string ConstantStore::makeUniqueName(llvm::StringRef base) const {
  if (!contains(base))
    return base.str();
  for (unsigned suffix = 1;; ++suffix) {
    std::string candidate = (base + "_" + llvm::Twine(suffix)).str();
    if (!contains(candidate))
      return candidate;
  }
}

void ConstantStore::retain(const std::function<bool(const Entry &)> &keep) {
  std::vector<std::unique_ptr<Entry>> kept;
  kept.reserve(entries.size());
  index.clear();
  for (std::unique_ptr<Entry> &entry : entries) {
    if (!keep(*entry))
      continue;
    index[entry->name] = kept.size();
    kept.push_back(std::move(entry));
  }
  entries = std::move(kept);
}

uint64_t ConstantStore::getTotalBytes() const {
  uint64_t total = 0;
  for (const std::unique_ptr<Entry> &entry : entries)
    total += entry->byteSize;
  return total;
}

} // namespace cgc
