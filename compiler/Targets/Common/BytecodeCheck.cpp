//===- BytecodeCheck.cpp - Structural check of MLIR bytecode --------------===//
//
// Mirrors the traversal of mlir/lib/Bytecode/Reader/BytecodeReader.cpp
// (bytecode versions 5 and 6; docs: https://mlir.llvm.org/docs/BytecodeFormat/)
// closely enough to bound every count the reader sizes an allocation or a
// loop with by the bytes that must back it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Targets/Common/BytecodeCheck.h"

#include <cstring>
#include <optional>

namespace cgc {

namespace {

// Section IDs (mlir/Bytecode/Encoding.h).
enum Section : uint8_t {
  kString = 0,
  kDialect = 1,
  kAttrType = 2,
  kAttrTypeOffset = 3,
  kIR = 4,
  kResource = 5,
  kResourceOffset = 6,
  kDialectVersions = 7,
  kProperties = 8,
  kNumSections = 9,
};

// Op encoding mask bits.
enum : uint8_t {
  kHasAttrs = 1 << 0,
  kHasResults = 1 << 1,
  kHasOperands = 1 << 2,
  kHasSuccessors = 1 << 3,
  kHasInlineRegions = 1 << 4,
  kHasUseListOrders = 1 << 5,
  kHasProperties = 1 << 6,
};

constexpr uint8_t kAlignmentByte = 0xCB;
constexpr int kMaxRegionDepth = 64;

class Checker;

/// A cursor over one range of the bytecode.
class Cursor {
public:
  Cursor(Checker &checker, const uint8_t *begin, const uint8_t *end)
      : checker(&checker), it(begin), end(end) {}

  bool empty() const { return it == end; }
  size_t size() const { return static_cast<size_t>(end - it); }
  const uint8_t *position() const { return it; }

  bool fail(const std::string &message) const;

  bool byte(uint8_t &value) {
    if (empty())
      return fail("unexpected end of data");
    value = *it++;
    return true;
  }

  bool skip(size_t n) {
    if (n > size())
      return fail("a length of " + std::to_string(n) + " exceeds the " +
                  std::to_string(size()) + " bytes left");
    it += n;
    return true;
  }

  bool varint(uint64_t &value) {
    uint8_t first;
    if (!byte(first))
      return false;
    if (first & 1) {
      value = first >> 1;
      return true;
    }
    if (first == 0) {
      if (size() < 8)
        return fail("truncated 64-bit integer");
      value = 0;
      for (int i = 7; i >= 0; --i)
        value = value << 8 | it[i];
      it += 8;
      return true;
    }
    unsigned extra = 0;
    while (!(first >> extra & 1))
      ++extra;
    if (size() < extra)
      return fail("truncated integer");
    uint64_t raw = first;
    for (unsigned i = 0; i < extra; ++i)
      raw |= uint64_t(it[i]) << (8 * (i + 1));
    it += extra;
    value = raw >> (extra + 1);
    return true;
  }

  bool varintWithFlag(uint64_t &value, bool &flag) {
    if (!varint(value))
      return false;
    flag = value & 1;
    value >>= 1;
    return true;
  }

  /// A count of things that each take at least one of the bytes left.
  bool count(uint64_t &value, const char *what) {
    if (!varint(value))
      return false;
    if (value > size())
      return fail(std::string(what) + " " + std::to_string(value) +
                  " exceeds the " + std::to_string(size()) + " bytes left");
    return true;
  }

  /// An index into a table of `limit` entries.
  bool index(uint64_t limit, const char *what) {
    uint64_t value;
    if (!varint(value))
      return false;
    if (value >= limit)
      return fail(std::string(what) + " index " + std::to_string(value) +
                  " is out of range (" + std::to_string(limit) + " entries)");
    return true;
  }

  bool nullTerminated() {
    const void *nul = std::memchr(it, 0, size());
    if (!nul)
      return fail("unterminated string");
    it = static_cast<const uint8_t *>(nul) + 1;
    return true;
  }

  /// A section header and its data.
  bool section(uint8_t &id, std::optional<Cursor> &data);

private:
  Checker *checker;
  const uint8_t *it, *end;
};

class Checker {
public:
  Checker(const uint8_t *base, size_t size) : base(base), size(size) {}

  bool run();

  bool fail(const uint8_t *at, const std::string &message) {
    if (error.empty())
      error = "malformed MLIR bytecode at byte " +
              std::to_string(static_cast<size_t>(at - base)) + ": " + message;
    return false;
  }

  const uint8_t *base;
  size_t size;
  std::string error;
  BytecodeCounts counts;

private:
  bool checkStrings(Cursor c);
  bool checkDialects(Cursor c);
  bool checkAttrTypeOffsets(Cursor c, size_t attrTypeBytes);
  bool checkProperties(Cursor c);
  bool checkResources(Cursor offsets, size_t resourceBytes);
  bool checkResourceGroup(Cursor &offsets, size_t &resourceBytes);
  bool checkUseListOrders(Cursor &c, uint64_t rangeSize);
  bool checkBlockHeader(Cursor &c, uint64_t &numOps);
  bool checkRegion(Cursor &c, int depth);
  bool checkOp(Cursor &c, int depth);

  uint64_t version = 0;
  uint64_t numStrings = 0, numDialects = 0, numOpNames = 0;
};

bool Cursor::fail(const std::string &message) const {
  return checker->fail(it, message);
}

bool Cursor::section(uint8_t &id, std::optional<Cursor> &data) {
  uint8_t idAndAlignment;
  uint64_t length;
  if (!byte(idAndAlignment) || !varint(length))
    return false;
  id = idAndAlignment & 0x7f;
  if (id >= kNumSections)
    return fail("invalid section ID " + std::to_string(id));
  if (idAndAlignment & 0x80) {
    uint64_t alignment;
    if (!varint(alignment))
      return false;
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > 4096)
      return fail("section alignment " + std::to_string(alignment) +
                  " is not a power of two up to 4096");
    if (reinterpret_cast<uintptr_t>(checker->base) & (alignment - 1))
      return fail("section alignment " + std::to_string(alignment) +
                  " exceeds the buffer's");
    while (reinterpret_cast<uintptr_t>(it) & (alignment - 1)) {
      uint8_t padding;
      if (!byte(padding))
        return false;
      if (padding != kAlignmentByte)
        return fail("bad alignment padding");
    }
  }
  if (length > size())
    return fail("section of " + std::to_string(length) + " bytes exceeds the " +
                std::to_string(size()) + " bytes left");
  data.emplace(*checker, it, it + length);
  it += length;
  return true;
}

bool Checker::checkStrings(Cursor c) {
  size_t total = c.size();
  if (!c.count(numStrings, "string count"))
    return false;
  size_t dataEnd = total;
  for (uint64_t i = 0; i < numStrings; ++i) {
    uint64_t length;
    if (!c.varint(length))
      return false;
    // Each string holds at least its terminating NUL.
    if (length == 0 || length > dataEnd)
      return c.fail("string length " + std::to_string(length) +
                    " is out of range");
    dataEnd -= length;
  }
  if (total - c.size() != dataEnd)
    return c.fail("string lengths do not add up to the string data");
  return true;
}

bool Checker::checkDialects(Cursor c) {
  if (!c.count(numDialects, "dialect count"))
    return false;
  for (uint64_t i = 0; i < numDialects; ++i) {
    uint64_t name;
    bool hasVersion;
    if (!c.varintWithFlag(name, hasVersion))
      return false;
    if (name >= numStrings)
      return c.fail("dialect name index out of range");
    if (hasVersion) {
      uint8_t id;
      std::optional<Cursor> data;
      if (!c.section(id, data))
        return false;
      if (id != kDialectVersions)
        return c.fail("expected a dialect version section");
    }
  }
  uint64_t declaredOps;
  if (!c.count(declaredOps, "operation name count"))
    return false;
  while (!c.empty()) {
    uint64_t entries;
    if (!c.index(numDialects, "dialect") || !c.count(entries, "group size"))
      return false;
    for (uint64_t e = 0; e < entries; ++e) {
      uint64_t name;
      bool registered;
      if (!c.varintWithFlag(name, registered))
        return false;
      if (name >= numStrings)
        return c.fail("operation name index out of range");
      ++numOpNames;
    }
  }
  return true;
}

bool Checker::checkAttrTypeOffsets(Cursor c, size_t attrTypeBytes) {
  uint64_t numAttrs, numTypes;
  if (!c.count(numAttrs, "attribute count") || !c.count(numTypes, "type count"))
    return false;
  if (numAttrs + numTypes > c.size())
    return c.fail("attribute and type counts exceed the offset table");
  counts.attributes = numAttrs;
  counts.types = numTypes;
  uint64_t offset = 0;
  for (uint64_t expected : {numAttrs, numTypes}) {
    uint64_t seen = 0;
    while (seen != expected) {
      uint64_t entries;
      if (!c.index(numDialects, "dialect") || !c.varint(entries))
        return false;
      if (entries > expected - seen)
        return c.fail("a group of " + std::to_string(entries) +
                      " entries overruns the " + std::to_string(expected) +
                      " declared");
      for (uint64_t e = 0; e < entries; ++e, ++seen) {
        uint64_t bytes;
        bool custom;
        if (!c.varintWithFlag(bytes, custom))
          return false;
        if (bytes > attrTypeBytes - offset)
          return c.fail("an attribute or type entry overruns its section");
        offset += bytes;
      }
    }
  }
  if (!c.empty())
    return c.fail("trailing data in the attribute/type offset section");
  return true;
}

bool Checker::checkProperties(Cursor c) {
  if (c.empty())
    return true;
  uint64_t entries;
  if (!c.count(entries, "properties count"))
    return false;
  for (uint64_t i = 0; i < entries; ++i) {
    uint64_t bytes;
    if (!c.varint(bytes) || !c.skip(bytes))
      return false;
  }
  if (!c.empty())
    return c.fail("trailing data in the properties section");
  return true;
}

bool Checker::checkResourceGroup(Cursor &c, size_t &resourceBytes) {
  uint64_t entries;
  if (!c.count(entries, "resource count"))
    return false;
  for (uint64_t i = 0; i < entries; ++i) {
    uint64_t bytes;
    uint8_t kind;
    if (!c.index(numStrings, "resource key") || !c.varint(bytes) ||
        !c.byte(kind))
      return false;
    if (bytes > resourceBytes)
      return c.fail("a resource overruns the resource section");
    resourceBytes -= bytes;
  }
  return true;
}

bool Checker::checkResources(Cursor c, size_t resourceBytes) {
  uint64_t externalGroups;
  if (!c.count(externalGroups, "external resource group count"))
    return false;
  for (uint64_t g = 0; g < externalGroups; ++g)
    if (!c.index(numStrings, "resource group key") ||
        !checkResourceGroup(c, resourceBytes))
      return false;
  while (!c.empty())
    if (!c.index(numDialects, "dialect") ||
        !checkResourceGroup(c, resourceBytes))
      return false;
  return true;
}

bool Checker::checkUseListOrders(Cursor &c, uint64_t rangeSize) {
  uint64_t values = 1;
  if (rangeSize > 1 && !c.count(values, "use-list count"))
    return false;
  for (uint64_t v = 0; v < values; ++v) {
    uint64_t index, entries;
    bool pairs;
    if (rangeSize > 1 && !c.index(rangeSize, "use-list value"))
      return false;
    if (!c.varintWithFlag(entries, pairs))
      return false;
    if (entries > c.size())
      return c.fail("use-list length exceeds the bytes left");
    for (uint64_t e = 0; e < entries; ++e)
      if (!c.varint(index))
        return false;
  }
  return true;
}

bool Checker::checkBlockHeader(Cursor &c, uint64_t &numOps) {
  bool hasArgs;
  if (!c.varintWithFlag(numOps, hasArgs))
    return false;
  if (numOps > c.size())
    return c.fail("operation count exceeds the bytes left");
  if (!hasArgs)
    return true;
  uint64_t numArgs;
  if (!c.count(numArgs, "block argument count"))
    return false;
  for (uint64_t a = 0; a < numArgs; ++a) {
    uint64_t type;
    bool hasLoc;
    if (!c.varintWithFlag(type, hasLoc) || (hasLoc && !c.varint(type)))
      return false;
  }
  uint8_t hasUseListOrders;
  if (!c.byte(hasUseListOrders))
    return false;
  return !hasUseListOrders || checkUseListOrders(c, numArgs);
}

bool Checker::checkRegion(Cursor &c, int depth) {
  uint64_t numBlocks, numValues, numOps;
  if (!c.count(numBlocks, "block count"))
    return false;
  if (numBlocks == 0)
    return true;
  // Every value of the region is defined by a block argument or an op result
  // whose type takes at least one byte after this point.
  if (!c.count(numValues, "value count"))
    return false;
  for (uint64_t b = 0; b < numBlocks; ++b) {
    if (!checkBlockHeader(c, numOps))
      return false;
    for (uint64_t o = 0; o < numOps; ++o)
      if (!checkOp(c, depth))
        return false;
  }
  return true;
}

bool Checker::checkOp(Cursor &c, int depth) {
  uint8_t mask;
  uint64_t value, n, numResults = 0;
  if (!c.index(numOpNames, "operation name") || !c.byte(mask) ||
      !c.varint(value)) // location
    return false;
  if ((mask & kHasAttrs) && !c.varint(value))
    return false;
  if ((mask & kHasProperties) && !c.varint(value))
    return false;
  if (mask & kHasResults) {
    if (!c.count(numResults, "result count"))
      return false;
    for (uint64_t i = 0; i < numResults; ++i)
      if (!c.varint(value))
        return false;
  }
  if (mask & kHasOperands) {
    if (!c.count(n, "operand count"))
      return false;
    for (uint64_t i = 0; i < n; ++i)
      if (!c.varint(value))
        return false;
  }
  if (mask & kHasSuccessors) {
    if (!c.count(n, "successor count"))
      return false;
    for (uint64_t i = 0; i < n; ++i)
      if (!c.varint(value))
        return false;
  }
  if ((mask & kHasUseListOrders) && !checkUseListOrders(c, numResults))
    return false;
  if (!(mask & kHasInlineRegions))
    return true;
  bool isolated;
  if (!c.varintWithFlag(n, isolated))
    return false;
  if (n > c.size())
    return c.fail("region count exceeds the bytes left");
  if (n == 0)
    return true;
  if (depth >= kMaxRegionDepth)
    return c.fail("regions nested deeper than " +
                  std::to_string(kMaxRegionDepth));
  if (!isolated) {
    for (uint64_t r = 0; r < n; ++r)
      if (!checkRegion(c, depth + 1))
        return false;
    return true;
  }
  uint8_t id;
  std::optional<Cursor> data;
  if (!c.section(id, data))
    return false;
  if (id != kIR)
    return c.fail("expected an IR section for an isolated region");
  for (uint64_t r = 0; r < n; ++r)
    if (!checkRegion(*data, depth + 1))
      return false;
  return true;
}

bool Checker::run() {
  Cursor c(*this, base, base + size);
  if (size < 4 || std::memcmp(base, "ML\xefR", 4) != 0)
    return fail(base, "not MLIR bytecode");
  c.skip(4);
  if (!c.varint(version))
    return false;
  if (version < kMinCheckedBytecodeVersion ||
      version > kMaxCheckedBytecodeVersion)
    return c.fail("bytecode version " + std::to_string(version) +
                  " is not supported (versions " +
                  std::to_string(kMinCheckedBytecodeVersion) + " to " +
                  std::to_string(kMaxCheckedBytecodeVersion) + " are)");
  if (!c.nullTerminated())
    return false;

  std::optional<Cursor> sections[kNumSections];
  while (!c.empty()) {
    uint8_t id;
    std::optional<Cursor> data;
    if (!c.section(id, data))
      return false;
    if (sections[id])
      return c.fail("duplicate section " + std::to_string(id));
    sections[id] = data;
  }
  for (uint8_t id : {kString, kDialect, kAttrType, kAttrTypeOffset, kIR,
                     kProperties})
    if (!sections[id])
      return c.fail("missing section " + std::to_string(id));
  if (sections[kResource].has_value() != sections[kResourceOffset].has_value())
    return c.fail("a resource section without its offset section or the "
                  "reverse");

  return checkStrings(*sections[kString]) &&
         checkProperties(*sections[kProperties]) &&
         checkDialects(*sections[kDialect]) &&
         (!sections[kResource] ||
          checkResources(*sections[kResourceOffset],
                         sections[kResource]->size())) &&
         checkAttrTypeOffsets(*sections[kAttrTypeOffset],
                              sections[kAttrType]->size()) &&
         [&] {
           // The top-level block: a header without arguments (the reader
           // has no value scope for them yet), then its ops.
           Cursor ir = *sections[kIR];
           uint64_t numOps;
           bool hasArgs;
           if (!ir.varintWithFlag(numOps, hasArgs))
             return false;
           if (hasArgs)
             return ir.fail("the top-level block has arguments");
           if (numOps > ir.size())
             return ir.fail("operation count exceeds the bytes left");
           for (uint64_t o = 0; o < numOps; ++o)
             if (!checkOp(ir, 0))
               return false;
           return true;
         }();
}

} // namespace

bool checkBytecodeStructure(const void *data, size_t size, std::string &error,
                            BytecodeCounts *counts) {
  if (!data || size == 0) {
    error = "empty bytecode";
    return false;
  }
  Checker checker(static_cast<const uint8_t *>(data), size);
  if (checker.run()) {
    if (counts)
      *counts = checker.counts;
    return true;
  }
  error = checker.error;
  return false;
}

} // namespace cgc
