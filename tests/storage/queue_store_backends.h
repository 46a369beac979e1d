#pragma once
// The queue stores the typed suites run over: SQLite in a temporary file, and PostgreSQL on a real
// server (tests/postgres_server.h, one per test process, a fresh database per test). A PostgreSQL test
// skips, saying why, only when the server binaries are not installed.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "storage/open_queue_store.h"
#include "storage/postgres/postgres_queue_store.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/postgres_server.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {

struct SqliteBackend {
  static constexpr const char* kName = "sqlite";
  static bool available() { return true; }
  static std::string why_unavailable() { return {}; }
  std::string url() const { return (dir.path() / "q.db").string(); }
  std::unique_ptr<QueueStore> open(const StoreOptions& o = {}) const { return std::make_unique<SqliteQueueStore>(url(), o); }
  void set_schema_version(int v) const {
    SQLite::Database db(url(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE schema_version SET version = " + std::to_string(v));
  }
  int known_schema_version() const { return SqliteQueueStore::kSchemaVersion; }
  // The queue as an older rgbaq made it: this build's first `version` migrations only.
  void create_at_version(int version) const { SqliteQueueStore::create_at_version(url(), version); }
  void exec(const std::string& sql) const {
    SQLite::Database db(url(), SQLite::OPEN_READWRITE);
    db.exec(sql);
  }
  TempDir dir;
};

inline PostgresServer& shared_postgres_server() {
  static PostgresServer server;  // started by the first test that needs it, stopped at exit
  return server;
}

struct PostgresBackend {
  static constexpr const char* kName = "postgres";
  static bool available() { return PostgresServer::available(); }
  static std::string why_unavailable() { return PostgresServer::why_unavailable(); }
  PostgresBackend() {
    static std::atomic<int> counter{0};
    database = "t" + std::to_string(getpid()) + "_" + std::to_string(counter++);
    url_ = shared_postgres_server().create_database(database);
  }
  std::string url() const { return url_; }
  std::unique_ptr<QueueStore> open(const StoreOptions& o = {}) const { return std::make_unique<PostgresQueueStore>(url_, o); }
  void set_schema_version(int v) const { exec("UPDATE rgbaq_schema_version SET version = " + std::to_string(v)); }
  int known_schema_version() const { return PostgresQueueStore::kSchemaVersion; }
  void create_at_version(int version) const { PostgresQueueStore::create_at_version(url_, version); }
  void exec(const std::string& sql) const {
    const auto r = shared_postgres_server().psql(database, sql);
    if (r.exit_code != 0) throw std::runtime_error(r.err);
  }
  std::string database, url_;
};

// SQL (for either store) that takes a queue's jobs back to before the marks (schema v6 of both), for
// the tests that migrate a queue forward from an older version.
inline constexpr const char* kDropMarkColumns =
    "DROP INDEX jobs_marked; ALTER TABLE jobs DROP COLUMN mark; ALTER TABLE jobs DROP COLUMN marked_at; "
    "ALTER TABLE jobs DROP COLUMN marked_by; ";

// SQL (for either store) that takes a queue's jobs back to before the deaths in a row (schema v8 of
// both); the tests that migrate from an older version run it first.
inline constexpr const char* kDropDeathColumns =
    "ALTER TABLE jobs DROP COLUMN deaths_in_row; ALTER TABLE jobs DROP COLUMN death_steps; "
    "ALTER TABLE jobs DROP COLUMN done_at_death; ";

// SQL (for either store) that takes a queue back to before templates, the alpha check, re-seeding and
// run ends (schema v9 of both); the tests that migrate from an older version run it first.
inline constexpr const char* kDropV9Schema =
    "DROP INDEX jobs_row; DROP INDEX IF EXISTS runs_open; DROP TABLE run_ends; ALTER TABLE runs DROP COLUMN ended; "
    "ALTER TABLE jobs DROP COLUMN template_text; ALTER TABLE jobs DROP COLUMN choices_json; "
    "ALTER TABLE jobs DROP COLUMN row_key; ALTER TABLE jobs DROP COLUMN reseed_on; ALTER TABLE jobs DROP COLUMN reseed_max; "
    "ALTER TABLE jobs DROP COLUMN replaces; ALTER TABLE jobs DROP COLUMN replaced_by; ALTER TABLE jobs DROP COLUMN qa_json; "
    "ALTER TABLE jobs DROP COLUMN qa_flags; ALTER TABLE workers DROP COLUMN runs_hooks; "
    "ALTER TABLE workers DROP COLUMN sends_webhooks; ";

// The typed fixture: backend() opens stores on one queue (several stores = several connections).
template <class Backend>
class QueueStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Backend::available()) GTEST_SKIP() << Backend::why_unavailable();
    backend_ = std::make_unique<Backend>();
  }
  std::unique_ptr<QueueStore> open(const StoreOptions& o = {}) { return backend_->open(o); }
  Backend& backend() { return *backend_; }

 private:
  std::unique_ptr<Backend> backend_;
};

using QueueStoreBackends = ::testing::Types<SqliteBackend, PostgresBackend>;

struct BackendNames {
  template <class T>
  static std::string GetName(int) {
    return T::kName;
  }
};

}  // namespace rgbaq::storage
