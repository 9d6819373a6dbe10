//===- cgc/precompiled_program.h - Precompiled MLIR programs ----*- C++ -*-===//
//
// A precompiled MLIR program is the spec's PSDB entry ("Program
// Precompilation"): what a driver's compiler made of one MLIR program's
// Partition IR, computed offline (by cgc-compile through the target's
// compiler, the "IHV compiler plugin") and handed to the driver at
// CreateStateObject as a cached blob (the cgc extension
// D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC, cgc/d3d12_mlir.h). The
// client still passes the bytecode: the driver uses the blob only if its key
// matches (its own compiler and the very bytecode it was made from) and
// compiles otherwise.
//
// A blob is a DX container (cgc/container.h):
//
//   'CGPK'  the key (JSON):
//             {"format": 1,
//              "compiler": "<the identity of the compiler that made it>",
//              "partition_md5": "<32 hex digits>"}
//           partition_md5 is the MD5 of the program's Partition IR
//           bytecode (its 'MLIR' part after the interface GUID), as
//           CreateStateObject gets it.
//   then the driver's compiled form, in parts the driver defines; the
//   CPU driver's is one 'CGKP' kernel program (cgc/kernel_program.h).
//
// A compiled model stores one blob per MLIR program its target precompiled,
// as a 'CGPC' part (cgc/compiled_model.h).
//
// Blobs are untrusted input: readers validate the container (digest,
// bounds) and the key; a driver validates the compiled form it finds under a
// matching key as it would any input.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PRECOMPILED_PROGRAM_H
#define CGC_PRECOMPILED_PROGRAM_H

#include "cgc/container.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cgc {

using Md5Digest = std::array<uint8_t, 16>;

/// What a precompiled program is for.
struct PrecompiledKey {
  /// The key format this build writes and matches. A blob of another
  /// format is well formed but never matches (a cache miss, not an error).
  static constexpr uint32_t kFormat = 1;
  uint32_t format = kFormat;
  /// The identity of the compiler that made the blob; a driver uses a blob
  /// only if this is its own compiler's identity.
  std::string compiler;
  /// MD5 of the Partition IR bytecode the blob was compiled from.
  Md5Digest partitionDigest = {};

  bool operator==(const PrecompiledKey &other) const;
  bool operator!=(const PrecompiledKey &other) const { return !(*this == other); }
};

/// MD5 of Partition IR bytecode (an 'MLIR' part after its interface GUID).
Md5Digest digestBytecode(ByteView bytecode);
/// 32 lowercase hex digits.
std::string digestHex(const Md5Digest &digest);

/// A blob: the key part, then `parts` ({FourCC, payload}) in order.
std::vector<uint8_t>
writePrecompiledProgram(const PrecompiledKey &key,
                        const std::vector<std::pair<uint32_t, std::string>> &parts);

/// Opens a blob in memory that outlives `reader`: validates the container
/// and reads its key. Returns false with a message for a malformed blob (not
/// a container, a bad digest, no or two 'CGPK' parts, a key that is not the
/// JSON above). A well-formed key of another format is returned with only
/// `format` set.
bool readPrecompiledProgram(const void *blob, size_t size, ContainerReader &reader,
                            PrecompiledKey &key, std::string &error);

/// "matches", or why `found` is not `expected` ("made by compiler X, this
/// driver's is Y", "made from other bytecode", "key format 2, this driver
/// reads 1").
std::string describeKeyMismatch(const PrecompiledKey &found, const PrecompiledKey &expected);

/// The value key under which a precompiled database holds the compiled
/// form of the Partition IR bytecode with this digest for an adapter
/// family (docs/precompilation.md): "<family>/mlir-program/<32 hex>". The
/// compiler plugin stores under it, the driver derives it at
/// CreateStateObject: the key depends on what decides the object code only
/// (not the program's name), so equal partitions share one value.
std::string precompiledValueKey(std::string_view adapterFamily, const Md5Digest &partition);

/// A D3D12_VERSION_NUMBER for a compiler identity "<prefix> src:<16 hex>"
/// (cmake/CompilerIdentity.cmake): the project's major and minor version,
/// then 32 bits of the identity's MD5 (its source digest and MLIR version)
/// as build and revision, so that a compiler built from other sources or
/// against another MLIR has another version. 0 if the identity has no
/// source digest.
uint64_t compilerVersionNumber(std::string_view identity);

} // namespace cgc

#endif // CGC_PRECOMPILED_PROGRAM_H
