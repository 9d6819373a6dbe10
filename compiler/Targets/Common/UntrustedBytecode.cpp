//===- UntrustedBytecode.cpp - Reading MLIR bytecode from outside ---------===//

#include "compiler/Targets/Common/UntrustedBytecode.h"

#include "compiler/Targets/Common/BytecodeCheck.h"

#include "mlir/Bytecode/BytecodeImplementation.h"
#include "mlir/Bytecode/BytecodeReader.h"
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
