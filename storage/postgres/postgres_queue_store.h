#pragma once
// The job queue in PostgreSQL: one queue shared by daemons on many hosts. Claims are one statement
// (UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING ...); a running job holds
// a lease (the server's clock, so hosts' clocks need not agree) that its worker's heartbeat extends;
// recovery requeues only expired leases. Run counters are kept by a trigger in 16 stripes per (run,
// state), one per connection, so concurrent claims do not queue on one counter row. The schema is versioned and migrated
// forward by whoever opens it first; a newer one is refused. A dropped connection is reopened with
// backoff (pg_connection.h).
#include <memory>
#include <string>

#include "storage/queue_store.h"
#include "storage/queue_store_shared.h"

namespace rgbaq::storage {

namespace pg {
class Connection;
}

class PostgresQueueStore final : public QueueStore {
 public:
  static constexpr int kSchemaVersion = 9;

  // Connects and migrates. Throws std::runtime_error naming the URL (password masked).
  explicit PostgresQueueStore(const std::string& url, StoreOptions options = {});
  ~PostgresQueueStore() override;
  // Tests: the (empty) database at `url` made a queue by this build's first `version` migrations only,
  // as an older rgbaq made it (its data is then written in that version's schema, and a store opened on
  // it migrates it forward).
  static void create_at_version(const std::string& url, int version);

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
  // "ok", or what disagrees: run counters against the jobs, running jobs without a live lease.
  std::string integrity_check() override;
  int schema_version() override;
  std::string location() const override;

 private:
  std::optional<Job> claim_in_transaction(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                          const std::vector<std::string>& preferred_loras, const std::string& token);
  // The running job `worker_id` claimed with `token`, if that claim committed.
  std::optional<Job> claimed_by_token(int64_t worker_id, const std::string& token);
  // In an open transaction (as are the other *_in_transaction): the complete, its re-seed and the end
  // of its run. False when the job is not running under the worker.
  bool complete_in_transaction(int64_t job_id, int64_t worker_id, const Completion& completion);
  // postgres_reseed.cpp: the first candidate that fits the completed job's row, inserted (Completion).
  void reseed_in_transaction(const store_shared::CompletedJob& done, const std::vector<NewJob>& candidates);
  // postgres_run_ends.cpp. The ends of those runs that have no queued or running job left, recorded
  // with what they owe, once per end (rgbaq_end_runs; runs.ended).
  void end_runs_in_transaction(const std::vector<int64_t>& run_ids);
  void end_runs_of_job_in_transaction(int64_t job_id);  // of the job's run
  // The runs' rows (FOR NO KEY UPDATE), in id order: a retry takes them before their jobs, as forget_run
  // does.
  void lock_runs_in_transaction(const std::vector<int64_t>& run_ids);
  // Runs marked ended that have a queued job again (a retry): open, their next end a new one.
  void reopen_runs_in_transaction(const std::vector<int64_t>& run_ids);
  // recover()'s part: the end of every open run with nothing left to run (an end a crash missed); hooks
  // of workers gone -> lost; webhooks whose lease expired -> owed.
  void recover_run_ends();
  // Each run's latest end, for list_runs.
  std::vector<RunEnd> last_ends_in_transaction();
  Canceled cancel_where(const char* column, int64_t id);
  void migrate();

  StoreOptions options_;
  std::unique_ptr<pg::Connection> db_;
};

}  // namespace rgbaq::storage
