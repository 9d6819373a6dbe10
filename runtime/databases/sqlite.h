//===- sqlite.h - A small RAII layer over SQLite --------------*- C++ -*-===//
//
// What the SODB/PSDB code needs of SQLite and nothing more: a connection
// that closes itself, prepared statements that finalize themselves, BLOB,
// TEXT and INTEGER binds and columns, and every failure as a
// cgc::db::Error carrying the file, the statement and SQLite's message.
// Databases are untrusted input: a reader never assumes a column's type
// or presence (SQLite's typing is per value), it checks.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_RUNTIME_DATABASES_SQLITE_H
#define CGC_RUNTIME_DATABASES_SQLITE_H

#include "cgc/databases.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace cgc::db {

class Statement;

/// One connection. Foreign keys are enforced on every connection.
class Connection {
public:
  enum class Mode { ReadOnly, ReadWrite, Create };
  Connection(const std::string &path, Mode mode);
  ~Connection();
  Connection(const Connection &) = delete;
  Connection &operator=(const Connection &) = delete;

  const std::string &path() const { return path_; }
  /// Runs statements without results (schema, pragmas, transactions).
  void exec(const std::string &sql);
  Statement prepare(const std::string &sql);
  /// PRAGMA application_id / user_version.
  int64_t pragmaInteger(const char *name);
  /// Throws unless the database has this application id and schema version;
  /// `what` names the kind of database ("a state object database").
  void checkIdentity(int64_t applicationId, int64_t userVersion, const char *what);
  /// True for a database with no schema at all (a new file).
  bool isEmpty();
  /// Throws an Error "<path>: <what>: <sqlite message>".
  [[noreturn]] void fail(const std::string &what) const;

  sqlite3 *handle() const { return db_; }

private:
  std::string path_;
  sqlite3 *db_ = nullptr;
};

/// A prepared statement; binds are 1-based, columns 0-based, as in SQLite.
class Statement {
public:
  Statement(Connection &connection, const std::string &sql);
  ~Statement();
  Statement(Statement &&other) noexcept;
  Statement(const Statement &) = delete;
  Statement &operator=(const Statement &) = delete;

  Statement &bind(int index, const std::vector<uint8_t> &blob);
  Statement &bind(int index, const void *data, size_t size);
  Statement &bind(int index, std::string_view text);
  Statement &bind(int index, int64_t value);
  Statement &bindNull(int index);
  /// True while a row is available.
  bool step();
  /// Steps a statement that returns no rows.
  void run();
  void reset();

  bool isNull(int column) const;
  /// A BLOB column (an error naming `what` if the value is not a BLOB;
  /// an empty BLOB reads as empty).
  std::vector<uint8_t> blob(int column, const char *what) const;
  std::string text(int column, const char *what) const;
  int64_t integer(int column, const char *what) const;
  std::optional<std::string> optionalText(int column, const char *what) const;

private:
  [[noreturn]] void wrongType(int column, const char *what, const char *expected) const;
  Connection *connection_;
  sqlite3_stmt *stmt_ = nullptr;
  std::string sql_;
};

/// BEGIN IMMEDIATE ... COMMIT, rolled back if not committed.
class Transaction {
public:
  explicit Transaction(Connection &connection);
  ~Transaction();
  void commit();

private:
  Connection &connection_;
  bool done_ = false;
};

/// The app_id table (the same in an SODB and a PSDB): one row, id 0.
void writeApplicationRow(Connection &c, const ApplicationDesc &desc);
std::optional<ApplicationDesc> readApplicationRow(Connection &c);

} // namespace cgc::db

#endif // CGC_RUNTIME_DATABASES_SQLITE_H
