#pragma once
// Pieces the PostgreSQL queue store's files share (postgres_queue_store.cpp, postgres_run_ends.cpp,
// postgres_reseed.cpp, postgres_schema.cpp); not part of the store's interface.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "storage/postgres/pg_connection.h"

namespace rgbaq::storage::postgres_store {

using Params = std::vector<std::optional<std::string>>;

inline std::string num(int64_t v) { return std::to_string(v); }
inline std::string num(uint64_t v) { return std::to_string(static_cast<int64_t>(v)); }  // the bits, as BIGINT holds them
inline std::string num(int v) { return std::to_string(v); }
inline std::string real(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

template <class T>
std::string array_literal(const std::vector<T>& values) {
  std::string a = "{";
  for (const auto v : values) {
    if (a.size() > 1) a += ',';
    a += num(v);
  }
  return a + "}";
}

// BEGIN, op, COMMIT; ROLLBACK if op throws. `op` may run again after a dropped connection.
template <class Op>
auto transaction(pg::Connection& db, Op&& op) {
  return db.retrying([&] {
    try {
      db.exec("BEGIN");
      auto result = op();
      db.exec("COMMIT");
      return result;
    } catch (...) {
      db.rollback_quietly();
      throw;
    }
  });
}

// postgres_schema.cpp: how many schema versions this build knows, and the migration that takes the
// database forward to version `up_to` (at most the last) in one transaction, one migrating process at a
// time. Throws std::runtime_error naming the database when its version is newer than this build knows.
size_t schema_versions();
void migrate(pg::Connection& db, size_t up_to);

// A row of a result as store_shared::read_run_end reads it.
struct Row {
  const pg::Result& r;
  int row;
  int64_t int64(int c) const { return r.int64(row, c); }
  double real(int c) const { return r.real(row, c); }
  std::string text(int c) const { return r.text(row, c); }
};

}  // namespace rgbaq::storage::postgres_store
