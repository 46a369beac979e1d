// The SQLite queue's run ends (issue 41): recorded in the transaction of the transition that ended the
// run, and their hooks and webhooks given out one at a time. A claim reads and writes under BEGIN
// IMMEDIATE, and every other write here is one statement, so two processes sharing the file never both
// see an owed item as theirs.
#include "storage/sqlite/sqlite_queue_store.h"
#include "storage/sqlite/sqlite_store_helpers.h"

namespace rgbaq::storage {

using sqlite_store::now_seconds;
using sqlite_store::Row;
using sqlite_store::Use;
using store_shared::kRunEndColumns;

namespace {

RunEnd read_run_end(SQLite::Statement& q) { return store_shared::read_run_end(Row{q}); }

// A run's count of jobs in a state, from the counters.
std::string run_count(const char* state) {
  return std::string("coalesce((SELECT n FROM run_counts c WHERE c.run_id = r.id AND c.state = '") + state + "'), 0)";
}

// A published run still marked open that has no queued or running job left.
constexpr const char* kOpenRunWithNothingLeft =
    "r.ended = 0 AND r.pending = 0 AND NOT EXISTS (SELECT 1 FROM run_counts c WHERE c.run_id = r.id AND "
    "c.state IN ('queued', 'running') AND c.n > 0)";

// What an end owes: ?3 / ?4, this store's own abilities, or any registered worker's.
constexpr const char* kOwed =
    "CASE WHEN ?3 OR EXISTS (SELECT 1 FROM workers WHERE runs_hooks) THEN 'owed' ELSE '' END, "
    "CASE WHEN ?4 OR EXISTS (SELECT 1 FROM workers WHERE sends_webhooks) THEN 'owed' ELSE '' END";

bool worker_registered(SQLite::Database& db, int64_t worker_id) {
  SQLite::Statement q(db, "SELECT 1 FROM workers WHERE id = ?");
  q.bind(1, worker_id);
  return q.executeStep();
}

}  // namespace

void SqliteQueueStore::record_ends_locked(std::optional<int64_t> run_id) {
  // One statement inserting the ends and one marking their runs (the same condition, in the same
  // transaction); of one run by its id (?1), or of every open run (the open-runs index).
  const int k = run_id ? 0 : 1;
  if (!record_ends_[k]) {
    const std::string where = std::string(run_id ? "r.id = ?1 AND " : "") + kOpenRunWithNothingLeft;
    record_ends_[k] = std::make_unique<SQLite::Statement>(
        db_, "INSERT INTO run_ends (run_id, ended_at, done, failed, canceled, hook_state, webhook_state, webhook_next_at) "
             "SELECT r.id, ?2, " + run_count("done") + ", " + run_count("failed") + ", " + run_count("canceled") + ", " +
                 kOwed + ", 0 FROM runs r WHERE " + where + " ORDER BY r.id");
    mark_ended_[k] = std::make_unique<SQLite::Statement>(db_, "UPDATE runs AS r SET ended = 1 WHERE " + where);
  }
  Use ends(*record_ends_[k]);
  if (run_id) ends->bind(1, *run_id);
  ends->bind(2, now_seconds());
  ends->bind(3, options_.owe_hook ? 1 : 0);
  ends->bind(4, options_.owe_webhook ? 1 : 0);
  if (ends->exec() == 0) return;
  Use mark(*mark_ended_[k]);
  if (run_id) mark->bind(1, *run_id);
  mark->exec();
}

void SqliteQueueStore::reopen_runs_locked(std::optional<int64_t> run_id) {
  SQLite::Statement q(db_, "UPDATE runs SET ended = 0 WHERE ended = 1 AND (?1 IS NULL OR id = ?1) AND EXISTS (SELECT 1 "
                           "FROM run_counts c WHERE c.run_id = runs.id AND c.state IN ('queued', 'running') AND c.n > 0)");
  if (run_id) {
    q.bind(1, *run_id);
  } else {
    q.bind(1);
  }
  q.exec();
}

void SqliteQueueStore::recover_run_ends_locked(double now) {
  // A hook whose daemon is gone may have run, wholly or in part: never run again.
  SQLite::Statement lost(db_, "UPDATE run_ends SET hook_state = 'lost', hook_finished_at = ? WHERE hook_state = 'running' "
                              "AND NOT EXISTS (SELECT 1 FROM workers w WHERE w.id = run_ends.hook_worker_id)");
  lost.bind(1, now);
  lost.exec();
  // A delivery whose lease ran out is attempted again (its receiver tells repeats apart by the end's id).
  SQLite::Statement expired(db_, "UPDATE run_ends SET webhook_state = 'owed', webhook_lease_expires = 0 "
                                 "WHERE webhook_state = 'sending' AND webhook_lease_expires < ?");
  expired.bind(1, now);
  expired.exec();
}

std::vector<RunEnd> SqliteQueueStore::last_ends() {
  SQLite::Statement q(db_, std::string("SELECT ") + kRunEndColumns +
                               " FROM run_ends WHERE id IN (SELECT max(id) FROM run_ends GROUP BY run_id)");
  std::vector<RunEnd> ends;
  while (q.executeStep()) ends.push_back(read_run_end(q));
  return ends;
}

std::optional<RunEnd> SqliteQueueStore::claim_run_hook(int64_t worker_id, int64_t pid) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  // A worker the queue does not know would see its hook declared lost by the next recovery.
  if (!worker_registered(db_, worker_id)) return std::nullopt;
  SQLite::Statement q(db_, std::string("UPDATE run_ends SET hook_state = 'running', hook_worker_id = ?, hook_pid = ?, "
                                       "hook_started_at = ? WHERE id = (SELECT min(id) FROM run_ends WHERE hook_state = "
                                       "'owed') RETURNING ") + kRunEndColumns);
  q.bind(1, worker_id);
  q.bind(2, pid);
  q.bind(3, now_seconds());
  if (!q.executeStep()) return std::nullopt;
  RunEnd end = read_run_end(q);
  q.reset();
  tx.commit();
  return end;
}

bool SqliteQueueStore::finish_run_hook(int64_t end_id, const std::string& outcome) {
  check_file_identity();
  SQLite::Statement q(db_, "UPDATE run_ends SET hook_state = 'done', hook_outcome = ?, hook_finished_at = ? "
                           "WHERE id = ? AND hook_state IN ('running', 'lost')");
  q.bind(1, outcome);
  q.bind(2, now_seconds());
  q.bind(3, end_id);
  return q.exec() == 1;
}

std::optional<RunEnd> SqliteQueueStore::claim_webhook(int64_t worker_id, double now) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  if (!worker_registered(db_, worker_id)) return std::nullopt;
  SQLite::Statement q(db_, std::string("UPDATE run_ends SET webhook_state = 'sending', webhook_worker_id = ?1, "
                                       "webhook_lease_expires = ?2, webhook_token = ?4 WHERE id = (SELECT id FROM run_ends WHERE "
                                       "webhook_state = 'owed' AND webhook_next_at <= ?3 ORDER BY webhook_next_at, id LIMIT 1) "
                                       "RETURNING ") +
                               kRunEndColumns);
  q.bind(1, worker_id);
  q.bind(2, now_seconds() + options_.lease_seconds);
  q.bind(3, now);
  q.bind(4, store_shared::new_token());
  if (!q.executeStep()) return std::nullopt;
  RunEnd end = read_run_end(q);
  q.reset();
  tx.commit();
  return end;
}

bool SqliteQueueStore::record_webhook_attempt(const RunEnd& claimed, const std::string& outcome, bool delivered,
                                              std::optional<double> retry_at) {
  check_file_identity();
  SQLite::Statement q(db_, "UPDATE run_ends SET webhook_attempts = webhook_attempts + 1, "
                           "webhook_log = json_insert(webhook_log, '$[#]', json_object('at', ?1, 'outcome', ?2)), "
                           "webhook_state = CASE WHEN ?3 THEN 'delivered' WHEN ?4 IS NOT NULL THEN 'owed' ELSE 'gave_up' END, "
                           "webhook_next_at = CASE WHEN NOT ?3 AND ?4 IS NOT NULL THEN ?4 ELSE webhook_next_at END, "
                           "webhook_lease_expires = 0 WHERE id = ?5 AND webhook_state = 'sending' AND webhook_token = ?6");
  q.bind(1, now_seconds());
  q.bind(2, outcome);
  q.bind(3, delivered ? 1 : 0);
  if (retry_at) {
    q.bind(4, *retry_at);
  } else {
    q.bind(4);
  }
  q.bind(5, claimed.id);
  q.bind(6, claimed.webhook_claim);
  return q.exec() == 1;
}

std::vector<RunEnd> SqliteQueueStore::run_ends(int64_t run_id) {
  SQLite::Statement q(db_, std::string("SELECT ") + kRunEndColumns + " FROM run_ends WHERE run_id = ? ORDER BY id");
  q.bind(1, run_id);
  std::vector<RunEnd> ends;
  while (q.executeStep()) ends.push_back(read_run_end(q));
  return ends;
}

}  // namespace rgbaq::storage
