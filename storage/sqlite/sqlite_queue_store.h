#pragma once
// The job queue in SQLite (WAL, BEGIN IMMEDIATE for read-then-write, a busy timeout, bound parameters
// only, a versioned schema with forward migrations): the embedded default, one file a data directory.
// Several processes may share one database; every transition is one transaction.
#include <SQLiteCpp/SQLiteCpp.h>

#include <filesystem>
#include <memory>

#include "storage/queue_store.h"
#include "storage/queue_store_shared.h"

namespace rgbaq::storage {

class SqliteQueueStore final : public QueueStore {
 public:
  static constexpr int kSchemaVersion = 9;

  // Opens or creates the database and migrates it forward. Throws std::runtime_error naming the file
  // when it cannot, when its schema is newer than this build knows, or when an existing file is not an
  // rgbaq queue (see StoreOptions::create_over_invalid).
  explicit SqliteQueueStore(const std::filesystem::path& path, StoreOptions options = {});
  ~SqliteQueueStore() override;
  // Tests: a new queue at `path` made by this build's first `version` migrations only, as an older
  // rgbaq made it (its data is then written in that version's schema, and a store opened on it
  // migrates it forward).
  static void create_at_version(const std::filesystem::path& path, int version);

  int64_t begin_run(const RunOptions& run) override;
  SubmitResult append_jobs(int64_t run_id, const RunOptions& run, const std::vector<NewJob>& jobs) override;
  void publish_run(int64_t run_id, uint64_t inserted) override;
  int64_t discard_run(int64_t run_id) override;
  ForgottenRun forget_run(int64_t run_id) override;
  std::optional<Job> claim(int64_t worker_id, const std::vector<uint64_t>& preferred = {},
                           const std::vector<std::string>& preferred_loras = {}) override;
  using QueueStore::complete_and_claim;
  std::optional<Job> complete_and_claim(int64_t job_id, const Completion& completion, int64_t worker_id,
                                        const std::vector<uint64_t>& preferred = {},
                                        const std::vector<std::string>& preferred_loras = {}) override;
  using QueueStore::complete;
  bool complete(int64_t job_id, int64_t worker_id, const Completion& completion) override;
  std::vector<uint64_t> row_seeds(int64_t run_id, uint64_t row_key) override;
  std::optional<JobState> fail(int64_t job_id, int64_t worker_id, const std::string& reason,
                               Failure failure = Failure::kRetry) override;
  bool requeue(int64_t job_id, int64_t worker_id) override;
  bool finish_canceled(int64_t job_id, int64_t worker_id) override;
  Canceled cancel_run(int64_t run_id) override;
  bool cancel_job(int64_t job_id) override;
  StepHold step_hold(int64_t job_id, int64_t worker_id) override;
  void set_paused(bool paused) override;
  bool paused() override;
  int64_t prioritize_run(int64_t run_id, int priority) override;
  int64_t retry(int64_t run_id, bool include_canceled = false) override;
  int64_t retry_jobs(const std::vector<int64_t>& job_ids) override;
  int64_t set_marks(const std::vector<int64_t>& job_ids, Mark mark, const std::string& by) override;
  RecoverResult recover(std::optional<int64_t> crashed_job = std::nullopt) override;
  std::optional<RunEnd> claim_run_hook(int64_t worker_id, int64_t pid) override;
  bool finish_run_hook(int64_t end_id, const std::string& outcome) override;
  std::optional<RunEnd> claim_webhook(int64_t worker_id, double now) override;
  bool record_webhook_attempt(const RunEnd& claimed, const std::string& outcome, bool delivered,
                              std::optional<double> retry_at) override;
  std::vector<RunEnd> run_ends(int64_t run_id) override;
  int64_t register_worker(const WorkerInfo& info) override;
  bool heartbeat(int64_t worker_id, const std::vector<int64_t>& jobs) override;
  void unregister_worker(int64_t worker_id) override;
  int64_t expire_worker(int64_t worker_id) override;
  void record_progress(int64_t worker_id, const std::vector<JobProgress>& progress) override;
  std::vector<Worker> list_workers() override;
  std::vector<Run> list_runs() override;
  std::map<int64_t, double> finish_times() override;
  using QueueStore::list_jobs;
  std::vector<Job> list_jobs(const JobQuery& query) override;
  std::optional<Job> job(int64_t job_id) override;
  StateCounts counts(std::optional<int64_t> run_id = std::nullopt) override;
  // "ok", or what PRAGMA integrity_check (and the run counters' cross-check) found.
  std::string integrity_check() override;
  int schema_version() override;
  std::string location() const override { return path_.string(); }

  const std::filesystem::path& path() const { return path_; }

  // Throws std::runtime_error naming the file when the path no longer names the file this store opened
  // (deleted, or replaced): what is written now could not be found again. Every write checks it first
  // (one stat).
  void check_file_identity() const;

 private:
  struct Statements;
  std::optional<Job> claim_locked(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                  const std::vector<std::string>& preferred_loras);
  // In an open transaction (as are the other *_locked).
  bool complete_locked(int64_t job_id, int64_t worker_id, const Completion& completion);
  // sqlite_reseed.cpp: the first candidate that fits the completed job's row, inserted (Completion).
  void reseed_locked(const store_shared::CompletedJob& done, const std::vector<NewJob>& candidates);
  // sqlite_run_ends.cpp. The end of the run (of every open run: nullopt) that has no queued or running
  // job left, recorded with what it owes; once per end (runs.ended).
  void record_ends_locked(std::optional<int64_t> run_id);
  // Runs marked ended that have a queued job again (a retry): open, their next end a new one.
  void reopen_runs_locked(std::optional<int64_t> run_id);
  // recover()'s part: hooks of workers gone -> lost; webhooks whose lease expired -> owed.
  void recover_run_ends_locked(double now);
  // Each run's latest end, for list_runs.
  std::vector<RunEnd> last_ends();
  // Queued jobs where `column` (id or run_id) = id -> canceled; running ones get a cancel request.
  Canceled cancel_where(const char* column, int64_t id);
  void migrate();

  std::filesystem::path path_;
  StoreOptions options_;
  bool existed_ = false;                  // the file was there before this store opened it
  uint64_t file_dev_ = 0, file_ino_ = 0;  // the opened file's identity
  SQLite::Database db_;
  std::unique_ptr<Statements> st_;  // prepared once: claims and completions run thousands of times a second
  // record_ends_locked's, prepared at their first use (every completion runs them): [0] of one run by
  // its id, [1] of every open run.
  std::unique_ptr<SQLite::Statement> record_ends_[2], mark_ended_[2];
};

}  // namespace rgbaq::storage
