// SPDX-License-Identifier: BSL-1.0
#pragma once
// The bits of SQLite handling the examples share: an owning handle and a statement
// runner that throws with SQLite's message.

#include <sqlite3.h>

#include <memory>
#include <stdexcept>
#include <string>

namespace examples {

struct db_closer {
  void operator()(sqlite3* db) const { sqlite3_close(db); }
};
using database = std::unique_ptr<sqlite3, db_closer>;

/// Runs one or more SQL statements; throws std::runtime_error("sqlite: ...") on failure.
inline void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error("sqlite: " + msg);
  }
}

}  // namespace examples
