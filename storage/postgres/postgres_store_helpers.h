#pragma once
// Pieces the PostgreSQL queue store's files share (postgres_queue_store.cpp, postgres_run_ends.cpp,
// postgres_reseed.cpp); not part of the store's interface.
#include <cstdio>
#include <optional>
#include <random>
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

// A write's token, recorded with it, by which a run after a dropped connection learns whether the
// first one committed. Random: writers on many hosts need no coordination.
inline int64_t new_token() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return static_cast<int64_t>(random() >> 1) | 1;  // positive, never 0 (a job not claimed by token)
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

// Schema versions, each taking a database from its index to the next (postgres_schema.cpp).
const std::vector<const char*>& migrations();

}  // namespace rgbaq::storage::postgres_store
