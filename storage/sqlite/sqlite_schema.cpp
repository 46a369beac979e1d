// The SQLite queue's schema, version by version, and the migration that takes a file forward.
#include <algorithm>
#include <stdexcept>

#include "storage/sqlite/sqlite_store_helpers.h"

namespace rgbaq::storage::sqlite_store {

namespace {

// Schema versions: migrations()[v] takes the database from version v to v + 1.
const std::vector<const char*>& migrations() {
  static const std::vector<const char*> kMigrations = {
    R"(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  options TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  prompt TEXT NOT NULL,
  seed INTEGER NOT NULL,              -- the uint64 seed's bits as int64
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  name TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'canceled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  not_before REAL NOT NULL DEFAULT 0, -- backoff after a failure
  worker TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL,
  started_at REAL NOT NULL DEFAULT 0,
  finished_at REAL NOT NULL DEFAULT 0,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  errors TEXT NOT NULL DEFAULT '[]',
  output_path TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '',
  content_key INTEGER NOT NULL,        -- 64-bit keys as int64
  prompt_key INTEGER NOT NULL
);
-- Few indexes, and those a state change touches are partial over queued jobs only: every index a
-- claim updates costs its page in every durable commit.
CREATE INDEX jobs_claim ON jobs (priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_claim_prompt ON jobs (prompt_key, priority, id) WHERE state = 'queued';
CREATE INDEX jobs_run ON jobs (run_id);
CREATE INDEX jobs_content ON jobs (content_key);
-- Per-run counters kept by a trigger, so status never scans the jobs.
CREATE TABLE run_counts (
  run_id INTEGER NOT NULL,
  state TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (run_id, state)
) WITHOUT ROWID;
CREATE TRIGGER jobs_state_change AFTER UPDATE OF state ON jobs WHEN OLD.state != NEW.state BEGIN
  UPDATE run_counts SET n = n - 1 WHERE run_id = OLD.run_id AND state = OLD.state;
  INSERT INTO run_counts (run_id, state, n) VALUES (NEW.run_id, NEW.state, 1)
    ON CONFLICT (run_id, state) DO UPDATE SET n = n + 1;
END;
-- A done job never changes state again.
CREATE TRIGGER jobs_done_is_final BEFORE UPDATE OF state ON jobs WHEN OLD.state = 'done' AND NEW.state != 'done' BEGIN
  SELECT RAISE(ABORT, 'a done job cannot change state');
END;
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
)",
    // v2: submits in batches (a run stays pending until its last batch), output paths owned once.
    R"(
ALTER TABLE runs ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;
CREATE TABLE outputs (
  path TEXT PRIMARY KEY,
  content_key INTEGER NOT NULL,  -- the job content that owns it: the same image may be resubmitted
  run_id INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO outputs (path, content_key, run_id) SELECT output_path, content_key, run_id FROM jobs ORDER BY id;
ALTER TABLE jobs ADD COLUMN interruptions INTEGER NOT NULL DEFAULT 0;
)",
    // v3: workers with heartbeats, and leases that recovery takes back only once they expire.
    R"(
CREATE TABLE workers (
  id INTEGER PRIMARY KEY,
  host TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  pid INTEGER NOT NULL,
  engine TEXT NOT NULL,
  device TEXT NOT NULL,
  started_at REAL NOT NULL,
  heartbeat_at REAL NOT NULL,
  images_done INTEGER NOT NULL DEFAULT 0
);
ALTER TABLE jobs ADD COLUMN worker_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_expires REAL NOT NULL DEFAULT 0;  -- 0 for jobs running before v3: expired
CREATE INDEX jobs_running ON jobs (worker_id) WHERE state = 'running';
ALTER TABLE runs ADD COLUMN touched_at REAL NOT NULL DEFAULT 0;
)",
    // v4: each job's LoRA set ("name:weight;...", '' for none), and claims that prefer a loaded set.
    R"(
ALTER TABLE jobs ADD COLUMN lora TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_claim_lora ON jobs (lora, priority, id) WHERE state = 'queued';
)",
    // v5: a running job's progress, recorded by its worker so that watchers on any host see it. Progress
    // written before the job's current lease began (progress_at < started_at) is an earlier lease's.
    R"(
ALTER TABLE jobs ADD COLUMN step INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN decoding INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN progress_at REAL NOT NULL DEFAULT 0;
)",
    // v6: a person's mark on a job ('' none, 'star', 'reject'), when and by whom it was set. The index
    // holds marked jobs only, and a claim or a completion never changes its columns.
    R"(
ALTER TABLE jobs ADD COLUMN mark TEXT NOT NULL DEFAULT '' CHECK (mark IN ('', 'star', 'reject'));
ALTER TABLE jobs ADD COLUMN marked_at REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN marked_by TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_marked ON jobs (mark, id) WHERE mark <> '';
)",
    // v7: an interruption that recurs at one step of a job (the kernel killing every try of a job too
    // big for memory) is the job's fault: the step its lease last recorded when it was last interrupted
    // (-1: none recorded), and how many interruptions in a row happened at that step.
    R"(
ALTER TABLE jobs ADD COLUMN interrupted_at_step INTEGER NOT NULL DEFAULT -1;
ALTER TABLE jobs ADD COLUMN interruptions_at_step INTEGER NOT NULL DEFAULT 0;
)",
    // v8: the daemon dying with a job in hand again and again while no other job finishes is the job's
    // doing, wherever in its render it dies: the deaths in its current row, their steps ("3, 8, ?"), and
    // the queue's count of finished jobs at the last of them (grown by the next death: another job
    // finished in between, a new row). Forgotten runs' finished jobs are tallied in settings
    // ('forgotten_done'), so that the count never goes back.
    R"(
ALTER TABLE jobs ADD COLUMN deaths_in_row INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN death_steps TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN done_at_death INTEGER NOT NULL DEFAULT 0;
)",
    // v9: templates, the alpha check and re-seeding (issue 40), run ends and what they owe (issue 41).
    // A job's template and choices; its row (jobs of one expansion, differing only in seed), indexed
    // with the seed for re-seeding, which asks which seeds a row has; the re-seed rule and the links
    // between a job and the one re-seeding it; its alpha check. A run's ends: each end of a run (no job
    // queued or running) is a row in run_ends, recorded in the transaction that ended it, with the hook
    // and webhook it owes; `ended` marks a run whose latest end is recorded (a retry clears it). Runs
    // that had ended before this version owe nothing. A worker says whether its daemon runs hooks and
    // sends webhooks: an end owes what any registered worker can do. A webhook claim's token fences the
    // attempt made under it. (jobs_run stays: its implicit rowid gives a run's jobs in id order, which
    // listings and their pages after an id read without a sort; jobs_row, by row and seed, would not.)
    R"(
ALTER TABLE jobs ADD COLUMN template_text TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN choices_json TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN row_key INTEGER NOT NULL DEFAULT 0;  -- 64-bit key as int64
ALTER TABLE jobs ADD COLUMN reseed_on TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN reseed_max INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN replaces INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN replaced_by INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN qa_json TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN qa_flags TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_row ON jobs (run_id, row_key, seed);
ALTER TABLE workers ADD COLUMN runs_hooks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN sends_webhooks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET ended = 1 WHERE pending = 0 AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.run_id = runs.id AND
  jobs.state IN ('queued', 'running'));
CREATE INDEX runs_open ON runs (id) WHERE ended = 0;
CREATE TABLE run_ends (
  id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never given twice: a hook's worker finishes it by this id
  run_id INTEGER NOT NULL,
  ended_at REAL NOT NULL,
  done INTEGER NOT NULL,
  failed INTEGER NOT NULL,
  canceled INTEGER NOT NULL,
  hook_state TEXT NOT NULL CHECK (hook_state IN ('', 'owed', 'running', 'done', 'lost')),
  hook_outcome TEXT NOT NULL DEFAULT '',
  hook_worker_id INTEGER NOT NULL DEFAULT 0,
  hook_pid INTEGER NOT NULL DEFAULT 0,
  hook_started_at REAL NOT NULL DEFAULT 0,
  hook_finished_at REAL NOT NULL DEFAULT 0,
  webhook_state TEXT NOT NULL CHECK (webhook_state IN ('', 'owed', 'sending', 'delivered', 'gave_up')),
  webhook_attempts INTEGER NOT NULL DEFAULT 0,
  webhook_next_at REAL NOT NULL DEFAULT 0,
  webhook_worker_id INTEGER NOT NULL DEFAULT 0,
  webhook_lease_expires REAL NOT NULL DEFAULT 0,
  webhook_token INTEGER NOT NULL DEFAULT 0,
  webhook_log TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX run_ends_run ON run_ends (run_id, id);
CREATE INDEX run_ends_hook ON run_ends (hook_state, id) WHERE hook_state IN ('owed', 'running');
CREATE INDEX run_ends_webhook ON run_ends (webhook_state, webhook_next_at) WHERE webhook_state IN ('owed', 'sending');
)",
  };
  return kMigrations;
}

}  // namespace

size_t schema_versions() { return migrations().size(); }

void migrate(SQLite::Database& db, const std::filesystem::path& path, size_t up_to) {
  SQLite::Transaction tx(db, SQLite::TransactionBehavior::IMMEDIATE);
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  size_t version = 0;
  {
    // Done reading before the migrations run: a read left open makes a DROP in them fail ("table is locked").
    SQLite::Statement q(db, "SELECT version FROM schema_version");
    if (q.executeStep()) version = static_cast<size_t>(q.getColumn(0).getInt());
  }
  if (version == 0) db.exec("INSERT INTO schema_version (version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM schema_version)");
  if (version > migrations().size()) {
    throw std::runtime_error(path.string() + ": the queue database has schema version " + std::to_string(version) +
                             "; this rgbaq knows versions up to " + std::to_string(migrations().size()));
  }
  for (; version < std::min(up_to, migrations().size()); ++version) db.exec(migrations()[version]);
  SQLite::Statement set(db, "UPDATE schema_version SET version = ?");
  set.bind(1, static_cast<int64_t>(version));
  set.exec();
  tx.commit();
}

}  // namespace rgbaq::storage::sqlite_store
