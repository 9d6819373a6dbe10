//===- databases.h - Registered SODB/PSDB pairs ---------------*- C++ -*-===//
//
// The precompiled databases an application registered
// (CGCD3D12RegisterPrecompiledDatabases, the environment variable
// CGC_D3D12_PRECOMPILED_DATABASES), and the lookups a driver makes in them
// at CreateStateObject (pfnFindPrecompiledValueCgc): docs/precompilation.md.
//
// A PSDB is offered to a device's driver only if it was compiled for the
// driver's adapter family, an ABI version the driver supports, the
// driver's compiler version and an application profile version with the
// same upper 32 bits (the shader cache registration rule, plus the
// compiler version: cgc's compilers have no stable ABI across builds). Its
// values are used only through groups whose version is the SODB's version
// of that state object: a PSDB compiled from an older SODB entry is stale
// for that entry. Each database a device cannot use is reported once, with
// the reason.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_D3D12_DATABASES_H
#define CGC_D3D12_DATABASES_H

#include "cgc/d3d12ddi_mlir.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>

namespace cgc::d3d12 {

/// What a driver's compiler produces (pfnGetCompilerPropertiesCgc).
struct CompilerProperties {
  bool known = false; // the driver reported them
  std::string adapterFamily;
  uint64_t minAbi = 0, maxAbi = 0, compilerVersion = 0, profileVersion = 0;
};

/// Registers an SODB and its PSDBs for the process; false with a message
/// for a file that cannot be opened or is not such a database.
bool registerDatabases(const std::string &sodb, const std::vector<std::string> &psdbs,
                       std::string &error);
void clearDatabases();
/// Registers what CGC_D3D12_PRECOMPILED_DATABASES names ("SODB=PSDB[,PSDB]
/// [;SODB=...]"), once per process; false with a message naming the
/// variable.
bool registerEnvironmentDatabases(std::string &error);

/// One device's view of the registered databases.
class DeviceDatabases {
public:
  using Report = std::function<void(const std::string &)>;
  void setProperties(CompilerProperties properties) { properties_ = std::move(properties); }
  /// pfnFindPrecompiledValueCgc for this device; `report` gets a warning
  /// for each registered database it cannot use (once per database).
  HRESULT find(const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key,
               D3D12DDI_COMPILER_CACHE_TYPED_VALUE *values, UINT count, const Report &report);
  /// pfnMapPrecompiledValueCgc for this device.
  HRESULT map(const D3D12DDI_COMPILER_CACHE_VALUE_KEY *key, uint32_t type, const void **data,
              SIZE_T *size, const Report &report);
  /// Lookups: the driver's size queries (a first call with ValueSize 0);
  /// hits: the calls that returned a value's bytes.
  uint64_t lookups() const { return lookups_.load(); }
  uint64_t hits() const { return hits_.load(); }
  /// Registered PSDBs, and those this device's driver can use.
  void counts(uint32_t &registered, uint32_t &matching);

private:
  CompilerProperties properties_;
  std::atomic<uint64_t> lookups_{0}, hits_{0};
  std::mutex mutex_;
  std::set<std::string> reported_;
};

} // namespace cgc::d3d12

#endif // CGC_D3D12_DATABASES_H
