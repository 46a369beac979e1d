#pragma once
// What the two queue stores (sqlite/, postgres/) share and their users need not see: the job a re-seed
// works from, the checks made before a transaction, claim tokens, and the SQL text both dialects read
// alike. Not part of the QueueStore interface.
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "storage/queue_store.h"

namespace rgbaq::storage::store_shared {

// The job just completed, as its re-seed needs it.
struct CompletedJob {
  int64_t id = 0, run_id = 0;
  uint64_t row_key = 0;
  int reseed_max = 0, priority = 0;
  bool cancel_requested = false;  // a canceled job's row is not re-seeded
};

// Before a completion's transaction: every re-seed candidate must be of the completed job's row (its
// row_key; the store inserts it into the job's run). Throws std::invalid_argument naming the first that
// is not, so that nothing is completed. A job the queue does not have is left to the completion to refuse.
inline void check_reseed_candidates(QueueStore& store, int64_t job_id, const Completion& c) {
  if (c.reseed_candidates.empty()) return;
  const auto job = store.job(job_id);  // its run and row never change
  if (!job) return;
  for (const NewJob& j : c.reseed_candidates) {
    if (j.row_key != job->row_key) {
      throw std::invalid_argument("re-seed candidate (seed " + std::to_string(j.seed) + ", line " + std::to_string(j.line) +
                                  ") of job " + std::to_string(job_id) + " in run " + std::to_string(job->run_id) +
                                  " has row key " + std::to_string(j.row_key) + ", not its row's " +
                                  std::to_string(job->row_key));
    }
  }
}

// JobQuery::qa_flag: "" (not checked), "ok" or one flag name, letters a-z and '_' only. Anything else (a
// list, a wildcard of LIKE or of a pattern) would select by accident: std::invalid_argument naming it.
inline void check_qa_flag_filter(const std::optional<std::string>& flag) {
  if (!flag) return;
  for (const char ch : *flag) {
    if ((ch < 'a' || ch > 'z') && ch != '_') {
      throw std::invalid_argument("alpha-check flag filter \"" + *flag + "\" is not one flag name (letters a-z and '_')");
    }
  }
}

// A claim's token, recorded with it: a write run again after a dropped connection finds what its first
// run took, and a webhook attempt is recorded only for the claim it was made under. Random: writers on
// many hosts need no coordination.
inline int64_t new_token() {
  thread_local std::mt19937_64 random{std::random_device{}()};
  return static_cast<int64_t>(random() >> 1) | 1;  // positive, never 0 (nothing claimed by token)
}

// A run end's columns, in read_run_end's order.
inline constexpr const char* kRunEndColumns =
    "id, run_id, ended_at, done, failed, canceled, hook_state, hook_outcome, hook_worker_id, hook_pid, hook_started_at, "
    "hook_finished_at, webhook_state, webhook_attempts, webhook_next_at, webhook_worker_id, webhook_lease_expires, "
    "CAST(webhook_log AS TEXT), webhook_token";

// One row of kRunEndColumns; `row` reads column c with int64(c), real(c) and text(c).
template <class Row>
RunEnd read_run_end(const Row& row) {
  RunEnd e;
  e.id = row.int64(0);
  e.run_id = row.int64(1);
  e.ended_at = row.real(2);
  e.done = row.int64(3);
  e.failed = row.int64(4);
  e.canceled = row.int64(5);
  e.hook_state = row.text(6);
  e.hook_outcome = row.text(7);
  e.hook_worker_id = row.int64(8);
  e.hook_pid = row.int64(9);
  e.hook_started_at = row.real(10);
  e.hook_finished_at = row.real(11);
  e.webhook_state = row.text(12);
  e.webhook_attempts = static_cast<int>(row.int64(13));
  e.webhook_next_at = row.real(14);
  e.webhook_worker_id = row.int64(15);
  e.webhook_lease_expires = row.real(16);
  e.webhook_log_json = row.text(17);
  e.webhook_claim = row.int64(18);
  return e;
}

// A run end that still owes something: its hook owed or running, its webhook owed or being sent
// (forget_run refuses to drop it).
inline constexpr const char* kEndStillOwes =
    "(hook_state IN ('owed', 'running') OR webhook_state IN ('owed', 'sending'))";

// A retry requeues only jobs whose output path their content still owns: one taken over by a later
// submit (--replace, or its file gone) would write over the new owner's image.
inline constexpr const char* kStillOwner =
    " AND EXISTS (SELECT 1 FROM outputs o WHERE o.path = jobs.output_path AND o.content_key = jobs.content_key)";

// integrity_check's: a published run is marked ended exactly when it has no queued or running job. The
// first run that is not: id, ended.
inline constexpr const char* kEndedMismatch =
    "SELECT id, ended FROM runs r WHERE NOT pending AND ended = EXISTS (SELECT 1 FROM jobs j WHERE j.run_id = r.id AND "
    "j.state IN ('queued', 'running')) ORDER BY id LIMIT 1";
inline std::string ended_mismatch_problem(int64_t run, bool ended) {
  return "run " + std::to_string(run) +
         (ended ? " is marked ended with jobs queued or running" : " has no job left to run but no end recorded");
}

// integrity_check's: running jobs whose lease expired or whose worker is gone (count, the first id), with
// `now` the store's clock as SQL.
inline std::string orphans_sql(const std::string& now) {
  return "SELECT count(*), min(id) FROM jobs j WHERE state = 'running' AND (lease_expires < " + now +
         " OR NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = j.worker_id))";
}
inline std::string orphans_problem(int64_t n, int64_t first) {
  return std::to_string(n) + " running job(s) without a live lease (the first: job " + std::to_string(first) + ")";
}

}  // namespace rgbaq::storage::store_shared
