//===- plugin_host.h - Hosting a compiler plugin ---------------*- C++ -*-===//
//
// The host side of the compiler plugin DDI (cgc/d3d12ddi_compiler.h): load
// a plugin, negotiate the newest version both sides support, fill its
// tables, and compile SODB state objects into a PSDB through the cache
// session callbacks (FindValue, StoreValue, SetObjectValueKeys). Every
// failure is a PluginError naming the plugin and the step.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_RUNTIME_DATABASES_PLUGIN_HOST_H
#define CGC_RUNTIME_DATABASES_PLUGIN_HOST_H

#include "cgc/databases.h"

#include "cgc/d3d12ddi_compiler.h"

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cgc::soc {

struct PluginError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct AdapterFamily {
  std::string name;
  std::vector<uint64_t> abiVersions; // newest first
  uint64_t compilerVersion = 0;
};

class Plugin {
public:
  /// Loads and negotiates; throws PluginError.
  explicit Plugin(const std::string &path);
  ~Plugin();
  Plugin(const Plugin &) = delete;
  Plugin &operator=(const Plugin &) = delete;

  const std::string &path() const { return path_; }
  uint64_t selectedVersion() const { return selected_; }
  std::vector<AdapterFamily> adapterFamilies();
  /// The family named `nameOrIndex` (a name, or a decimal index); throws.
  UINT familyIndex(const std::string &nameOrIndex);
  uint64_t applicationProfileVersion(UINT family, uint64_t abi,
                                     const std::optional<db::ApplicationDesc> &app);

  struct Result {
    size_t stateObjects = 0, programs = 0, valuesStored = 0, valuesShared = 0;
  };
  /// Compiles the state objects of `sodb` (all, or the one with `key`) for
  /// (family, abi) into `psdb`, storing `valueTypes`
  /// (D3D12DDI_COMPILER_VALUE_TYPE_FLAGS). Throws with the plugin's
  /// messages if a state object cannot be compiled.
  Result compile(db::StateObjectDatabase &sodb, db::PrecompiledDatabase &psdb, UINT family,
                 uint64_t abi, uint32_t valueTypes, const std::optional<db::Bytes> &key);

  /// An MLIR exchange answered by the plugin for (family, abi) through
  /// GetCaps (D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119), with the size-query
  /// protocol: what a device of that family answers to
  /// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE). Throws with the
  /// HRESULT.
  std::vector<uint8_t> exchange(UINT family, uint64_t abi, const GUID &mlirInterface,
                                const void *input, size_t inputSize);
  /// The plugin's GetCaps for (family, abi), as it answers (an HRESULT):
  /// the raw form of exchange() and of the tier and interface queries.
  HRESULT getCaps(UINT family, uint64_t abi, const D3D12DDIARG_GETCAPS &caps);

  /// Whether the plugin prepares constants offline
  /// (D3D12DDI_COMPILER_TABLE_TYPE_CONSTANTS_CGC).
  bool preparesConstants() const { return constants_.pfnPrepareMlirProgramConstantsCgc; }
  struct Constant {
    uint32_t bindPoint;
    const void *data;
    uint64_t bytes;
    std::array<uint8_t, 16> digest;
  };
  /// Prepares one program's constants on `threads` worker threads into
  /// `psdb` (beside it). Returns whether a value was stored (false: nothing
  /// to prepare, or already there).
  bool prepareConstants(db::PrecompiledDatabase &psdb, UINT family, uint64_t abi,
                        const std::string &programName, const std::vector<uint8_t> &container,
                        const std::vector<Constant> &constants, UINT threads);

private:
  std::string path_;
  D3D12DDI_COMPILER_CONSTANTS_FUNCS_CGC constants_ = {};
  void *library_ = nullptr;
  D3D12DDI_HCOMPILERDDI handle_ = {};
  const D3D12DDI_COMPILER_DDI_FUNCS *ddi_ = nullptr;
  D3D12DDI_COMPILER_CAPABILITIES_FUNCS caps_ = {};
  D3D12DDI_COMPILER_FUNCS compiler_ = {};
  uint64_t selected_ = 0;
};

/// "1.0.12.7" for a D3D12_VERSION_NUMBER.
std::string versionText(uint64_t version);

} // namespace cgc::soc

#endif // CGC_RUNTIME_DATABASES_PLUGIN_HOST_H
