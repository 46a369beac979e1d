#pragma once
// The queue stores the typed suites run over: SQLite in a temporary file.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>

#include "storage/open_queue_store.h"
#include "storage/sqlite/sqlite_queue_store.h"
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
  TempDir dir;
};

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

using QueueStoreBackends = ::testing::Types<SqliteBackend>;

struct BackendNames {
  template <class T>
  static std::string GetName(int) {
    return T::kName;
  }
};

}  // namespace rgbaq::storage
