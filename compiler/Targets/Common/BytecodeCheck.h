//===- BytecodeCheck.h - Structural check of MLIR bytecode ------*- C++ -*-===//
//
// The driver's JIT reads Partition IR bytecode that comes from outside the
// driver, and MLIR_EXCHANGE parts cross between the compiler and drivers
// (readUntrustedBytecode, UntrustedBytecode.h, runs this check first). MLIR
// 22's bytecode reader trusts several counts in its input: an
// attribute/type offset group that claims more entries than the section
// declared writes past the end of a vector (heap corruption), and counts of
// strings, dialects, op names, values, results or operands are used to size
// allocations before any byte backs them (a corrupted count is a huge
// allocation, i.e. an abort). Neither is an error message.
//
// checkBytecodeStructure walks the bytecode's structure the way the reader
// does (header, sections, string/dialect/attribute-type-offset/properties
// tables, the IR section's regions, blocks and ops, nested isolated-region
// sections) without interpreting any of it, and rejects every count that
// the remaining bytes cannot back. What it cannot see is what attribute and
// type entries refer to (each dialect encodes its own): entries that refer to
// each other in a cycle make the reader loop forever or recurse until the
// stack runs out; readUntrustedBytecode bounds that work while MLIR reads.
// The reader checks the rest (indices, types, verification) itself.
//
// No MLIR here: bytes in, a message out.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_COMMON_BYTECODECHECK_H
#define CGC_COMPILER_TARGETS_COMMON_BYTECODECHECK_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace cgc {

/// The bytecode versions the check understands (those MLIR 22 writes and
/// reads with the native properties encoding).
constexpr uint64_t kMinCheckedBytecodeVersion = 5;
constexpr uint64_t kMaxCheckedBytecodeVersion = 6;

/// What the check learned that the reader's caller may bound its work with.
struct BytecodeCounts {
  uint64_t attributes = 0, types = 0;
};

/// True if `data` is structurally sound MLIR bytecode; otherwise false with
/// `error` saying what is wrong and at which byte offset. `counts`, if given,
/// receives the attribute and type table sizes of sound bytecode.
bool checkBytecodeStructure(const void *data, size_t size, std::string &error,
                            BytecodeCounts *counts = nullptr);

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_COMMON_BYTECODECHECK_H
