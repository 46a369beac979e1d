#pragma once
// The job queue in SQLite (WAL, BEGIN IMMEDIATE for read-then-write, a busy timeout, bound parameters
// only, a versioned schema with forward migrations). Semantics (DESIGN.md, "Queue semantics"):
//   queued -> running (a lease: attempt, start time, worker) -> done | failed | canceled.
// At-least-once execution with exactly-once outputs: after a crash, running jobs go back to queued, and
// a job whose attempts reach the limit fails with the reason. A done job never changes again.
// Several processes may share one database; every transition is one transaction.
#include <SQLiteCpp/SQLiteCpp.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::storage {

enum class JobState { kQueued, kRunning, kDone, kFailed, kCanceled };
inline constexpr int kJobStates = 5;
std::string_view state_name(JobState s);
std::optional<JobState> parse_state(std::string_view name);
using StateCounts = std::array<int64_t, kJobStates>;  // indexed by JobState

struct NewJob {
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::string name;
  int priority = 0;
  std::string output_path;
  uint64_t content_key = 0;  // identical jobs share it (resubmission detection)
  uint64_t prompt_key = 0;   // identical prompts share it (encoder-cache-friendly claims)
};

struct RunOptions {
  std::string name;
  std::string options_json = "{}";
  std::string out_dir;
  bool skip_duplicates = false;  // leave out jobs whose content key is already queued, running or done
};

struct SubmitResult {
  int64_t run_id = 0;
  uint64_t inserted = 0, skipped = 0;
};

struct Job {
  int64_t id = 0, run_id = 0;
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::string name;
  int priority = 0;
  JobState state = JobState::kQueued;
  int attempts = 0;
  std::string worker;
  double created_at = 0, started_at = 0, finished_at = 0;
  bool cancel_requested = false;
  std::string error;        // the last failure reason
  std::string errors_json;  // every failure: [{"attempt", "at", "reason"}]
  std::string output_path, metadata_json;
  uint64_t prompt_key = 0, content_key = 0;
};

struct Run {
  int64_t id = 0;
  std::string name, options_json, out_dir;
  double created_at = 0;
  StateCounts counts{};
  int64_t total() const;
};

struct StoreOptions {
  int max_attempts = 3;
  double backoff_seconds = 2.0;  // before attempt k + 1: backoff * 2^(k - 1), at most 5 minutes
  int busy_timeout_ms = 10000;
  bool durable = true;  // synchronous = FULL: a commit survives power loss, not only a crash
};

struct RecoverResult {
  int64_t requeued = 0, failed = 0;
};

class QueueStore {
 public:
  static constexpr int kSchemaVersion = 1;

  // Opens or creates the database and migrates it forward. Throws std::runtime_error naming the file
  // when it cannot, or when its schema is newer than this build knows.
  explicit QueueStore(const std::filesystem::path& path, StoreOptions options = {});
  ~QueueStore();

  // The run and all its jobs in one transaction.
  SubmitResult submit(const RunOptions& run, const std::vector<NewJob>& jobs);

  // The next job by priority, then submit order; among the jobs of the top priority, one whose prompt
  // key is in `preferred` first. Leases it to `worker`. Nothing while paused.
  std::optional<Job> claim(const std::string& worker, const std::vector<uint64_t>& preferred = {});
  // complete(job) and claim(...) in one transaction: one durable commit per finished job.
  std::optional<Job> complete_and_claim(int64_t job_id, const std::string& output_path, const std::string& metadata_json,
                                        const std::string& worker, const std::vector<uint64_t>& preferred = {});
  // running -> done. False (and nothing changes) when the job is not running.
  bool complete(int64_t job_id, const std::string& output_path, const std::string& metadata_json);
  // running -> queued after a backoff, or failed once its attempts reach the limit. Returns the state.
  JobState fail(int64_t job_id, const std::string& reason);
  // running -> queued without counting the attempt (a clean shutdown abandoned it).
  bool requeue(int64_t job_id);
  // running with a cancel request -> canceled.
  bool finish_canceled(int64_t job_id);

  // Queued jobs -> canceled; running ones get a cancel request the worker sees at its next step.
  int64_t cancel_run(int64_t run_id);
  bool cancel_job(int64_t job_id);
  bool cancel_requested(int64_t job_id);
  void set_paused(bool paused);
  bool paused();
  // The priority of the run's queued and running jobs.
  int64_t prioritize_run(int64_t run_id, int priority);
  // The run's failed (and canceled, when asked) jobs -> queued with their attempts reset.
  int64_t retry(int64_t run_id, bool include_canceled = false);
  // After a crash: running -> queued, or failed with "interrupted N times" at the attempt limit.
  RecoverResult recover();

  std::vector<Run> list_runs();
  std::optional<Run> run(int64_t run_id);
  std::vector<Job> list_jobs(std::optional<int64_t> run_id, std::optional<JobState> state, int64_t limit = 1000,
                             int64_t offset = 0);
  std::optional<Job> job(int64_t job_id);
  StateCounts counts(std::optional<int64_t> run_id = std::nullopt);

  // "ok", or what PRAGMA integrity_check (and the run counters' cross-check) found.
  std::string integrity_check();
  int schema_version();
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Statements;
  std::optional<Job> claim_locked(const std::string& worker, const std::vector<uint64_t>& preferred);
  bool complete_locked(int64_t job_id, const std::string& output_path, const std::string& metadata_json);
  // Queued jobs where `column` (id or run_id) = id -> canceled; running ones get a cancel request.
  int64_t cancel_where(const char* column, int64_t id);
  void migrate();

  std::filesystem::path path_;
  StoreOptions options_;
  SQLite::Database db_;
  std::unique_ptr<Statements> st_;  // prepared once: claims and completions run thousands of times a second
};

}  // namespace rgbaq::storage
