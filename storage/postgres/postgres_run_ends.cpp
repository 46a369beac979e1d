// The PostgreSQL queue's run ends (issue 41): recorded by rgbaq_end_runs (the schema's v9) in the
// transaction of the transition that ended the run, and their hooks and webhooks given out with FOR
// UPDATE SKIP LOCKED, so that of several daemons on one queue exactly one takes each. A claim run again
// after a dropped connection first looks for what its first run took, by its token.
#include <algorithm>

#include "storage/postgres/postgres_queue_store.h"
#include "storage/postgres/postgres_store_helpers.h"

namespace rgbaq::storage {

using postgres_store::array_literal;
using postgres_store::num;
using postgres_store::real;
using postgres_store::transaction;
using store_shared::kRunEndColumns;
using store_shared::new_token;

namespace {

RunEnd read_run_end(const pg::Result& r, int row) { return store_shared::read_run_end(postgres_store::Row{r, row}); }

std::vector<RunEnd> read_run_ends(const pg::Result& r) {
  std::vector<RunEnd> ends;
  for (int i = 0; i < r.rows(); ++i) ends.push_back(read_run_end(r, i));
  return ends;
}

std::string boolean(bool b) { return b ? "true" : "false"; }

}  // namespace

void PostgresQueueStore::end_runs_in_transaction(const std::vector<int64_t>& run_ids) {
  db_->exec("SELECT rgbaq_end_runs($1::bigint[], $2::boolean, $3::boolean)",
            {array_literal(run_ids), boolean(options_.owe_hook), boolean(options_.owe_webhook)}, "end_runs");
}

void PostgresQueueStore::end_runs_of_job_in_transaction(int64_t job_id) {
  db_->exec("SELECT rgbaq_end_runs(ARRAY(SELECT run_id FROM jobs WHERE id = $1), $2::boolean, $3::boolean)",
            {num(job_id), boolean(options_.owe_hook), boolean(options_.owe_webhook)}, "end_runs_of_job");
}

void PostgresQueueStore::lock_runs_in_transaction(const std::vector<int64_t>& run_ids) {
  std::vector<int64_t> sorted = run_ids;
  std::sort(sorted.begin(), sorted.end());
  db_->exec("SELECT 1 FROM runs WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE", {array_literal(sorted)});
}

void PostgresQueueStore::reopen_runs_in_transaction(const std::vector<int64_t>& run_ids) {
  db_->exec("UPDATE runs SET ended = FALSE WHERE id = ANY($1::bigint[]) AND ended AND EXISTS (SELECT 1 FROM jobs j "
            "WHERE j.run_id = runs.id AND j.state IN ('queued', 'running'))",
            {array_literal(run_ids)});
}

void PostgresQueueStore::recover_run_ends() {
  transaction(*db_, [&] {
    // Open runs that look finished (the open-runs index, then each run's jobs by the run index);
    // rgbaq_end_runs locks them and looks again.
    db_->exec("SELECT rgbaq_end_runs(ARRAY(SELECT id FROM runs r WHERE NOT ended AND NOT pending AND NOT EXISTS (SELECT 1 "
              "FROM jobs j WHERE j.run_id = r.id AND j.state IN ('queued', 'running')) ORDER BY id), $1::boolean, $2::boolean)",
              {boolean(options_.owe_hook), boolean(options_.owe_webhook)});
    // A hook whose daemon is gone may have run, wholly or in part: never run again.
    db_->exec("UPDATE run_ends SET hook_state = 'lost', hook_finished_at = rgbaq_now() WHERE hook_state = 'running' "
              "AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = run_ends.hook_worker_id)");
    // A delivery whose lease ran out is attempted again (its receiver tells repeats apart by the end's id).
    db_->exec("UPDATE run_ends SET webhook_state = 'owed', webhook_lease_expires = 0 "
              "WHERE webhook_state = 'sending' AND webhook_lease_expires < rgbaq_now()");
    return 0;
  });
}

std::vector<RunEnd> PostgresQueueStore::last_ends_in_transaction() {
  return read_run_ends(
      db_->exec(std::string("SELECT DISTINCT ON (run_id) ") + kRunEndColumns + " FROM run_ends ORDER BY run_id, id DESC"));
}

std::optional<RunEnd> PostgresQueueStore::claim_run_hook(int64_t worker_id, int64_t pid) {
  const std::string token = num(new_token());
  int runs = 0;
  return db_->retrying([&]() -> std::optional<RunEnd> {
    if (++runs > 1) {
      const auto first = db_->exec(std::string("SELECT ") + kRunEndColumns +
                                       " FROM run_ends WHERE hook_state = 'running' AND hook_worker_id = $1 AND hook_token = $2",
                                   {num(worker_id), token});
      if (!first.empty()) return read_run_end(first, 0);
    }
    // A worker the queue does not know would see its hook declared lost by the next recovery.
    const auto r = db_->exec(std::string("UPDATE run_ends SET hook_state = 'running', hook_worker_id = $1, hook_pid = $2, "
                                         "hook_started_at = rgbaq_now(), hook_token = $3 WHERE hook_state = 'owed' AND "
                                         "EXISTS (SELECT 1 FROM workers WHERE id = $1) AND id = (SELECT id FROM run_ends "
                                         "WHERE hook_state = 'owed' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING ") +
                                 kRunEndColumns,
                             {num(worker_id), num(pid), token});
    if (r.empty()) return std::nullopt;
    return read_run_end(r, 0);
  });
}

bool PostgresQueueStore::finish_run_hook(int64_t end_id, const std::string& outcome) {
  int runs = 0;
  return db_->retrying([&] {
    ++runs;
    if (db_->exec("UPDATE run_ends SET hook_state = 'done', hook_outcome = $2, hook_finished_at = rgbaq_now() "
                  "WHERE id = $1 AND hook_state IN ('running', 'lost')",
                  {num(end_id), outcome})
            .affected() == 1) {
      return true;
    }
    // Run again after a dropped connection: the first run may have committed.
    return runs > 1 && !db_->exec("SELECT 1 FROM run_ends WHERE id = $1 AND hook_state = 'done' AND hook_outcome = $2",
                                    {num(end_id), outcome})
                              .empty();
  });
}

std::optional<RunEnd> PostgresQueueStore::claim_webhook(int64_t worker_id, double now) {
  const std::string token = num(new_token());
  int runs = 0;
  return db_->retrying([&]() -> std::optional<RunEnd> {
    if (++runs > 1) {
      const auto first = db_->exec(std::string("SELECT ") + kRunEndColumns +
                                       " FROM run_ends WHERE webhook_state = 'sending' AND webhook_worker_id = $1 AND "
                                       "webhook_token = $2",
                                   {num(worker_id), token});
      if (!first.empty()) return read_run_end(first, 0);
    }
    const auto r = db_->exec(std::string("UPDATE run_ends SET webhook_state = 'sending', webhook_worker_id = $1, "
                                         "webhook_lease_expires = rgbaq_now() + $2, webhook_token = $3 WHERE webhook_state = "
                                         "'owed' AND EXISTS (SELECT 1 FROM workers WHERE id = $1) AND id = (SELECT id FROM "
                                         "run_ends WHERE webhook_state = 'owed' AND webhook_next_at <= $4 ORDER BY "
                                         "webhook_next_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING ") +
                                 kRunEndColumns,
                             {num(worker_id), real(options_.lease_seconds), token, real(now)});
    if (r.empty()) return std::nullopt;
    return read_run_end(r, 0);
  });
}

bool PostgresQueueStore::record_webhook_attempt(const RunEnd& claimed, const std::string& outcome, bool delivered,
                                                std::optional<double> retry_at) {
  const std::string next_state = delivered ? "delivered" : retry_at ? "owed" : "gave_up";
  int runs = 0;
  return db_->retrying([&] {
    ++runs;
    if (db_->exec("UPDATE run_ends SET webhook_attempts = webhook_attempts + 1, webhook_log = webhook_log || "
                  "jsonb_build_array(jsonb_build_object('at', rgbaq_now(), 'outcome', $3::text)), webhook_state = $4, "
                  "webhook_next_at = coalesce($5::double precision, webhook_next_at), webhook_lease_expires = 0 "
                  "WHERE id = $1 AND webhook_state = 'sending' AND webhook_token = $2",
                  {num(claimed.id), num(claimed.webhook_claim), outcome, next_state,
                   delivered || !retry_at ? std::nullopt : std::optional<std::string>(real(*retry_at))})
            .affected() == 1) {
      return true;
    }
    // Run again after a dropped connection: the first run may have committed (its attempt is the last).
    return runs > 1 && !db_->exec("SELECT 1 FROM run_ends WHERE id = $1 AND webhook_token = $2 AND webhook_state = $3 "
                                    "AND webhook_log -> -1 ->> 'outcome' = $4",
                                    {num(claimed.id), num(claimed.webhook_claim), next_state, outcome})
                              .empty();
  });
}

std::vector<RunEnd> PostgresQueueStore::run_ends(int64_t run_id) {
  return db_->retrying([&] {
    return read_run_ends(
        db_->exec(std::string("SELECT ") + kRunEndColumns + " FROM run_ends WHERE run_id = $1 ORDER BY id", {num(run_id)}));
  });
}

}  // namespace rgbaq::storage
