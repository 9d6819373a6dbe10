//===- cgc/databases.h - State object and precompiled databases -*- C++ -*-===//
//
// The two SQLite databases of the spec's "Program Precompilation" (Advanced
// Shader Delivery's, extended for MLIR programs; docs/precompilation.md):
//
// - a state object database (SODB): the published schema (DirectX-Specs
//   d3d/StateObjectDatabase.md: application_id 0xD3D50DB, user_version 2,
//   its tables as published) plus three tables for MLIR programs
//   (mlir_programs, so_to_mlir_program_associations, cgc_extensions).
//   An MLIR program's bytecode (its DX container, as CreateStateObject
//   gets it) is a shader_bytecode row of Type 'MLIR'. Every state object is
//   a groups row: its key and version.
// - a precompiled database (PSDB): what a compiler plugin made of an SODB
//   for one target (adapter family, ABI version, compiler version,
//   application profile version): typed values (OBJECT_CODE, METADATA,
//   DEBUG_PDB, PERFORMANCE_DATA) under value keys the plugin chooses, and
//   per state object a group (its SODB key and version) listing its value
//   keys. The spec gives no PSDB schema; cgc's is application_id
//   0x43474350 ('CGCP'), user_version 1.
//
// Both are untrusted input when read: every column is type-checked, a
// database of another application id or schema version is refused with a
// message naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_DATABASES_H
#define CGC_DATABASES_H

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace cgc::db {

/// Every failure: the message names the file and what is wrong.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

using Bytes = std::vector<uint8_t>;

/// D3D12_APPLICATION_DESC (the SODB's and PSDB's app_id row). Versions are
/// D3D12_VERSION_NUMBERs (four 16-bit parts, the most significant first).
struct ApplicationDesc {
  std::string exeFilename;
  std::string name;
  uint64_t version = 0;
  std::optional<std::string> engineName;
  uint64_t engineVersion = 0;
  bool operator==(const ApplicationDesc &o) const {
    return exeFilename == o.exeFilename && name == o.name && version == o.version &&
           engineName == o.engineName && engineVersion == o.engineVersion;
  }
};

/// One MLIR program subobject: its name and bytecode (the DX container).
struct MlirProgram {
  std::string name;
  Bytes bytecode;
};

/// One state object description of MLIR programs (D3D12_STATE_OBJECT_DESC
/// with MLIR program subobjects and an optional state object config).
struct StateObject {
  Bytes key;
  uint32_t version = 1;
  uint32_t type = 4;  // D3D12_STATE_OBJECT_TYPE_EXECUTABLE
  uint32_t flags = 0; // D3D12_STATE_OBJECT_CONFIG flags
  std::vector<MlirProgram> programs;
};

/// A key for display: printable ASCII as text, anything else as hex.
std::string keyText(const Bytes &key);

class StateObjectDatabase {
public:
  static constexpr int64_t kApplicationId = 0xD3D50DB;
  static constexpr int64_t kUserVersion = 2;
  /// The version of cgc's MLIR-program tables (cgc_extensions row
  /// 'mlir_programs').
  static constexpr int64_t kMlirExtensionVersion = 1;

  /// Opens an SODB; `create` creates the file (and the schema) if it does
  /// not exist. Throws Error for a file that is not an SODB (application
  /// id, schema version) or lacks cgc's MLIR tables.
  static std::unique_ptr<StateObjectDatabase> open(const std::string &path, bool writable,
                                                   bool create = false);
  ~StateObjectDatabase();

  void setApplicationDesc(const ApplicationDesc &desc);
  std::optional<ApplicationDesc> applicationDesc();

  /// Stores a state object under its key. A key already present with the
  /// same content keeps its version; with other content it is replaced and
  /// its version becomes max(stored + 1, object.version) (only one version
  /// of an object is stored). Returns the version stored.
  uint32_t storeStateObject(const StateObject &object);
  std::optional<StateObject> findStateObject(const Bytes &key);
  std::optional<uint32_t> findObjectVersion(const Bytes &key);
  /// Keys of every state object, in key order.
  std::vector<Bytes> stateObjectKeys();
  const std::string &path() const;

private:
  struct Impl;
  explicit StateObjectDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// D3D12DDI_COMPILER_CACHE_VALUE_TYPE.
enum class ValueType : uint32_t { ObjectCode = 0, Metadata = 1, DebugPdb = 2, PerformanceData = 3 };
constexpr uint32_t kValueTypeCount = 4;
const char *valueTypeName(ValueType type);

/// What a PSDB was compiled for (D3D_SHADER_CACHE_COMPILER_PROPERTIES with
/// one ABI version, plus the plugin's description).
struct CompilerTarget {
  std::string adapterFamily;
  uint64_t abiVersion = 0;
  uint64_t compilerVersion = 0;           // D3D12_VERSION_NUMBER
  uint64_t applicationProfileVersion = 0; // D3D12_VERSION_NUMBER
  /// D3D12DDI_COMPILER_VALUE_TYPE_FLAGS the database holds.
  uint32_t valueTypes = 0;
  std::string plugin;
};

class PrecompiledDatabase {
public:
  static constexpr int64_t kApplicationId = 0x43474350; // 'CGCP'
  static constexpr int64_t kUserVersion = 1;

  /// Creates a PSDB (the file must not exist or be empty).
  static std::unique_ptr<PrecompiledDatabase> create(const std::string &path,
                                                     const CompilerTarget &target,
                                                     const std::optional<ApplicationDesc> &app);
  /// Opens an existing PSDB. Throws Error for a file that is not a PSDB.
  static std::unique_ptr<PrecompiledDatabase> open(const std::string &path, bool writable);
  ~PrecompiledDatabase();

  const CompilerTarget &target() const;
  std::optional<ApplicationDesc> applicationDesc();

  /// The spec's StoreValue: false (nothing stored) if one of the types is
  /// already stored under `key` (DXGI_ERROR_ALREADY_EXISTS).
  bool storeValue(const Bytes &key, ValueType type, const Bytes &value);
  std::optional<Bytes> findValue(const Bytes &key, ValueType type);

  /// Large values (prepared constants) live beside the database, in
  /// "<path>.values", each at a page boundary, with a cache_external_values
  /// row (offset, size, fastChecksum). false if already stored.
  bool storeExternalValue(const Bytes &key, uint32_t type, const Bytes &value);
  struct ExternalValue {
    uint64_t offset = 0, size = 0, checksum = 0;
  };
  std::optional<ExternalValue> findExternalValue(const Bytes &key, uint32_t type);
  /// The end offset of the last external value (0: none, and no ".values"
  /// file is needed).
  uint64_t externalValuesEnd();
  std::string externalValuesPath() const { return path() + ".values"; }
  /// A group: the SODB key and version of one state object and the value
  /// keys its compilation produced, in order. Replaces a group of that key.
  void storeGroup(const Bytes &key, uint32_t version, const std::vector<Bytes> &valueKeys);
  struct Group {
    Bytes key;
    uint32_t version = 0;
    std::vector<Bytes> valueKeys;
  };
  std::optional<Group> findGroup(const Bytes &key);
  std::vector<Group> groups();
  /// Runs `body` in one transaction (committed if it returns normally).
  template <typename F> void transaction(F &&body) {
    begin();
    try {
      body();
    } catch (...) {
      rollback();
      throw;
    }
    commit();
  }
  const std::string &path() const;

private:
  void begin();
  void commit();
  void rollback();
  struct Impl;
  explicit PrecompiledDatabase(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace cgc::db

#endif // CGC_DATABASES_H
