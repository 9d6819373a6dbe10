//===- UntrustedBytecode.cpp - Reading MLIR bytecode from outside ---------===//

#include "compiler/Targets/Common/UntrustedBytecode.h"

#include "compiler/Targets/Common/BytecodeCheck.h"

#include "mlir/Bytecode/BytecodeImplementation.h"
#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <string>
#include <type_traits>

using namespace mlir;

namespace cgc {
namespace {

/// The work budget of one read (UntrustedBytecode.h).
struct EntryBudget {
  /// Failed custom-entry reads allowed in a row.
  uint64_t maxFailuresInARow;
  unsigned nested = 0;
  uint64_t failuresInARow = 0;
  bool exhausted = false;
};

/// Reads one custom-encoded attribute or type entry of `dialectName` with
/// the dialect's bytecode interface, within `budget`.
template <typename T>
LogicalResult readCustomEntry(EntryBudget &budget,
                              DialectBytecodeReader &reader,
                              StringRef dialectName, T &entry) {
  Dialect *dialect = reader.getContext()->getLoadedDialect(dialectName);
  const auto *interface =
      dialect ? dialect->getRegisteredInterface<BytecodeDialectInterface>()
              : nullptr;
  // Not ours to read: MLIR's reader reports the missing interface.
  if (!interface)
    return success();
  // Once exhausted, every read fails at once, without deferring anything, so
  // that the reader's worklist (and any enclosing one) stops.
  if (budget.exhausted)
    return failure();
  if (budget.nested >= kMaxNestedEntries) {
    budget.exhausted = true;
    return reader.emitError()
           << "attribute and type entries nest deeper than "
           << kMaxNestedEntries << " (do they refer to themselves?)";
  }
  ++budget.nested;
  if constexpr (std::is_same_v<T, Type>)
    entry = interface->readType(reader);
  else
    entry = interface->readAttribute(reader);
  --budget.nested;
  // Exhausted inside: the error is out already.
  if (budget.exhausted)
    return failure();
  if (entry) {
    budget.failuresInARow = 0;
    return success();
  }
  // A failure the reader will retry (a deferred nested entry) or a real one.
  if (++budget.failuresInARow > budget.maxFailuresInARow) {
    budget.exhausted = true;
    return reader.emitError()
           << "attribute and type entries refer to each other in a cycle ("
           << budget.failuresInARow << " reads failed in a row)";
  }
  return failure();
}

/// MLIR's builtin attribute readers build what they read without verifying
/// it (`get`, not `getChecked`; Debian's MLIR has no assertions), and build a
/// FloatAttr even when its value could not be read: a FloatAttr cut short
/// crashed copying an APFloat that was never made (found by the bytecode
/// fuzzer, test/fuzz/regressions/bytecode). This reads the entries those readers trust first and refuses
/// the wrong ones; for the others it returns success with no entry, and
/// MLIR reads the entry again from its start with the next callback.
/// Codes: BuiltinDialectBytecode.td's BuiltinDialectAttributes.
/// A list of `count` entries read from bytecode of `limit` bytes: MLIR's
/// readers reserve `count` first, so a count no buffer could hold aborted
/// the process ("SmallVector unable to grow", found by the bytecode fuzzer).
LogicalResult checkCount(DialectBytecodeReader &reader, uint64_t count, uint64_t limit,
                         const char *what) {
  if (count <= limit)
    return success();
  return reader.emitError() << what << " of " << count << " entries in " << limit
                            << " bytes of bytecode";
}

/// Reads a list count (and, for `skipFirst`, a reference before it) and
/// checks it; success without an error when the bytes are short (MLIR's
/// reader reports those).
LogicalResult checkLeadingCount(DialectBytecodeReader &reader, uint64_t limit, bool skipFirst,
                                const char *what) {
  uint64_t value = 0;
  if (skipFirst && failed(reader.readVarInt(value)))
    return success();
  if (failed(reader.readVarInt(value)))
    return success();
  return checkCount(reader, value, limit, what);
}

/// Reads a list count, checks it and skips the list's entries (one varint
/// each: type references, flags). Fails for a count past the buffer;
/// `complete` is false when the bytes ran short (MLIR's reader reports it).
LogicalResult skipCheckedList(DialectBytecodeReader &reader, uint64_t limit, const char *what,
                              bool &complete) {
  complete = false;
  uint64_t count = 0, entry = 0;
  if (failed(reader.readVarInt(count)))
    return success();
  if (failed(checkCount(reader, count, limit, what)))
    return failure();
  for (uint64_t i = 0; i < count; ++i)
    if (failed(reader.readVarInt(entry)))
      return success();
  complete = true;
  return success();
}

/// The builtin types whose readers reserve lists (codes: BuiltinDialectTypes).
LogicalResult checkBuiltinType(DialectBytecodeReader &reader, uint64_t limit) {
  enum : uint64_t {
    kFunctionType = 2,
    kMemRefType = 10,
    kMemRefTypeWithMemSpace = 11,
    kRankedTensorType = 13,
    kRankedTensorTypeWithEncoding = 14,
    kTupleType = 15,
    kVectorType = 19,
    kVectorTypeWithScalableDims = 20,
  };
  uint64_t code = 0;
  if (failed(reader.readVarInt(code)))
    return success();
  switch (code) {
  case kFunctionType: {
    bool complete = false;
    if (failed(skipCheckedList(reader, limit, "a function type's inputs", complete)))
      return failure();
    return complete ? checkLeadingCount(reader, limit, false, "a function type's results")
                    : success();
  }
  case kMemRefType:
  case kRankedTensorType:
  case kVectorType:
    return checkLeadingCount(reader, limit, false, "a shape");
  case kMemRefTypeWithMemSpace:
  case kRankedTensorTypeWithEncoding:
    return checkLeadingCount(reader, limit, true, "a shape");
  case kTupleType:
    return checkLeadingCount(reader, limit, false, "a tuple");
  case kVectorTypeWithScalableDims: {
    bool complete = false;
    if (failed(skipCheckedList(reader, limit, "a vector's scalable flags", complete)))
      return failure();
    return complete ? checkLeadingCount(reader, limit, false, "a shape") : success();
  }
  default:
    return success();
  }
}

LogicalResult checkBuiltinAttribute(DialectBytecodeReader &reader, uint64_t limit) {
  enum : uint64_t {
    kArrayAttr = 0,
    kDictionaryAttr = 1,
    kSymbolRefAttr = 5,
    kIntegerAttr = 8,
    kFloatAttr = 9,
    kFusedLoc = 12,
    kFusedLocWithMetadata = 13,
    kDenseArrayAttr = 17,
    kDenseIntOrFPElementsAttr = 18,
    kDenseStringElementsAttr = 19,
    kFileLineColRange = 22,
  };
  uint64_t code = 0;
  if (failed(reader.readVarInt(code)))
    return success(); // the builtin reader reports it
  Type type;
  switch (code) {
  case kArrayAttr:
  case kDictionaryAttr:
  case kFusedLoc:
  case kFusedLocWithMetadata:
    return checkLeadingCount(reader, limit, false, "a list attribute");
  case kSymbolRefAttr:
    return checkLeadingCount(reader, limit, true, "a symbol reference");
  // The file name, then the list of line and column numbers (the 2026-11-29
  // campaign's "SmallVector unable to grow" after 486,975 executions).
  case kFileLineColRange:
    return checkLeadingCount(reader, limit, true, "a location range");
  case kDenseStringElementsAttr: {
    uint64_t splat = 0;
    if (failed(reader.readType(type)) || failed(reader.readVarInt(splat)))
      return success();
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasStaticShape())
      return reader.emitError() << "dense strings of type " << type;
    if (!splat)
      return checkCount(reader, uint64_t(shaped.getNumElements()), limit, "dense strings");
    return success();
  }
  // MLIR's readers also build the attribute when reading its value failed
  // (a value cut short): the value is read here too.
  case kIntegerAttr: {
    if (failed(reader.readType(type)))
      return failure(); // as for FloatAttr below
    if (!isa<IntegerType, IndexType>(type))
      return reader.emitError() << "an IntegerAttr of type " << type;
    unsigned width = isa<IndexType>(type) ? IndexType::kInternalStorageBitWidth
                                          : type.getIntOrFloatBitWidth();
    if (failed(reader.readAPIntWithKnownWidth(width)))
      return reader.emitError() << "an IntegerAttr of type " << type << " without its value";
    return success();
  }
  case kFloatAttr: {
    // A type that cannot be read now (a nested entry MLIR defers) fails this
    // read too: MLIR's FloatAttr reader ignores a value it failed to read,
    // and the value can only be checked with the type.
    if (failed(reader.readType(type)))
      return failure();
    auto floatType = dyn_cast<FloatType>(type);
    if (!floatType)
      return reader.emitError() << "a FloatAttr of type " << type;
    if (failed(reader.readAPFloatWithKnownSemantics(floatType.getFloatSemantics())))
      return reader.emitError() << "a FloatAttr of type " << type << " without its value";
    return success();
  }
  case kDenseArrayAttr: {
    uint64_t size = 0;
    ArrayRef<char> raw;
    if (failed(reader.readType(type)) || failed(reader.readVarInt(size)) ||
        failed(reader.readBlob(raw)))
      return success();
    bool known = type.isInteger(1) || type.isInteger(8) || type.isInteger(16) ||
                 type.isInteger(32) || type.isInteger(64) || type.isF32() || type.isF64();
    if (!known)
      return reader.emitError() << "a DenseArrayAttr of " << type;
    uint64_t element = type.isInteger(1) ? 1 : type.getIntOrFloatBitWidth() / 8;
    if (size > raw.size() || size * element != raw.size())
      return reader.emitError() << "a DenseArrayAttr of " << size << " x " << type
                                << " with " << raw.size() << " bytes";
    return success();
  }
  case kDenseIntOrFPElementsAttr: {
    ArrayRef<char> raw;
    if (failed(reader.readType(type)) || failed(reader.readBlob(raw)))
      return success();
    auto shaped = dyn_cast<ShapedType>(type);
    if (!shaped || !shaped.hasStaticShape() ||
        !isa<IntegerType, IndexType, FloatType, ComplexType>(shaped.getElementType()))
      return reader.emitError() << "dense elements of type " << type;
    if (auto complex = dyn_cast<ComplexType>(shaped.getElementType());
        complex && !isa<IntegerType, FloatType>(complex.getElementType()))
      return reader.emitError() << "dense elements of type " << type;
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(shaped, raw, splat))
      return reader.emitError() << "dense elements of type " << type << " with "
                                << raw.size() << " bytes";
    return success();
  }
  default:
    return success();
  }
}

} // namespace

LogicalResult readUntrustedBytecode(llvm::MemoryBufferRef buffer, Block *block,
                                    MLIRContext *context) {
  // The message names the byte offset: no location of its own.
  std::string error;
  BytecodeCounts counts;
  if (!checkBytecodeStructure(buffer.getBufferStart(), buffer.getBufferSize(),
                              error, &counts))
    return emitError(UnknownLoc::get(context)) << error;

  // Without a cycle, the reader's worklist resolves an entry (or fails for
  // good) after at most two passes over the entries on it: one until the
  // entry with no unresolved descendant on the list comes round, one down
  // the chain of entries that it defers to. Each failed attempt counts at
  // most once per nesting level (MLIR defers past 5): 2 * 7 < 16.
  EntryBudget budget{16 * (counts.attributes + counts.types) + 64};
  ParserConfig config(context);
  // First: refuse the builtin entries MLIR's readers would build unchecked
  // (MLIR rewinds the entry before the next callback).
  uint64_t limit = buffer.getBufferSize();
  config.getBytecodeReaderConfig().attachAttributeCallback(
      [limit](DialectBytecodeReader &reader, StringRef dialectName, Attribute &) {
        return dialectName == "builtin" ? checkBuiltinAttribute(reader, limit) : success();
      });
  config.getBytecodeReaderConfig().attachTypeCallback(
      [limit](DialectBytecodeReader &reader, StringRef dialectName, Type &) {
        return dialectName == "builtin" ? checkBuiltinType(reader, limit) : success();
      });
  config.getBytecodeReaderConfig().attachAttributeCallback(
      [&budget](DialectBytecodeReader &reader, StringRef dialectName,
                Attribute &entry) {
        return readCustomEntry(budget, reader, dialectName, entry);
      });
  config.getBytecodeReaderConfig().attachTypeCallback(
      [&budget](DialectBytecodeReader &reader, StringRef dialectName,
                Type &entry) {
        return readCustomEntry(budget, reader, dialectName, entry);
      });
  return readBytecodeFile(buffer, block, config);
}

} // namespace cgc
