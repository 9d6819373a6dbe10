//===- Target.h - Compilation targets and their exchange --------*- C++ -*-===//
//
// A target takes part in compilation through one byte-level function shaped
// like D3D12_FEATURE_DATA_MLIR_EXCHANGE: an MLIR interface GUID, input bytes
// and output bytes, each a DX container (docs/architecture.md). The compiler
// reaches a target in-process (its compiler side in compiler/Targets/<name>)
// or through a D3D12 device's CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE);
// either way it sees the same bytes.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_COMPILER_TARGETS_TARGET_H
#define CGC_COMPILER_TARGETS_TARGET_H

#include "cgc/container.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cgc {

/// HRESULT values used by exchanges (same numbers as Windows).
enum : int32_t {
  kS_OK = 0,
  kE_INVALIDARG = int32_t(0x80070057),
  kE_OUTOFMEMORY = int32_t(0x8007000E),
  kE_FAIL = int32_t(0x80004005),
  kDXGI_ERROR_UNSUPPORTED = int32_t(0x887A0004),
  /// HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER).
  kE_NOT_SUFFICIENT_BUFFER = int32_t(0x8007007A),
};

/// The exchange function. Size query: with `out == nullptr`, stores the
/// needed size in `*outSize` and returns kS_OK. With `out` and an `*outSize`
/// smaller than needed, stores the needed size and returns
/// kE_NOT_SUFFICIENT_BUFFER without writing (as CheckFeatureSupport does);
/// otherwise writes the answer and its size.
using ExchangeFn =
    std::function<int32_t(const Guid &interface, const void *in, size_t inSize,
                          void *out, size_t *outSize)>;

/// A target's offline compiler for the MLIR programs of its partitions (the
/// "IHV compiler plugin" of the spec's Program Precompilation): from a
/// partition's Partition IR bytecode to a precompiled program
/// (cgc/precompiled_program.h) that its driver uses instead of compiling the
/// bytecode at CreateStateObject. False with a message if it cannot.
using PrecompileFn = std::function<bool(ByteView bytecode, std::vector<uint8_t> &blob,
                                        std::string &error)>;

/// A target as the compiler sees it.
struct TargetHandle {
  std::string name; // the origin written on its subgraphs
  ExchangeFn exchange;
};

} // namespace cgc

#endif // CGC_COMPILER_TARGETS_TARGET_H
