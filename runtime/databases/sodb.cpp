//===- sodb.cpp - State object databases ----------------------------------===//

#include "sodb_schema.h"
#include "sqlite.h"

#include "cgc/container.h"

#include <algorithm>

namespace cgc::db {

std::string keyText(const Bytes &key) {
  bool printable = !key.empty() && std::all_of(key.begin(), key.end(), [](uint8_t c) {
    return c >= 0x20 && c < 0x7f;
  });
  if (printable)
    return std::string(key.begin(), key.end());
  static const char digits[] = "0123456789abcdef";
  std::string hex = "0x";
  for (uint8_t c : key) {
    hex += digits[c >> 4];
    hex += digits[c & 15];
  }
  return hex;
}

static Bytes md5Of(const void *data, size_t size) {
  Bytes digest(16);
  md5(data, size, digest.data());
  return digest;
}

/// The key of an MLIR program row: MD5 of its name, a NUL and its bytecode.
static Bytes programKey(const MlirProgram &program) {
  Bytes text(program.name.begin(), program.name.end());
  text.push_back(0);
  text.insert(text.end(), program.bytecode.begin(), program.bytecode.end());
  return md5Of(text.data(), text.size());
}

struct StateObjectDatabase::Impl {
  explicit Impl(const std::string &path, Connection::Mode mode) : c(path, mode) {}
  Connection c;
};

StateObjectDatabase::StateObjectDatabase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StateObjectDatabase::~StateObjectDatabase() = default;
const std::string &StateObjectDatabase::path() const { return impl_->c.path(); }

std::unique_ptr<StateObjectDatabase> StateObjectDatabase::open(const std::string &path,
                                                               bool writable, bool create) {
  auto impl = std::make_unique<Impl>(path, create     ? Connection::Mode::Create
                                           : writable ? Connection::Mode::ReadWrite
                                                      : Connection::Mode::ReadOnly);
  Connection &c = impl->c;
  if (create && c.isEmpty()) {
    Transaction t(c);
    c.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
    c.exec("PRAGMA user_version = " + std::to_string(kUserVersion));
    c.exec(kSodbPublishedSchema);
    c.exec(kSodbMlirSchema);
    c.prepare("INSERT INTO cgc_extensions (Name, Version) VALUES ('mlir_programs', ?)")
        .bind(1, int64_t(kMlirExtensionVersion))
        .run();
    t.commit();
  }
  c.checkIdentity(kApplicationId, kUserVersion, "a state object database");
  Statement s = c.prepare("SELECT Version FROM cgc_extensions WHERE Name = 'mlir_programs'");
  // A published SODB without cgc's tables has no MLIR programs to offer.
  if (!s.step())
    throw Error(path + ": the state object database has no MLIR program tables "
                       "(cgc_extensions has no 'mlir_programs' row)");
  int64_t version = s.integer(0, "cgc_extensions.Version");
  if (version != kMlirExtensionVersion)
    throw Error(path + ": its MLIR program tables are version " + std::to_string(version) +
                "; this build reads version " + std::to_string(kMlirExtensionVersion));
  return std::unique_ptr<StateObjectDatabase>(new StateObjectDatabase(std::move(impl)));
}

void StateObjectDatabase::setApplicationDesc(const ApplicationDesc &desc) {
  writeApplicationRow(impl_->c, desc);
}

std::optional<ApplicationDesc> StateObjectDatabase::applicationDesc() {
  return readApplicationRow(impl_->c);
}

std::optional<uint32_t> StateObjectDatabase::findObjectVersion(const Bytes &key) {
  Statement s = impl_->c.prepare("SELECT Version FROM groups WHERE Key = ?");
  s.bind(1, key);
  if (!s.step())
    return std::nullopt;
  int64_t version = s.integer(0, "groups.Version");
  if (version < 0 || version > UINT32_MAX)
    throw Error(path() + ": state object " + keyText(key) + " has version " +
                std::to_string(version) + ", outside 0..2^32-1");
  return uint32_t(version);
}

std::optional<StateObject> StateObjectDatabase::findStateObject(const Bytes &key) {
  Connection &c = impl_->c;
  Statement s = c.prepare("SELECT Type, Flags FROM state_objects WHERE Key = ?");
  s.bind(1, key);
  if (!s.step())
    return std::nullopt;
  StateObject object;
  object.key = key;
  object.type = uint32_t(s.integer(0, "state_objects.Type"));
  object.flags = s.isNull(1) ? 0 : uint32_t(s.integer(1, "state_objects.Flags"));
  auto version = findObjectVersion(key);
  if (!version)
    throw Error(c.path() + ": state object " + keyText(key) + " has no groups row (no version)");
  object.version = *version;
  Statement p = c.prepare(
      "SELECT m.ProgramName, b.Type, b.Bytecode FROM so_to_mlir_program_associations a "
      "JOIN mlir_programs m ON m.Key = a.MlirProgramKey "
      "JOIN shader_bytecode b ON b.Key = m.Bytecode "
      "WHERE a.StateObjectKey = ? ORDER BY a.Position");
  p.bind(1, key);
  while (p.step()) {
    MlirProgram program;
    program.name = p.text(0, "mlir_programs.ProgramName");
    if (p.text(1, "shader_bytecode.Type") != "MLIR")
      throw Error(c.path() + ": MLIR program '" + program.name + "' of state object " +
                  keyText(key) + " refers to bytecode that is not of Type 'MLIR'");
    program.bytecode = p.blob(2, "shader_bytecode.Bytecode");
    object.programs.push_back(std::move(program));
  }
  return object;
}

std::vector<Bytes> StateObjectDatabase::stateObjectKeys() {
  std::vector<Bytes> keys;
  Statement s = impl_->c.prepare("SELECT Key FROM state_objects ORDER BY Key");
  while (s.step())
    keys.push_back(s.blob(0, "state_objects.Key"));
  return keys;
}

static bool sameContent(const StateObject &a, const StateObject &b) {
  if (a.type != b.type || a.flags != b.flags || a.programs.size() != b.programs.size())
    return false;
  for (size_t i = 0; i < a.programs.size(); ++i)
    if (a.programs[i].name != b.programs[i].name ||
        a.programs[i].bytecode != b.programs[i].bytecode)
      return false;
  return true;
}

uint32_t StateObjectDatabase::storeStateObject(const StateObject &object) {
  if (object.key.empty())
    throw Error(path() + ": a state object key must not be empty");
  Connection &c = impl_->c;
  Transaction t(c);
  uint32_t version = object.version;
  if (auto existing = findStateObject(object.key)) {
    if (sameContent(*existing, object))
      return existing->version;
    version = std::max(existing->version + 1, object.version);
    c.prepare("DELETE FROM groups WHERE Key = ?").bind(1, object.key).run();
    c.prepare("DELETE FROM so_to_mlir_program_associations WHERE StateObjectKey = ?")
        .bind(1, object.key)
        .run();
    c.prepare("DELETE FROM state_objects WHERE Key = ?").bind(1, object.key).run();
  }
  c.prepare("INSERT INTO state_objects (Key, Type, NodeMask, Flags, AddToStateObjectParent) "
            "VALUES (?, ?, 0, ?, NULL)")
      .bind(1, object.key)
      .bind(2, int64_t(object.type))
      .bind(3, int64_t(object.flags))
      .run();
  int64_t position = 0;
  for (const MlirProgram &program : object.programs) {
    Bytes bytecodeKey = md5Of(program.bytecode.data(), program.bytecode.size());
    Bytes key = programKey(program);
    c.prepare("INSERT OR IGNORE INTO shader_bytecode (Key, Type, Bytecode) VALUES (?, 'MLIR', ?)")
        .bind(1, bytecodeKey)
        .bind(2, program.bytecode)
        .run();
    c.prepare("INSERT OR IGNORE INTO mlir_programs (Key, ProgramName, Bytecode) VALUES (?, ?, ?)")
        .bind(1, key)
        .bind(2, program.name)
        .bind(3, bytecodeKey)
        .run();
    c.prepare("INSERT INTO so_to_mlir_program_associations (StateObjectKey, MlirProgramKey, "
              "Position) VALUES (?, ?, ?)")
        .bind(1, object.key)
        .bind(2, key)
        .bind(3, position++)
        .run();
  }
  c.prepare("INSERT INTO groups (Key, Version, PSOKey, SOKey) VALUES (?, ?, NULL, ?)")
      .bind(1, object.key)
      .bind(2, int64_t(version))
      .bind(3, object.key)
      .run();
  // Programs and bytecode no state object refers to any more.
  c.exec("DELETE FROM mlir_programs WHERE Key NOT IN "
         "(SELECT MlirProgramKey FROM so_to_mlir_program_associations)");
  c.exec("DELETE FROM shader_bytecode WHERE Type = 'MLIR' AND Key NOT IN "
         "(SELECT Bytecode FROM mlir_programs)");
  t.commit();
  return version;
}

} // namespace cgc::db
