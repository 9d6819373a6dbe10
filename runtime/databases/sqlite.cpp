//===- sqlite.cpp - A small RAII layer over SQLite ------------------------===//

#include "sqlite.h"

#include <sqlite3.h>

#include <cstdio>

namespace cgc::db {

Connection::Connection(const std::string &path, Mode mode) : path_(path) {
  int flags = mode == Mode::ReadOnly    ? SQLITE_OPEN_READONLY
              : mode == Mode::ReadWrite ? SQLITE_OPEN_READWRITE
                                        : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  // One connection per thread that uses it; SQLite serializes within it.
  flags |= SQLITE_OPEN_FULLMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw Error(path + ": cannot open the database: " + message);
  }
  sqlite3_extended_result_codes(db_, 1);
  // A database is untrusted input: a crafted schema must not run code
  // (triggers, views) with more rights than the reader meant to give.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA foreign_keys = ON");
}

Connection::~Connection() { sqlite3_close_v2(db_); }

void Connection::fail(const std::string &what) const {
  throw Error(path_ + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "no connection"));
}

void Connection::exec(const std::string &sql) {
  char *message = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    throw Error(path_ + ": " + text + " (in: " + sql.substr(0, 120) + ")");
  }
}

Statement Connection::prepare(const std::string &sql) { return Statement(*this, sql); }

int64_t Connection::pragmaInteger(const char *name) {
  Statement s(*this, std::string("PRAGMA ") + name);
  if (!s.step())
    throw Error(path_ + ": PRAGMA " + name + " returned nothing");
  return s.integer(0, name);
}

void Connection::checkIdentity(int64_t applicationId, int64_t userVersion, const char *what) {
  int64_t id = pragmaInteger("application_id");
  if (id != applicationId) {
    char text[64];
    std::snprintf(text, sizeof text, "0x%X, not 0x%X", unsigned(uint32_t(id)),
                  unsigned(uint32_t(applicationId)));
    throw Error(path_ + ": not " + what + " (its application_id is " + text + ")");
  }
  int64_t version = pragmaInteger("user_version");
  if (version != userVersion)
    throw Error(path_ + ": " + what + " of schema version " + std::to_string(version) +
                "; this build reads version " + std::to_string(userVersion));
}

bool Connection::isEmpty() {
  Statement s(*this, "SELECT count(*) FROM sqlite_schema");
  s.step();
  return s.integer(0, "the schema's size") == 0;
}

void writeApplicationRow(Connection &c, const ApplicationDesc &desc) {
  Statement s = c.prepare("INSERT OR REPLACE INTO app_id (id, exe, app_name, engine_name, "
                          "app_version, engine_version) VALUES (0, ?, ?, ?, ?, ?)");
  s.bind(1, desc.exeFilename).bind(2, desc.name);
  if (desc.engineName)
    s.bind(3, *desc.engineName);
  else
    s.bindNull(3);
  s.bind(4, int64_t(desc.version)).bind(5, int64_t(desc.engineVersion)).run();
}

std::optional<ApplicationDesc> readApplicationRow(Connection &c) {
  Statement s = c.prepare("SELECT exe, app_name, engine_name, app_version, engine_version "
                          "FROM app_id ORDER BY id LIMIT 2");
  if (!s.step())
    return std::nullopt;
  ApplicationDesc desc;
  desc.exeFilename = s.text(0, "app_id.exe");
  desc.name = s.text(1, "app_id.app_name");
  desc.engineName = s.optionalText(2, "app_id.engine_name");
  desc.version = uint64_t(s.integer(3, "app_id.app_version"));
  desc.engineVersion = uint64_t(s.integer(4, "app_id.engine_version"));
  if (s.step())
    throw Error(c.path() + ": app_id has more than one row");
  return desc;
}

Statement::Statement(Connection &connection, const std::string &sql)
    : connection_(&connection), sql_(sql) {
  if (sqlite3_prepare_v2(connection.handle(), sql.c_str(), int(sql.size()), &stmt_, nullptr) !=
      SQLITE_OK)
    connection.fail("cannot prepare '" + sql.substr(0, 120) + "'");
}

Statement::Statement(Statement &&other) noexcept
    : connection_(other.connection_), stmt_(other.stmt_), sql_(std::move(other.sql_)) {
  other.stmt_ = nullptr;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement &Statement::bind(int index, const std::vector<uint8_t> &blob) {
  return bind(index, blob.data(), blob.size());
}

Statement &Statement::bind(int index, const void *data, size_t size) {
  // An empty BLOB is a zero-length BLOB, not NULL.
  static const uint8_t empty = 0;
  if (sqlite3_bind_blob64(stmt_, index, size ? data : &empty, size, SQLITE_TRANSIENT) !=
      SQLITE_OK)
    connection_->fail("cannot bind a BLOB");
  return *this;
}

Statement &Statement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_TRANSIENT,
                          SQLITE_UTF8) != SQLITE_OK)
    connection_->fail("cannot bind a TEXT");
  return *this;
}

Statement &Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK)
    connection_->fail("cannot bind an INTEGER");
  return *this;
}

Statement &Statement::bindNull(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK)
    connection_->fail("cannot bind NULL");
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  connection_->fail("'" + sql_.substr(0, 120) + "' failed");
}

void Statement::run() {
  while (step()) {
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::isNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

void Statement::wrongType(int column, const char *what, const char *expected) const {
  static const char *names[] = {"?", "INTEGER", "REAL", "TEXT", "BLOB", "NULL"};
  int type = sqlite3_column_type(stmt_, column);
  throw Error(connection_->path() + ": " + what + " is " + names[type >= 1 && type <= 5 ? type : 0] +
              ", not " + expected + " (the database is malformed)");
}

std::vector<uint8_t> Statement::blob(int column, const char *what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_BLOB)
    wrongType(column, what, "a BLOB");
  const auto *data = static_cast<const uint8_t *>(sqlite3_column_blob(stmt_, column));
  int size = sqlite3_column_bytes(stmt_, column);
  return std::vector<uint8_t>(data, data + (data ? size : 0));
}

std::string Statement::text(int column, const char *what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_TEXT)
    wrongType(column, what, "TEXT");
  const auto *data = reinterpret_cast<const char *>(sqlite3_column_text(stmt_, column));
  return std::string(data ? data : "", size_t(sqlite3_column_bytes(stmt_, column)));
}

std::optional<std::string> Statement::optionalText(int column, const char *what) const {
  if (isNull(column))
    return std::nullopt;
  return text(column, what);
}

int64_t Statement::integer(int column, const char *what) const {
  if (sqlite3_column_type(stmt_, column) != SQLITE_INTEGER)
    wrongType(column, what, "an INTEGER");
  return sqlite3_column_int64(stmt_, column);
}

Transaction::Transaction(Connection &connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_)
    sqlite3_exec(connection_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  connection_.exec("COMMIT");
  done_ = true;
}

} // namespace cgc::db
