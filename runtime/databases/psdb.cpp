//===- psdb.cpp - Precompiled databases -----------------------------------===//
//
// cgc's PSDB schema (the spec gives none; docs/precompilation.md):
//
//   PRAGMA application_id = 0x43474350 ('CGCP'); PRAGMA user_version = 1;
//   compiler_target  one row: the adapter family, ABI version, compiler
//                    version and application profile version the values
//                    were compiled for, the value types held, the plugin
//   app_id           the SODB's app_id table (the application compiled for)
//   cache_values     (Key, Type, Value): the plugin's typed values
//   cache_groups     (Key, Version): one per compiled state object, its SODB
//                    key and version
//   cache_group_values (GroupKey, Position, ValueKey): a group's value keys,
//                    in the order SetObjectValueKeys gave them
//   cache_external_values (Key, Type, Offset, Size, Checksum): large values
//                    (prepared constants) in "<database>.values" beside it,
//                    each at a page boundary, with their fastChecksum
//
//===----------------------------------------------------------------------===//

#include "sqlite.h"

#include "cgc/container.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cgc::db {

static constexpr const char *kPsdbSchema = R"sql(
CREATE TABLE compiler_target (id INTEGER NOT NULL PRIMARY KEY CHECK (id = 0),
  AdapterFamily TEXT NOT NULL, ABIVersion INTEGER NOT NULL, CompilerVersion INTEGER NOT NULL,
  ApplicationProfileVersion INTEGER NOT NULL, ValueTypes INTEGER NOT NULL, Plugin TEXT NOT NULL);
CREATE TABLE app_id (id INTEGER NOT NULL PRIMARY KEY, exe TEXT NOT NULL,
  app_name TEXT NOT NULL, engine_name TEXT, app_version INTEGER NOT NULL,
  engine_version INTEGER NOT NULL);
CREATE TABLE cache_values (Key BLOB NOT NULL, Type INTEGER NOT NULL, Value BLOB NOT NULL,
  PRIMARY KEY (Key, Type));
CREATE TABLE cache_groups (Key BLOB NOT NULL PRIMARY KEY, Version INTEGER NOT NULL);
CREATE TABLE cache_external_values (Key BLOB NOT NULL, Type INTEGER NOT NULL,
  Offset INTEGER NOT NULL, Size INTEGER NOT NULL, Checksum INTEGER NOT NULL,
  PRIMARY KEY (Key, Type));
CREATE TABLE cache_group_values (GroupKey BLOB NOT NULL, Position INTEGER NOT NULL,
  ValueKey BLOB NOT NULL, PRIMARY KEY (GroupKey, Position),
  FOREIGN KEY(GroupKey) REFERENCES cache_groups(Key) ON DELETE CASCADE);
)sql";

const char *valueTypeName(ValueType type) {
  switch (type) {
  case ValueType::ObjectCode:
    return "OBJECT_CODE";
  case ValueType::Metadata:
    return "METADATA";
  case ValueType::DebugPdb:
    return "DEBUG_PDB";
  case ValueType::PerformanceData:
    return "PERFORMANCE_DATA";
  }
  return "?";
}

struct PrecompiledDatabase::Impl {
  Impl(const std::string &path, Connection::Mode mode) : c(path, mode) {}
  Connection c;
  CompilerTarget target;
};

PrecompiledDatabase::PrecompiledDatabase(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PrecompiledDatabase::~PrecompiledDatabase() = default;
const std::string &PrecompiledDatabase::path() const { return impl_->c.path(); }
const CompilerTarget &PrecompiledDatabase::target() const { return impl_->target; }

static CompilerTarget readTarget(Connection &c) {
  Statement s = c.prepare("SELECT AdapterFamily, ABIVersion, CompilerVersion, "
                          "ApplicationProfileVersion, ValueTypes, Plugin FROM compiler_target");
  if (!s.step())
    throw Error(c.path() + ": the precompiled database has no compiler_target row");
  CompilerTarget t;
  t.adapterFamily = s.text(0, "compiler_target.AdapterFamily");
  t.abiVersion = uint64_t(s.integer(1, "compiler_target.ABIVersion"));
  t.compilerVersion = uint64_t(s.integer(2, "compiler_target.CompilerVersion"));
  t.applicationProfileVersion = uint64_t(s.integer(3, "compiler_target.ApplicationProfileVersion"));
  t.valueTypes = uint32_t(s.integer(4, "compiler_target.ValueTypes"));
  t.plugin = s.text(5, "compiler_target.Plugin");
  if (t.abiVersion == 0 || t.abiVersion == UINT64_MAX)
    throw Error(c.path() + ": ABI version " + std::to_string(t.abiVersion) +
                " is reserved (valid versions are 1 .. 2^64-2)");
  return t;
}

std::unique_ptr<PrecompiledDatabase>
PrecompiledDatabase::create(const std::string &path, const CompilerTarget &target,
                            const std::optional<ApplicationDesc> &app) {
  auto impl = std::make_unique<Impl>(path, Connection::Mode::Create);
  Connection &c = impl->c;
  if (!c.isEmpty())
    throw Error(path + ": the file already holds a database; a precompiled database is "
                       "written to a new file");
  Transaction t(c);
  c.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  c.exec("PRAGMA user_version = " + std::to_string(kUserVersion));
  c.exec(kPsdbSchema);
  c.prepare("INSERT INTO compiler_target VALUES (0, ?, ?, ?, ?, ?, ?)")
      .bind(1, target.adapterFamily)
      .bind(2, int64_t(target.abiVersion))
      .bind(3, int64_t(target.compilerVersion))
      .bind(4, int64_t(target.applicationProfileVersion))
      .bind(5, int64_t(target.valueTypes))
      .bind(6, target.plugin)
      .run();
  if (app)
    writeApplicationRow(c, *app);
  t.commit();
  impl->target = readTarget(c);
  return std::unique_ptr<PrecompiledDatabase>(new PrecompiledDatabase(std::move(impl)));
}

std::unique_ptr<PrecompiledDatabase> PrecompiledDatabase::open(const std::string &path,
                                                               bool writable) {
  auto impl = std::make_unique<Impl>(path, writable ? Connection::Mode::ReadWrite
                                                    : Connection::Mode::ReadOnly);
  impl->c.checkIdentity(kApplicationId, kUserVersion, "a precompiled database (PSDB)");
  impl->target = readTarget(impl->c);
  return std::unique_ptr<PrecompiledDatabase>(new PrecompiledDatabase(std::move(impl)));
}

std::optional<ApplicationDesc> PrecompiledDatabase::applicationDesc() {
  return readApplicationRow(impl_->c);
}

bool PrecompiledDatabase::storeValue(const Bytes &key, ValueType type, const Bytes &value) {
  Connection &c = impl_->c;
  Statement exists = c.prepare("SELECT 1 FROM cache_values WHERE Key = ? AND Type = ?");
  exists.bind(1, key).bind(2, int64_t(type));
  if (exists.step())
    return false;
  c.prepare("INSERT INTO cache_values (Key, Type, Value) VALUES (?, ?, ?)")
      .bind(1, key)
      .bind(2, int64_t(type))
      .bind(3, value)
      .run();
  return true;
}

std::optional<Bytes> PrecompiledDatabase::findValue(const Bytes &key, ValueType type) {
  Statement s = impl_->c.prepare("SELECT Value FROM cache_values WHERE Key = ? AND Type = ?");
  s.bind(1, key).bind(2, int64_t(type));
  if (!s.step())
    return std::nullopt;
  return s.blob(0, "cache_values.Value");
}

bool PrecompiledDatabase::storeExternalValue(const Bytes &key, uint32_t type, const Bytes &value) {
  if (findExternalValue(key, type))
    return false;
  const std::string file = externalValuesPath();
  uint64_t end = externalValuesEnd();
  uint64_t offset = (end + 4095) / 4096 * 4096;
  FILE *out = std::fopen(file.c_str(), end ? "r+b" : "w+b");
  if (!out)
    throw Error(file + ": cannot open: " + std::strerror(errno));
  bool ok = fseeko(out, off_t(offset), SEEK_SET) == 0 &&
            std::fwrite(value.data(), 1, value.size(), out) == value.size();
  ok = std::fclose(out) == 0 && ok;
  if (!ok)
    throw Error(file + ": cannot write " + std::to_string(value.size()) + " bytes");
  impl_->c.prepare("INSERT INTO cache_external_values (Key, Type, Offset, Size, Checksum) "
                   "VALUES (?, ?, ?, ?, ?)")
      .bind(1, key)
      .bind(2, int64_t(type))
      .bind(3, int64_t(offset))
      .bind(4, int64_t(value.size()))
      .bind(5, int64_t(fastChecksum(value.data(), value.size())))
      .run();
  return true;
}

std::optional<PrecompiledDatabase::ExternalValue>
PrecompiledDatabase::findExternalValue(const Bytes &key, uint32_t type) {
  Statement s = impl_->c.prepare(
      "SELECT Offset, Size, Checksum FROM cache_external_values WHERE Key = ? AND Type = ?");
  s.bind(1, key).bind(2, int64_t(type));
  if (!s.step())
    return std::nullopt;
  ExternalValue v;
  int64_t offset = s.integer(0, "cache_external_values.Offset");
  int64_t size = s.integer(1, "cache_external_values.Size");
  if (offset < 0 || size < 0 || offset % 4096)
    throw Error(path() + ": external value " + keyText(key) + " has offset " +
                std::to_string(offset) + " and size " + std::to_string(size));
  v.offset = uint64_t(offset);
  v.size = uint64_t(size);
  v.checksum = uint64_t(s.integer(2, "cache_external_values.Checksum"));
  return v;
}

uint64_t PrecompiledDatabase::externalValuesEnd() {
  Statement s = impl_->c.prepare("SELECT max(Offset + Size) FROM cache_external_values");
  if (!s.step() || s.isNull(0))
    return 0;
  int64_t end = s.integer(0, "the end of the external values");
  if (end < 0)
    throw Error(path() + ": external values end at " + std::to_string(end));
  return uint64_t(end);
}

void PrecompiledDatabase::storeGroup(const Bytes &key, uint32_t version,
                                     const std::vector<Bytes> &valueKeys) {
  Connection &c = impl_->c;
  c.prepare("DELETE FROM cache_groups WHERE Key = ?").bind(1, key).run();
  c.prepare("INSERT INTO cache_groups (Key, Version) VALUES (?, ?)")
      .bind(1, key)
      .bind(2, int64_t(version))
      .run();
  int64_t position = 0;
  for (const Bytes &valueKey : valueKeys)
    c.prepare("INSERT INTO cache_group_values (GroupKey, Position, ValueKey) VALUES (?, ?, ?)")
        .bind(1, key)
        .bind(2, position++)
        .bind(3, valueKey)
        .run();
}

static PrecompiledDatabase::Group readGroup(Connection &c, Statement &row) {
  PrecompiledDatabase::Group group;
  group.key = row.blob(0, "cache_groups.Key");
  int64_t version = row.integer(1, "cache_groups.Version");
  if (version < 0 || version > UINT32_MAX)
    throw Error(c.path() + ": group " + keyText(group.key) + " has version " +
                std::to_string(version) + ", outside 0..2^32-1");
  group.version = uint32_t(version);
  Statement values = c.prepare(
      "SELECT ValueKey FROM cache_group_values WHERE GroupKey = ? ORDER BY Position");
  values.bind(1, group.key);
  while (values.step())
    group.valueKeys.push_back(values.blob(0, "cache_group_values.ValueKey"));
  return group;
}

std::optional<PrecompiledDatabase::Group> PrecompiledDatabase::findGroup(const Bytes &key) {
  Statement s = impl_->c.prepare("SELECT Key, Version FROM cache_groups WHERE Key = ?");
  s.bind(1, key);
  if (!s.step())
    return std::nullopt;
  return readGroup(impl_->c, s);
}

std::vector<PrecompiledDatabase::Group> PrecompiledDatabase::groups() {
  std::vector<Group> all;
  Statement s = impl_->c.prepare("SELECT Key, Version FROM cache_groups ORDER BY Key");
  while (s.step())
    all.push_back(readGroup(impl_->c, s));
  return all;
}

void PrecompiledDatabase::begin() { impl_->c.exec("BEGIN IMMEDIATE"); }
void PrecompiledDatabase::commit() { impl_->c.exec("COMMIT"); }
void PrecompiledDatabase::rollback() { impl_->c.exec("ROLLBACK"); }

} // namespace cgc::db
