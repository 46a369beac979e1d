// The PostgreSQL queue's schema, version by version, and the migration that takes a database forward.
#include <algorithm>
#include <stdexcept>

#include "storage/postgres/postgres_store_helpers.h"

namespace rgbaq::storage::postgres_store {

namespace {

// Schema versions: migrations()[v] takes the database from version v to v + 1. Times are the server's
// clock (rgbaq_now), so leases mean the same on every host.
const std::vector<const char*>& migrations() {
  static const std::vector<const char*> kMigrations = {
    R"(
CREATE FUNCTION rgbaq_now() RETURNS double precision LANGUAGE sql VOLATILE AS
  $$ SELECT extract(epoch FROM clock_timestamp())::double precision $$;
CREATE TABLE runs (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  options TEXT NOT NULL,
  out_dir TEXT NOT NULL,
  created_at DOUBLE PRECISION NOT NULL,
  pending BOOLEAN NOT NULL DEFAULT TRUE,          -- a submit still adding batches: invisible
  touched_at DOUBLE PRECISION NOT NULL DEFAULT 0  -- its last batch: a pending run left alone is discarded
);
CREATE INDEX runs_pending ON runs (id) WHERE pending;
CREATE TABLE workers (
  id BIGSERIAL PRIMARY KEY,
  host TEXT NOT NULL,
  boot_id TEXT NOT NULL,
  pid BIGINT NOT NULL,
  engine TEXT NOT NULL,
  device TEXT NOT NULL,
  started_at DOUBLE PRECISION NOT NULL,
  heartbeat_at DOUBLE PRECISION NOT NULL,
  images_done BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE jobs (
  id BIGSERIAL PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES runs(id),
  prompt TEXT NOT NULL,
  seed BIGINT NOT NULL,                 -- the uint64 seed's bits
  width INTEGER NOT NULL,
  height INTEGER NOT NULL,
  name TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'canceled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  interruptions INTEGER NOT NULL DEFAULT 0,
  not_before DOUBLE PRECISION NOT NULL DEFAULT 0,
  worker TEXT NOT NULL DEFAULT '',
  worker_id BIGINT NOT NULL DEFAULT 0,  -- the lease holder while running
  host TEXT NOT NULL DEFAULT '',        -- the host that rendered (or renders) it
  lease_expires DOUBLE PRECISION NOT NULL DEFAULT 0,
  created_at DOUBLE PRECISION NOT NULL,
  started_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  finished_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
  error TEXT NOT NULL DEFAULT '',
  errors JSONB NOT NULL DEFAULT '[]',
  output_path TEXT NOT NULL,
  metadata TEXT NOT NULL DEFAULT '',
  content_key BIGINT NOT NULL,
  prompt_key BIGINT NOT NULL
);
CREATE INDEX jobs_claim ON jobs (priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_claim_prompt ON jobs (prompt_key, priority, id) WHERE state = 'queued';
CREATE INDEX jobs_running ON jobs (worker_id) WHERE state = 'running';
CREATE INDEX jobs_run ON jobs (run_id, state);
CREATE INDEX jobs_content ON jobs (content_key);
-- Per-run counters kept by a trigger, in 16 stripes so that concurrent claims do not wait on one row;
-- a count is the sum over the stripes. (v3 changes how a stripe is chosen.)
CREATE TABLE run_counts (
  run_id BIGINT NOT NULL,
  state TEXT NOT NULL,
  stripe INTEGER NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (run_id, state, stripe)
);
CREATE FUNCTION rgbaq_count_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.state = 'done' THEN
    RAISE EXCEPTION 'a done job cannot change state (job %)', OLD.id;
  END IF;
  INSERT INTO run_counts VALUES (OLD.run_id, OLD.state, OLD.id % 16, -1)
    ON CONFLICT (run_id, state, stripe) DO UPDATE SET n = run_counts.n - 1;
  INSERT INTO run_counts VALUES (NEW.run_id, NEW.state, NEW.id % 16, 1)
    ON CONFLICT (run_id, state, stripe) DO UPDATE SET n = run_counts.n + 1;
  RETURN NEW;
END $$;
CREATE TRIGGER jobs_state_change BEFORE UPDATE OF state ON jobs FOR EACH ROW
  WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION rgbaq_count_state();
CREATE TABLE outputs (
  path TEXT PRIMARY KEY,
  content_key BIGINT NOT NULL,
  run_id BIGINT NOT NULL
);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
)",
    // v2: each job's LoRA set ("name:weight;...", '' for none), and claims that prefer a loaded set.
    R"(
ALTER TABLE jobs ADD COLUMN lora TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_claim_lora ON jobs (lora, priority, id) WHERE state = 'queued';
)",
    // v3: the counters move once per statement, not per job: a statement-level trigger sums the state
    // changes of all the rows a statement updated (a bulk cancel of 100,000 jobs is one upsert per state,
    // not 200,000 upserts of the same rows), in the stripe of the connection making them
    // (pg_backend_pid() % 16), so concurrent claims neither wait on each other's counter rows nor
    // deadlock on them (with stripes by job id, two claimers each completing a job and claiming another
    // could each hold the row the other wants next). A submit no longer pays a foreign-key check per job:
    // append_jobs locks its pending run row instead and discard_run takes what a racing append added.
    // Writes that a dropped connection makes run again are recognised: a submit's batches by their token
    // in run_batches (kept until the run is published or discarded), a claim by its token on the job.
    // (Each statement may run again: a test takes a queue back to version 1.)
    R"(
DROP TRIGGER IF EXISTS jobs_state_change ON jobs;
DROP FUNCTION IF EXISTS rgbaq_count_state();
CREATE OR REPLACE FUNCTION rgbaq_refuse_done_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'a done job cannot change state (job %)', OLD.id;
END $$;
DROP TRIGGER IF EXISTS jobs_done_is_final ON jobs;
CREATE TRIGGER jobs_done_is_final BEFORE UPDATE OF state ON jobs FOR EACH ROW
  WHEN (OLD.state = 'done' AND NEW.state IS DISTINCT FROM 'done') EXECUTE FUNCTION rgbaq_refuse_done_change();
CREATE OR REPLACE FUNCTION rgbaq_count_states() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- A row whose state did not change adds -1 and +1 to the same counter: no change, no write.
  INSERT INTO run_counts (run_id, state, stripe, n)
    SELECT run_id, state, pg_backend_pid() % 16, sum(d) FROM
      (SELECT run_id, state, -1 AS d FROM old_rows UNION ALL SELECT run_id, state, 1 FROM new_rows) c
    GROUP BY run_id, state HAVING sum(d) <> 0
    ON CONFLICT (run_id, state, stripe) DO UPDATE SET n = run_counts.n + excluded.n;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS jobs_count_states ON jobs;
CREATE TRIGGER jobs_count_states AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION rgbaq_count_states();
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_run_id_fkey;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS claim_token BIGINT NOT NULL DEFAULT 0;
CREATE TABLE IF NOT EXISTS run_batches (
  run_id BIGINT NOT NULL,
  token BIGINT NOT NULL,
  inserted BIGINT NOT NULL,
  skipped BIGINT NOT NULL,
  PRIMARY KEY (run_id, token)
);
)",
    // v4: a running job's progress, recorded by its worker so that watchers on any host see it. Progress
    // written before the job's current lease began (progress_at < started_at) is an earlier lease's.
    R"(
ALTER TABLE jobs ADD COLUMN step INTEGER NOT NULL DEFAULT 0, ADD COLUMN steps INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN decoding BOOLEAN NOT NULL DEFAULT FALSE, ADD COLUMN progress_at DOUBLE PRECISION NOT NULL DEFAULT 0;
)",
    // v5: running jobs indexed by (worker, job). Every fenced transition reads "job N, while worker W
    // holds it", and the planner takes this small partial index for it: keyed by the worker alone, a
    // complete read the entries the worker's earlier jobs left there, until vacuum removed them.
    R"(
DROP INDEX IF EXISTS jobs_running;
CREATE INDEX jobs_running ON jobs (worker_id, id) WHERE state = 'running';
)",
    // v6: a person's mark on a job ('' none, 'star', 'reject'), when and by whom it was set. The index
    // holds marked jobs only, and a claim or a completion never changes its columns.
    R"(
ALTER TABLE jobs ADD COLUMN mark TEXT NOT NULL DEFAULT '' CHECK (mark IN ('', 'star', 'reject')),
  ADD COLUMN marked_at DOUBLE PRECISION NOT NULL DEFAULT 0, ADD COLUMN marked_by TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_marked ON jobs (mark, id) WHERE mark <> '';
)",
    // v7: an interruption that recurs at one step of a job (the kernel killing every try of a job too
    // big for memory) is the job's fault: the step its lease last recorded when it was last interrupted
    // (-1: none recorded), and how many interruptions in a row happened at that step.
    R"(
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS interrupted_at_step INTEGER NOT NULL DEFAULT -1,
  ADD COLUMN IF NOT EXISTS interruptions_at_step INTEGER NOT NULL DEFAULT 0;
)",
    // v8: the daemon dying with a job in hand again and again while no other job finishes is the job's
    // doing, wherever in its render it dies: the deaths in its current row, their steps ("3, 8, ?"), and
    // the queue's count of finished jobs at the last of them (grown by the next death: another job
    // finished in between, a new row). Forgotten runs' finished jobs are tallied in settings
    // ('forgotten_done'), so that the count never goes back.
    R"(
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS deaths_in_row INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS death_steps TEXT NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS done_at_death BIGINT NOT NULL DEFAULT 0;
)",
    // v9: templates, the alpha check and re-seeding (issue 40), run ends and what they owe (issue 41).
    // A job's template and choices; its row (jobs of one expansion, differing only in seed), indexed
    // with the seed for re-seeding, which asks which seeds a row has; the re-seed rule and the links
    // between a job and the one re-seeding it; its alpha check. A run's ends: each end of a run (no job
    // queued or running) is a row in run_ends, recorded in the transaction that ended it, with the hook
    // and webhook it owes; `ended` marks a run whose latest end is recorded (a retry clears it). Runs
    // that had ended before this version owe nothing; open runs are indexed, for recover()'s sweep of
    // the ends a crash missed. A worker says whether its daemon runs hooks and sends webhooks: an end
    // owes what any registered worker can do. A claim of a hook or a webhook carries a token, as a job's
    // does, by which a claim run again after a dropped connection finds what the first took, and which
    // fences a webhook's attempt to the claim it was made under.
    R"(
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS template_text TEXT NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS choices_json TEXT NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS row_key BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS reseed_on TEXT NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS reseed_max INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS replaces BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS replaced_by BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS qa_json TEXT NOT NULL DEFAULT '',
  ADD COLUMN IF NOT EXISTS qa_flags TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS jobs_row ON jobs (run_id, row_key, seed);
ALTER TABLE runs ADD COLUMN IF NOT EXISTS ended BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE runs SET ended = TRUE WHERE NOT pending AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.run_id = runs.id AND
  jobs.state IN ('queued', 'running'));
CREATE INDEX IF NOT EXISTS runs_open ON runs (id) WHERE NOT ended;
ALTER TABLE workers ADD COLUMN IF NOT EXISTS runs_hooks BOOLEAN NOT NULL DEFAULT FALSE,
  ADD COLUMN IF NOT EXISTS sends_webhooks BOOLEAN NOT NULL DEFAULT FALSE;
CREATE TABLE IF NOT EXISTS run_ends (
  id BIGSERIAL PRIMARY KEY,
  run_id BIGINT NOT NULL,
  ended_at DOUBLE PRECISION NOT NULL,
  done BIGINT NOT NULL,
  failed BIGINT NOT NULL,
  canceled BIGINT NOT NULL,
  hook_state TEXT NOT NULL CHECK (hook_state IN ('', 'owed', 'running', 'done', 'lost')),
  hook_outcome TEXT NOT NULL DEFAULT '',
  hook_worker_id BIGINT NOT NULL DEFAULT 0,
  hook_pid BIGINT NOT NULL DEFAULT 0,
  hook_started_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  hook_finished_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  hook_token BIGINT NOT NULL DEFAULT 0,
  webhook_state TEXT NOT NULL CHECK (webhook_state IN ('', 'owed', 'sending', 'delivered', 'gave_up')),
  webhook_attempts INTEGER NOT NULL DEFAULT 0,
  webhook_next_at DOUBLE PRECISION NOT NULL DEFAULT 0,
  webhook_worker_id BIGINT NOT NULL DEFAULT 0,
  webhook_lease_expires DOUBLE PRECISION NOT NULL DEFAULT 0,
  webhook_token BIGINT NOT NULL DEFAULT 0,
  webhook_log JSONB NOT NULL DEFAULT '[]'
);
CREATE INDEX IF NOT EXISTS run_ends_run ON run_ends (run_id, id);
CREATE INDEX IF NOT EXISTS run_ends_hook ON run_ends (hook_state, id) WHERE hook_state IN ('owed', 'running');
CREATE INDEX IF NOT EXISTS run_ends_webhook ON run_ends (webhook_state, webhook_next_at)
  WHERE webhook_state IN ('owed', 'sending');
-- The ends of those of the runs `ids` that have no queued or running job left, recorded once each, owing
-- a hook / a webhook when the caller can run one (the two flags) or any registered worker can. Whoever
-- may end a run calls it after its own change, in its transaction: it locks the runs' rows (FOR NO KEY
-- UPDATE: nothing here changes a key), and each statement of a VOLATILE function in READ COMMITTED
-- takes a new snapshot, so of two transactions finishing a run's last jobs at once the second to get
-- the lock sees the first's jobs as committed, and records the end the first could not see.
CREATE OR REPLACE FUNCTION rgbaq_end_runs(ids BIGINT[], owe_hook BOOLEAN, owe_webhook BOOLEAN) RETURNS BIGINT
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  recorded BIGINT;
BEGIN
  PERFORM 1 FROM runs WHERE id = ANY(ids) AND NOT ended AND NOT pending ORDER BY id FOR NO KEY UPDATE;
  WITH closed AS (
    UPDATE runs r SET ended = TRUE WHERE r.id = ANY(ids) AND NOT r.ended AND NOT r.pending AND NOT EXISTS (
      SELECT 1 FROM jobs j WHERE j.run_id = r.id AND j.state IN ('queued', 'running')) RETURNING r.id)
  INSERT INTO run_ends (run_id, ended_at, done, failed, canceled, hook_state, webhook_state, webhook_next_at)
    SELECT e.id, rgbaq_now(),
      (SELECT coalesce(sum(c.n), 0) FROM run_counts c WHERE c.run_id = e.id AND c.state = 'done'),
      (SELECT coalesce(sum(c.n), 0) FROM run_counts c WHERE c.run_id = e.id AND c.state = 'failed'),
      (SELECT coalesce(sum(c.n), 0) FROM run_counts c WHERE c.run_id = e.id AND c.state = 'canceled'),
      CASE WHEN owe_hook OR EXISTS (SELECT 1 FROM workers WHERE runs_hooks) THEN 'owed' ELSE '' END,
      CASE WHEN owe_webhook OR EXISTS (SELECT 1 FROM workers WHERE sends_webhooks) THEN 'owed' ELSE '' END, 0
    FROM closed e ORDER BY e.id;
  GET DIAGNOSTICS recorded = ROW_COUNT;
  RETURN recorded;
END $$;
)",
  };
  return kMigrations;
}

}  // namespace

size_t schema_versions() { return migrations().size(); }

void migrate(pg::Connection& db, size_t up_to) {
  transaction(db, [&] {
    // Daemons starting together migrate one at a time.
    db.exec("SELECT pg_advisory_xact_lock(7366616)");
    db.exec("CREATE TABLE IF NOT EXISTS rgbaq_schema_version (version INTEGER NOT NULL)");
    auto r = db.exec("SELECT version FROM rgbaq_schema_version");
    size_t version = 0;
    if (r.empty()) {
      db.exec("INSERT INTO rgbaq_schema_version (version) VALUES (0)");
    } else {
      version = static_cast<size_t>(r.int64(0, 0));
    }
    if (version > migrations().size()) {
      throw std::runtime_error(db.location() + ": the queue database has schema version " + std::to_string(version) +
                               "; this rgbaq knows versions up to " + std::to_string(migrations().size()));
    }
    for (; version < std::min(up_to, migrations().size()); ++version) db.exec(migrations()[version]);
    db.exec("UPDATE rgbaq_schema_version SET version = $1", {std::to_string(version)});
    return 0;
  });
}

}  // namespace rgbaq::storage::postgres_store
