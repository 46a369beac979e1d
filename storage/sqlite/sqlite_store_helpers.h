#pragma once
// Pieces the SQLite queue store's files share (sqlite_queue_store.cpp, sqlite_run_ends.cpp,
// sqlite_reseed.cpp, sqlite_schema.cpp); not part of the store's interface.
#include <SQLiteCpp/SQLiteCpp.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/queue_store.h"

namespace rgbaq::storage::sqlite_store {

inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Resets a cached statement when it goes out of scope, so the next use starts clean.
class Use {
 public:
  explicit Use(SQLite::Statement& s) : s_(s) {}
  ~Use() {
    s_.tryReset();
    s_.clearBindings();
  }
  SQLite::Statement* operator->() { return &s_; }
  SQLite::Statement& operator*() { return s_; }

 private:
  SQLite::Statement& s_;
};

// A new queued job (append_jobs, a re-seed): bind_new_job fills in its values.
inline constexpr const char* kInsertJob =
    "INSERT INTO jobs (run_id, prompt, seed, width, height, name, priority, state, created_at, output_path, content_key, "
    "prompt_key, lora, template_text, choices_json, row_key, reseed_on, reseed_max, replaces) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
// `j` must outlive the statement's execution (its text is bound without a copy).
inline void bind_new_job(SQLite::Statement& ins, int64_t run_id, const NewJob& j, int priority, double now,
                         int64_t replaces) {
  ins.bind(1, run_id);
  ins.bindNoCopy(2, j.prompt);
  ins.bind(3, static_cast<int64_t>(j.seed));
  ins.bind(4, j.width);
  ins.bind(5, j.height);
  ins.bindNoCopy(6, j.name);
  ins.bind(7, priority);
  ins.bind(8, now);
  ins.bindNoCopy(9, j.output_path);
  ins.bind(10, static_cast<int64_t>(j.content_key));
  ins.bind(11, static_cast<int64_t>(j.prompt_key));
  ins.bindNoCopy(12, j.lora);
  ins.bindNoCopy(13, j.template_text);
  ins.bindNoCopy(14, j.choices_json);
  ins.bind(15, static_cast<int64_t>(j.row_key));
  ins.bindNoCopy(16, j.reseed_on);
  ins.bind(17, j.reseed_max);
  ins.bind(18, replaces);
}

// sqlite_schema.cpp: how many schema versions this build knows, and the migration that takes the
// database (at `path`, for messages) forward to version `up_to` (at most the last) in one transaction.
// Throws std::runtime_error naming the file when its version is newer than this build knows.
size_t schema_versions();
void migrate(SQLite::Database& db, const std::filesystem::path& path, size_t up_to);

// A SQLite row as store_shared::read_run_end reads it.
struct Row {
  SQLite::Statement& q;
  int64_t int64(int c) const { return q.getColumn(c).getInt64(); }
  double real(int c) const { return q.getColumn(c).getDouble(); }
  std::string text(int c) const { return q.getColumn(c).getString(); }
};

}  // namespace rgbaq::storage::sqlite_store
