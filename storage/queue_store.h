#pragma once
// The job queue's interface, with no database types in it; storage/sqlite/ (the embedded default) and
// storage/postgres/ (one queue shared by many hosts) implement it, and open_queue_store.h picks one
// from a URL. Semantics (DESIGN.md, "Queue semantics"):
//   queued -> running (a lease: attempt, start time, worker) -> done | failed | canceled.
// At-least-once execution with exactly-once outputs: after a crash, running jobs go back to queued, and
// a job whose attempts reach the limit fails with the reason. A done job never changes again.
// Several processes may share one queue; every transition is one transaction.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::storage {

enum class JobState { kQueued, kRunning, kDone, kFailed, kCanceled };
inline constexpr int kJobStates = 5;
std::string_view state_name(JobState s);
std::optional<JobState> parse_state(std::string_view name);
using StateCounts = std::array<int64_t, kJobStates>;  // indexed by JobState

// A person's verdict on a job's image (the gallery, `rgbaq mark`): job data in the queue, kept when the
// job is retried or rendered again.
enum class Mark { kNone, kStar, kReject };
std::string_view mark_name(Mark m);  // "", "star", "reject"
std::optional<Mark> parse_mark(std::string_view name);  // "star", "reject"; nullopt otherwise
// Which jobs a listing takes by their mark: kAnyMark is starred or rejected, kUnmarked neither.
enum class MarkFilter { kStar, kReject, kUnmarked, kAnyMark };
std::optional<MarkFilter> parse_mark_filter(std::string_view name);  // "star", "reject", "none", "any"

struct NewJob {
  int line = 0;  // the job file's row, for error messages (not stored)
  std::string prompt;
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::string name;
  int priority = 0;
  std::string output_path;
  uint64_t content_key = 0;  // identical jobs share it (resubmission detection)
  uint64_t prompt_key = 0;   // identical prompts share it (encoder-cache-friendly claims)
  std::string lora;          // the LoRA set, "name:weight;..." (jobs/lora_list.h); "" for none
  // The path may pass to this job from an owner of other content whose jobs there are all finished
  // (done, failed or canceled): the submit says so when no file is at the path, or with --replace.
  bool may_take_over = false;
  std::string template_text;  // the row's prompt template before expansion; "" when the prompt had none
  // The template's choices, a JSON object: {"1":"red","2":"sword","style":"pixel art"} ({...} groups
  // numbered from 1 in order, wildcards by name); "" when none.
  std::string choices_json;
  uint64_t row_key = 0;   // jobs of one input row (one expansion) that differ only in seed share it, in a run
  std::string reseed_on;  // alpha-check flags that re-seed this job: "cut_off,empty"; "" for none
  int reseed_max = 0;     // how many re-seeded jobs its row may get in all
};

// How a failed attempt counts: kRetry queues the job again after a backoff (failed at the attempt
// limit); kPermanent fails it now, for a cause no retry can fix (its output folder is a file, say).
enum class Failure { kRetry, kPermanent };

struct RunOptions {
  std::string name;
  std::string options_json = "{}";
  std::string out_dir;
  bool skip_duplicates = false;  // leave out jobs whose content key is already queued, running or done
};

struct SubmitResult {
  int64_t run_id = 0;
  uint64_t inserted = 0, skipped = 0;
  uint64_t taken_over = 0;  // output paths that passed from a finished or forgotten owner
};

// A submit that would give an output path to a job when another job (of this submit or an earlier
// run) with different content already owns it. Nothing of the batch was inserted.
struct OutputClash {
  int line = 0;           // the new job's row
  std::string path;
  int64_t owner_run = 0;  // the run whose job owns the path (may be the same submit)
  bool owner_active = false;  // a job of the owner's is queued or running there: no take-over
};
class OutputClashError : public std::runtime_error {
 public:
  explicit OutputClashError(std::vector<OutputClash> clashes);
  const std::vector<OutputClash>& clashes() const { return clashes_; }

 private:
  std::vector<OutputClash> clashes_;
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
  int interruptions = 0;  // times the daemon stopped under it (not counted as attempts)
  int deaths_in_row = 0;  // the daemon's deaths with it in hand, no other job finishing in between (recover)
  std::string worker;       // the lease holder's label (host:pid), kept after the job ends
  int64_t worker_id = 0;    // the lease holder while running (Worker::id), else 0
  std::string host;         // the host that rendered it (or renders it now)
  double lease_expires = 0;  // while running: the lease ends then unless its worker's heartbeat extends it
  double created_at = 0, started_at = 0, finished_at = 0;
  bool cancel_requested = false;
  std::string error;        // the last failure reason
  std::string errors_json;  // every failure: [{"attempt", "at", "reason"}]
  std::string output_path, metadata_json;
  uint64_t prompt_key = 0, content_key = 0;
  std::string lora;  // as NewJob::lora
  // While running: its render's progress as its worker last recorded it in this lease (record_progress),
  // so that any host can show it; 0 of 0 before the first record, and for a job not running.
  int step = 0, steps = 0;
  bool decoding = false;  // the steps are done and the image is being decoded
  Mark mark = Mark::kNone;
  double marked_at = 0;   // when the mark was set (0 without one)
  std::string marked_by;  // who set it, as the transport names them ("uid 1000 (ann)", "http"); a label only
  std::string template_text, choices_json;  // as NewJob's
  uint64_t row_key = 0;
  std::string reseed_on;
  int reseed_max = 0;
  int64_t replaces = 0;     // the job this one re-seeds (0: none)
  int64_t replaced_by = 0;  // the job that re-seeds this one (0: none)
  std::string qa_json;      // the alpha check's figures and flags as JSON ("" until done)
  std::string qa_flags;     // "ok", or the flags joined by ',' ("cut_off,fragmented"); "" until done
};

// What a worker hands over when a job is done (QueueStore::complete).
struct Completion {
  std::string output_path, metadata_json;
  std::string qa_json, qa_flags;  // as Job's
  // When qa_flags meets the job's reseed_on, the daemon builds candidate jobs for its row: the job's
  // fields (prompt, size, name, LoRA set, template, choices, row_key, reseed_on, reseed_max) with the next
  // seeds the row has not used (row_seeds), in order, each with its own output path and content key.
  // Every candidate is checked first: one whose row_key is not the job's is a bug, std::invalid_argument,
  // and nothing is completed. In the transaction that completes the job, unless a cancel was requested
  // for it (a canceled run gets no new job), and if its row (same run, same row_key) has fewer re-seeded
  // jobs (replaces <> 0) than the completed job's stored reseed_max, the store inserts the first candidate
  // whose seed no job of the row has and whose output path is free (or owned by the same content key, as
  // append_jobs shares it; never taken over) into the job's run, queued at the completed job's priority
  // (the candidate's own priority is not used), counted in the run's counters, and links the two
  // (replaces / replaced_by). None fits: none is inserted. Empty: nothing is re-seeded.
  std::vector<NewJob> reseed_candidates;
};

// What list_jobs selects: each field that is set narrows it; jobs in id order, a page of them.
struct JobQuery {
  std::optional<int64_t> run;
  std::optional<JobState> state;
  std::optional<MarkFilter> marked;
  // By the alpha check: "ok", jobs whose check found nothing; a flag name ("cut_off"), jobs whose
  // check has that flag (the whole name, never part of another); "", jobs not checked (yet). Anything
  // but letters a-z and '_' (a list "a,b", a wildcard) is refused: list_jobs throws std::invalid_argument.
  std::optional<std::string> qa_flag;
  int64_t after_id = 0;  // only jobs with a greater id: pages that jobs changing meanwhile cannot shift
  int64_t limit = 1000, offset = 0;
};

// A request that names a job the queue does not have (set_marks): nothing was changed.
class NoSuchJobError : public std::runtime_error {
 public:
  explicit NoSuchJobError(int64_t job) : std::runtime_error("there is no job " + std::to_string(job)), job_(job) {}
  int64_t job() const { return job_; }

 private:
  int64_t job_;
};

// A running job's progress, as its worker records it (QueueStore::record_progress).
struct JobProgress {
  int64_t job = 0;
  int step = 0, steps = 0;
  bool decoding = false;
  bool operator==(const JobProgress&) const = default;
};

// One end of a run (issue 41): recorded in the same transaction as the transition that left the run
// with no queued or running job (a job done, failed for good or canceled; a cancel; a recovery that
// failed jobs; the publish of a run with no job), once per end; a retry that queues its jobs again
// reopens the run, and its next end is a new RunEnd. The end owes a hook when, as it is recorded, any
// registered worker can run hooks (StoreOptions::owe_hook as it registered) or the store recording it
// can; a webhook delivery likewise (owe_webhook): whichever daemon finished the last job, an end owes
// what the daemons on the queue can do. recover() records the end of any run left open with nothing to
// run, so a missed end heals.
struct RunEnd {
  int64_t id = 0, run_id = 0;  // ids are never given twice: a delivery's receiver may tell repeats by it
  double ended_at = 0;         // the store's clock (PostgreSQL: the server's)
  int64_t done = 0, failed = 0, canceled = 0;  // the run's jobs by state at its end
  // "" (none owed), "owed", "running" (claimed by hook_worker_id), "done", "lost" (its daemon went
  // away while it ran: never run again, since it may have run).
  std::string hook_state;
  std::string hook_outcome;  // finish_run_hook's words: "exit 0", "killed at the 300 s limit", ...
  int64_t hook_worker_id = 0, hook_pid = 0;
  double hook_started_at = 0, hook_finished_at = 0;
  // "" (none owed), "owed" (due at webhook_next_at), "sending" (leased to webhook_worker_id until
  // webhook_lease_expires), "delivered", "gave_up".
  std::string webhook_state;
  int webhook_attempts = 0;
  double webhook_next_at = 0;  // 0 at the end (due at once), then record_webhook_attempt's retry_at
  int64_t webhook_worker_id = 0;
  double webhook_lease_expires = 0;
  std::string webhook_log_json = "[]";  // [{"at": seconds, "outcome": "..."}], one per attempt
  // The current webhook claim's token (claim_webhook), which record_webhook_attempt must present: an
  // attempt made under an earlier claim (whose lease ran out, even by the same worker) is not recorded.
  int64_t webhook_claim = 0;
};

struct Run {
  int64_t id = 0;
  std::string name, options_json, out_dir;
  double created_at = 0;
  StateCounts counts{};
  std::optional<RunEnd> last_end;  // its latest end (list_runs fills it); nullopt while it never ended
  int64_t total() const;
};

struct StoreOptions {
  int max_attempts = 3;         // renders that failed or crashed the daemon
  int max_interruptions = 100;  // stops (SIGKILL, reboot) while the job was running: not its fault, but bounded
  // Interruptions in a row at the same recorded step of one job are its fault (the kernel's OOM killer
  // ending every try there): from this many on, each counts as a crash (an attempt).
  int same_step_interruptions = 3;
  // The daemon dying with one job in hand this many times in a row, at whatever steps, with no other job
  // finishing (done) in between, is that job's doing (an OOM killer or a watchdog ending every try of it
  // somewhere around one point): it fails, naming the deaths. Every death while the job rendered (its
  // lease recorded a step) counts, a crash's too; one before any step was recorded (the daemon killed as
  // it started) neither counts nor ends the row.
  int max_deaths = 5;
  double backoff_seconds = 2.0;  // before attempt k + 1: backoff * 2^(k - 1), at most 5 minutes
  int busy_timeout_ms = 10000;
  // A claimed job's lease, which its worker's heartbeat extends; a job whose lease runs out is taken back
  // by recovery. Also how long a pending submit may be left alone before recovery discards it.
  double lease_seconds = 60;
  double reconnect_seconds = 120;  // PostgreSQL: how long an operation keeps reconnecting after a drop
  bool durable = true;  // synchronous = FULL: a commit survives power loss, not only a crash
  // An existing file that is not an rgbaq queue (empty, or another database) is refused unless this is
  // set; then a new queue is made in it. A missing file is always created.
  bool create_over_invalid = false;
  // What this daemon can do at a run's end (the daemon sets them from its configuration): run a hook /
  // send a webhook. register_worker records them on the worker; an end owes a hook / a webhook when
  // any registered worker, or the store recording the end, can (RunEnd).
  bool owe_hook = false, owe_webhook = false;
};

// What forget_run did. A run with queued or running jobs is not forgotten (`active` says how many), nor
// one with an end that still owes its hook or webhook (`owed_hooks`): forgetting it would drop them.
struct ForgottenRun {
  bool found = false;  // a published run of that id
  int64_t active = 0;
  int64_t owed_hooks = 0;  // its ends whose hook is owed or running, or whose webhook is owed or being sent
  int64_t jobs = 0;    // jobs deleted
  struct Image {
    int64_t job = 0;
    std::string path;
  };
  std::vector<Image> images;  // the run's done jobs whose output path no remaining job shares
};

struct RecoverResult {
  int64_t requeued = 0, failed = 0;
  int64_t canceled = 0;  // expired jobs whose cancel had been requested
  int64_t discarded_jobs = 0;  // of submits interrupted before their last batch
};

// A daemon that renders from the queue (one per process), as the queue knows it.
struct WorkerInfo {
  std::string host, boot_id;  // the boot id tells a rebooted host's dead workers from live ones
  int64_t pid = 0;
  std::string engine, device;
};
struct Worker {
  int64_t id = 0;
  WorkerInfo info;
  double started_at = 0, heartbeat_at = 0;
  int64_t images_done = 0;
  int64_t job = 0;  // the job in hand (its lowest, when the writer still holds one), 0 when none
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // The run and all its jobs: begin_run, one append_jobs, publish_run (discard_run if it throws).
  SubmitResult submit(const RunOptions& run, const std::vector<NewJob>& jobs) {
    const int64_t id = begin_run(run);
    SubmitResult result;
    try {
      result = append_jobs(id, run, jobs);
      publish_run(id, result.inserted);
    } catch (...) {
      discard_run(id);
      throw;
    }
    return result;
  }

  // A submit in bounded batches, each its own short transaction, so no submit holds the write lock for
  // long: the run is pending (invisible to claims, listings and counts) until publish_run commits; an
  // interrupted one is removed by discard_run, or by recover() at the next start.
  virtual int64_t begin_run(const RunOptions& run) = 0;
  // Inserts a batch into a pending run. Each job claims its output path (unique across all runs; a
  // job with the same content key may share it, being the same image). Throws OutputClashError (and
  // inserts nothing of the batch) when another job owns a path.
  virtual SubmitResult append_jobs(int64_t run_id, const RunOptions& run, const std::vector<NewJob>& jobs) = 0;
  virtual void publish_run(int64_t run_id, uint64_t inserted) = 0;
  // A pending run's jobs and output claims, deleted in batches, then the run.
  virtual int64_t discard_run(int64_t run_id) = 0;
  // A published run, forgotten: its jobs, counters and run row deleted in one transaction, and its
  // output paths released unless another run's job with the same content still uses them. Nothing
  // changes while any of its jobs is queued or running, or while an end of it still owes its hook or
  // webhook (ForgottenRun::owed_hooks). Its done jobs still count in the queue's count of finished jobs
  // (recover's deaths in a row).
  virtual ForgottenRun forget_run(int64_t run_id) = 0;

  // The next job by priority, then submit order; among the jobs of the top priority, one whose LoRA set
  // is in `preferred_loras` (loaded already) and whose prompt key is in `preferred` first, then one of
  // those LoRA sets, then one of those prompts. Leases it to the worker (register_worker) for
  // StoreOptions::lease_seconds. Nothing while paused.
  virtual std::optional<Job> claim(int64_t worker_id, const std::vector<uint64_t>& preferred = {},
                                   const std::vector<std::string>& preferred_loras = {}) = 0;
  // Transitions of a running job are fenced by its lease: each acts only while the job is running under
  // `worker_id` (Job::worker_id as claimed), in one statement, so a worker whose lease ran out (it
  // stalled, recovery requeued the job, another worker claimed it) cannot finish, fail or requeue the
  // new holder's job. A refused transition changes nothing.
  //
  // complete(job) and claim(...) in one transaction: one durable commit per finished job. The job is
  // completed only while it is running under `worker_id`, the worker that claims next.
  virtual std::optional<Job> complete_and_claim(int64_t job_id, const Completion& completion, int64_t worker_id,
                                                const std::vector<uint64_t>& preferred = {},
                                                const std::vector<std::string>& preferred_loras = {}) = 0;
  std::optional<Job> complete_and_claim(int64_t job_id, const std::string& output_path, const std::string& metadata_json,
                                        int64_t worker_id, const std::vector<uint64_t>& preferred = {},
                                        const std::vector<std::string>& preferred_loras = {}) {
    return complete_and_claim(job_id, Completion{.output_path = output_path, .metadata_json = metadata_json}, worker_id,
                              preferred, preferred_loras);
  }
  // running -> done with its output, metadata and alpha check, and in the same transaction the re-seeded
  // job (Completion::reseed_candidates) and, when the run has no queued or running job left, its end.
  // False (nothing changed) when the job is not running under the worker.
  virtual bool complete(int64_t job_id, int64_t worker_id, const Completion& completion) = 0;
  bool complete(int64_t job_id, int64_t worker_id, const std::string& output_path, const std::string& metadata_json) {
    return complete(job_id, worker_id, Completion{.output_path = output_path, .metadata_json = metadata_json});
  }
  // The seeds the row's jobs (same run, same row_key) have, in any state, ascending: what a re-seed
  // candidate must not use.
  virtual std::vector<uint64_t> row_seeds(int64_t run_id, uint64_t row_key) = 0;
  // running -> queued after a backoff, or failed once its attempts reach the limit; with kPermanent,
  // failed now whatever its attempts. The reason goes to error and errors_json. Returns the new state;
  // nullopt when the job is not running under the worker.
  virtual std::optional<JobState> fail(int64_t job_id, int64_t worker_id, const std::string& reason,
                                       Failure failure = Failure::kRetry) = 0;
  // running -> queued without counting the attempt (a clean shutdown abandoned it).
  virtual bool requeue(int64_t job_id, int64_t worker_id) = 0;
  // running with a cancel request -> canceled.
  virtual bool finish_canceled(int64_t job_id, int64_t worker_id) = 0;

  // Queued jobs -> canceled; running ones get a cancel request the worker sees at its next step (one
  // already past its last step finishes as done), counted apart so that nobody promises them canceled.
  struct Canceled {
    int64_t canceled = 0, stopping = 0;
    int64_t total() const { return canceled + stopping; }
  };
  virtual Canceled cancel_run(int64_t run_id) = 0;
  virtual bool cancel_job(int64_t job_id) = 0;
  // What a rendering worker asks at each step, in one narrow query: whether `worker_id` still holds
  // the job (running, leased to it; a host that stalled past its lease may find it given to another),
  // and if so whether a cancel was requested.
  enum class StepHold { kHeld, kCancelRequested, kLost };
  virtual StepHold step_hold(int64_t job_id, int64_t worker_id) = 0;
  virtual void set_paused(bool paused) = 0;
  virtual bool paused() = 0;
  // The priority of the run's queued and running jobs.
  virtual int64_t prioritize_run(int64_t run_id, int priority) = 0;
  // The run's failed (and canceled, when asked) jobs -> queued with their attempts reset. A run that
  // ended and gets a job queued again is open again: its next end is recorded anew (RunEnd).
  virtual int64_t retry(int64_t run_id, bool include_canceled = false) = 0;
  // The failed and canceled jobs among `job_ids` -> queued, as retry() does (their runs reopened); the
  // others (and ids of no job) are left as they are. One transaction, in statements of a bounded number
  // of ids.
  virtual int64_t retry_jobs(const std::vector<int64_t>& job_ids) = 0;
  // Sets `mark` (kNone: clears it) on the jobs of `job_ids`, in any state, with `by` and the time, in one
  // transaction of statements of a bounded number of ids. A job that has this mark already keeps its own
  // time and setter. Returns the jobs whose mark changed. Throws NoSuchJobError naming the first id in
  // the list's order that is no job, and changes nothing.
  virtual int64_t set_marks(const std::vector<int64_t>& job_ids, Mark mark, const std::string& by) = 0;
  // Running jobs whose lease expired -> queued (canceled, when a cancel was requested for it); a live
  // worker's job is never touched. `crashed_job` (the
  // job this daemon was rendering when a crash signal ended it) spends the attempt, failing with "crashed
  // the daemon N times" at the attempt limit; any other expired job was merely interrupted (SIGKILL, a
  // reboot, a host gone): its attempt is given back and it fails only at the separate, higher
  // interruption limit; unless it was interrupted at the same step its lease recorded (record_progress)
  // the last StoreOptions::same_step_interruptions times in a row: then it spends the attempt like a
  // crash, waits out a backoff (fail's), and at the attempt limit fails with "the daemon died at step N
  // on each of its last tries (out of memory?)". Every expired job whose lease recorded a step, the
  // crashed one too, also counts a death in a row: the next one in its row when no other job finished
  // (done) since its last death (the queue's count of finished jobs, forgotten runs' included, noted at
  // each death, is unchanged), else the first of a new row; the StoreOptions::max_deaths-th in a row
  // fails it with "the daemon died N times with this job in hand, no other job finishing in between (at
  // steps 3, 8, 3, 5, 4)". A death before any step was recorded leaves the row as it is. Which reason a job failing for several gives: the crash, the same step at the
  // attempt limit, the deaths in a row, the interruptions. A failure, a requeue or a retry ends both
  // rows. Pending runs (a submit cut off before its last batch) left alone for a lease are
  // discarded, and workers silent for a lease are forgotten. A run its failures or cancels end gets its
  // end (RunEnd), and so does every other open run with nothing left to run (an end a crash or an older
  // rgbaq missed). Run ends: a hook "running" under a worker no longer registered -> "lost" (never run
  // again: it may have run); a webhook "sending" whose lease expired -> "owed" again, due as it was.
  // Run at start and every heartbeat.
  virtual RecoverResult recover(std::optional<int64_t> crashed_job = std::nullopt) = 0;

  // Run ends' hooks and webhooks, each given to exactly one caller, also with several daemons on one
  // queue. The oldest owed hook -> "running" under `worker_id` (registered: a hook of a worker gone is
  // lost to recover()), with `pid` (recorded for listings) and the time; nullopt when none is owed or
  // the worker is not registered.
  virtual std::optional<RunEnd> claim_run_hook(int64_t worker_id, int64_t pid) = 0;
  // A claimed hook ("running", or "lost" while its daemon lived on) -> "done" with its outcome and the
  // time. False (nothing changed) for an end whose hook is in neither state.
  virtual bool finish_run_hook(int64_t end_id, const std::string& outcome) = 0;
  // The owed webhook due first by `now` (webhook_next_at <= now, the caller's clock as retry_at is)
  // -> "sending", leased to `worker_id` (registered) for StoreOptions::lease_seconds (recover() takes
  // it back after that: an attempt must end within it); nullopt when none is due.
  virtual std::optional<RunEnd> claim_webhook(int64_t worker_id, double now) = 0;
  // One delivery attempt of the webhook `claimed` (claim_webhook's answer) while that claim still holds
  // it ("sending" under claimed.webhook_claim): counted, and {"at", "outcome"} appended to its log. Then:
  // `delivered` -> "delivered"; else `retry_at` set -> "owed", due then; else -> "gave_up". False
  // (nothing changed) when the claim no longer holds it (its lease expired and it went back to owed, or
  // was claimed again, by another worker or by the same one).
  virtual bool record_webhook_attempt(const RunEnd& claimed, const std::string& outcome, bool delivered,
                                      std::optional<double> retry_at) = 0;
  // The run's ends, oldest first.
  virtual std::vector<RunEnd> run_ends(int64_t run_id) = 0;

  // Workers: each daemon registers once and heartbeats. heartbeat() extends the leases of `jobs` (those
  // the worker holds) and returns false when the worker is no longer registered (recovery forgot it,
  // its leases are gone): it must register again. The worker is recorded with what the store's options
  // say its daemon can do at a run's end (StoreOptions::owe_hook / owe_webhook).
  virtual int64_t register_worker(const WorkerInfo& info) = 0;
  virtual bool heartbeat(int64_t worker_id, const std::vector<int64_t>& jobs) = 0;
  virtual void unregister_worker(int64_t worker_id) = 0;
  // The worker's process is known to be dead (same host and boot, its pid gone): its leases end now and
  // it is forgotten. Returns the jobs whose lease ended.
  virtual int64_t expire_worker(int64_t worker_id) = 0;
  // Records the progress of jobs this worker holds (running, leased to it); others' are left alone.
  // Written as the heartbeat goes (at most about once a second per worker), not durable beyond that.
  virtual void record_progress(int64_t worker_id, const std::vector<JobProgress>& progress) = 0;
  virtual std::vector<Worker> list_workers() = 0;

  virtual std::vector<Run> list_runs() = 0;
  // Each run whose jobs have all ended -> its last job's finished_at. Reads every job: for a listing a
  // person asked for, not for a poll.
  virtual std::map<int64_t, double> finish_times() = 0;
  // One run as list_runs() lists it; nullopt for one not there (or pending).
  std::optional<Run> run(int64_t run_id) {
    for (auto& r : list_runs()) {
      if (r.id == run_id) return std::move(r);
    }
    return std::nullopt;
  }
  virtual std::vector<Job> list_jobs(const JobQuery& query) = 0;
  std::vector<Job> list_jobs(std::optional<int64_t> run_id, std::optional<JobState> state, int64_t limit = 1000,
                             int64_t offset = 0) {
    return list_jobs(JobQuery{.run = run_id, .state = state, .limit = limit, .offset = offset});
  }
  virtual std::optional<Job> job(int64_t job_id) = 0;
  virtual StateCounts counts(std::optional<int64_t> run_id = std::nullopt) = 0;

  // "ok", or what the store's own checks found (its consistency, the run counters' cross-check).
  virtual std::string integrity_check() = 0;
  virtual int schema_version() = 0;
  // Where the queue is, for messages and logs: a file path, or a PostgreSQL URL without its password.
  virtual std::string location() const = 0;
};

inline std::string_view state_name(JobState s) {
  constexpr const char* kStateNames[] = {"queued", "running", "done", "failed", "canceled"};
  return kStateNames[static_cast<int>(s)];
}

inline std::optional<JobState> parse_state(std::string_view name) {
  for (int i = 0; i < kJobStates; ++i) {
    if (name == state_name(static_cast<JobState>(i))) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

inline std::string_view mark_name(Mark m) {
  constexpr const char* kMarkNames[] = {"", "star", "reject"};
  return kMarkNames[static_cast<int>(m)];
}

inline std::optional<Mark> parse_mark(std::string_view name) {
  if (name == "star") return Mark::kStar;
  if (name == "reject") return Mark::kReject;
  return std::nullopt;
}

inline std::optional<MarkFilter> parse_mark_filter(std::string_view name) {
  if (name == "star") return MarkFilter::kStar;
  if (name == "reject") return MarkFilter::kReject;
  if (name == "none") return MarkFilter::kUnmarked;
  if (name == "any") return MarkFilter::kAnyMark;
  return std::nullopt;
}

// A mark filter as SQL over the jobs' `mark` column ('' for none), for both stores.
inline const char* mark_filter_sql(MarkFilter f) {
  switch (f) {
    case MarkFilter::kStar: return "mark = 'star'";
    case MarkFilter::kReject: return "mark = 'reject'";
    case MarkFilter::kUnmarked: return "mark = ''";
    case MarkFilter::kAnyMark: return "mark <> ''";
  }
  return "FALSE";
}

inline int64_t Run::total() const {
  int64_t t = 0;
  for (int64_t c : counts) t += c;
  return t;
}

// For the stores' list_runs: the run of that id among `runs` (sorted by id); nullptr when it is not
// listed (pending, or gone).
inline Run* listed_run(std::vector<Run>& runs, int64_t run_id) {
  const auto it = std::lower_bound(runs.begin(), runs.end(), run_id, [](const Run& r, int64_t v) { return r.id < v; });
  return it != runs.end() && it->id == run_id ? &*it : nullptr;
}

// For the stores' list_runs: a counter row (run, state name, n) into its run among `runs`; a row of a
// run not listed or of an unknown state is left out.
inline void add_run_count(std::vector<Run>& runs, int64_t run_id, std::string_view state, int64_t n) {
  const auto s = parse_state(state);
  Run* r = listed_run(runs, run_id);
  if (s && r) r->counts[static_cast<int>(*s)] = n;
}

inline OutputClashError::OutputClashError(std::vector<OutputClash> clashes)
    : std::runtime_error([&] {
        std::string m;
        for (const auto& c : clashes) {
          if (!m.empty()) m += "; ";
          m += "line " + std::to_string(c.line) + ": output " + c.path + " already belongs to another image (run " +
               std::to_string(c.owner_run) + ")";
        }
        return m;
      }()),
      clashes_(std::move(clashes)) {}

}  // namespace rgbaq::storage
