#include "storage/postgres/postgres_queue_store.h"

#include <array>
#include <chrono>
#include <stdexcept>
#include <string_view>

#include "storage/postgres/pg_connection.h"
#include "storage/postgres/postgres_store_helpers.h"

namespace rgbaq::storage {

using postgres_store::array_literal;
using postgres_store::num;
using postgres_store::Params;
using postgres_store::real;
using postgres_store::transaction;
using store_shared::kStillOwner;
using store_shared::new_token;

namespace {

constexpr const char* kVisible = " AND run_id NOT IN (SELECT id FROM runs WHERE pending)";

constexpr const char* kJobColumns =
    "id, run_id, prompt, seed, width, height, name, priority, state, attempts, worker, created_at, started_at, "
    "finished_at, cancel_requested, error, errors::text, output_path, metadata, prompt_key, content_key, interruptions, "
    "worker_id, host, lease_expires, lora, step, steps, decoding, progress_at, mark, marked_at, marked_by, deaths_in_row, "
    "template_text, choices_json, row_key, reseed_on, reseed_max, replaces, replaced_by, qa_json, qa_flags";

Job read_job(const pg::Result& r, int row) {
  Job j;
  j.id = r.int64(row, 0);
  j.run_id = r.int64(row, 1);
  j.prompt = r.text(row, 2);
  j.seed = static_cast<uint64_t>(r.int64(row, 3));
  j.width = static_cast<int>(r.int64(row, 4));
  j.height = static_cast<int>(r.int64(row, 5));
  j.name = r.text(row, 6);
  j.priority = static_cast<int>(r.int64(row, 7));
  j.state = parse_state(r.text(row, 8)).value_or(JobState::kFailed);
  j.attempts = static_cast<int>(r.int64(row, 9));
  j.worker = r.text(row, 10);
  j.created_at = r.real(row, 11);
  j.started_at = r.real(row, 12);
  j.finished_at = r.real(row, 13);
  j.cancel_requested = r.boolean(row, 14);
  j.error = r.text(row, 15);
  j.errors_json = r.text(row, 16);
  j.output_path = r.text(row, 17);
  j.metadata_json = r.text(row, 18);
  j.prompt_key = static_cast<uint64_t>(r.int64(row, 19));
  j.content_key = static_cast<uint64_t>(r.int64(row, 20));
  j.interruptions = static_cast<int>(r.int64(row, 21));
  j.worker_id = r.int64(row, 22);
  j.host = r.text(row, 23);
  j.lease_expires = r.real(row, 24);
  j.lora = r.text(row, 25);
  if (j.state == JobState::kRunning && r.real(row, 29) >= j.started_at) {  // this lease's progress
    j.step = static_cast<int>(r.int64(row, 26));
    j.steps = static_cast<int>(r.int64(row, 27));
    j.decoding = r.boolean(row, 28);
  }
  j.mark = parse_mark(r.text(row, 30)).value_or(Mark::kNone);
  j.marked_at = r.real(row, 31);
  j.marked_by = r.text(row, 32);
  j.deaths_in_row = static_cast<int>(r.int64(row, 33));
  j.template_text = r.text(row, 34);
  j.choices_json = r.text(row, 35);
  j.row_key = static_cast<uint64_t>(r.int64(row, 36));
  j.reseed_on = r.text(row, 37);
  j.reseed_max = static_cast<int>(r.int64(row, 38));
  j.replaces = r.int64(row, 39);
  j.replaced_by = r.int64(row, 40);
  j.qa_json = r.text(row, 41);
  j.qa_flags = r.text(row, 42);
  return j;
}

// Statements over a list of job ids take at most this many (a bigint[] parameter) each: no one
// statement's array, plan or row locks grow without bound.
constexpr size_t kIdsPerStatement = 10000;

// `ids` in slices of kIdsPerStatement, each as a bigint[] literal, in order.
std::vector<std::string> id_slices(const std::vector<int64_t>& ids) {
  std::vector<std::string> slices;
  for (size_t at = 0; at < ids.size(); at += kIdsPerStatement) {
    slices.push_back(array_literal(std::vector<int64_t>(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                                        ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), at + kIdsPerStatement)))));
  }
  return slices;
}

// What retry() and retry_jobs() set: queued again, as if new, with its error history kept.
constexpr const char* kRetrySet =
    "state = 'queued', attempts = 0, interruptions = 0, not_before = 0, error = '', cancel_requested = FALSE, "
    "finished_at = 0, worker_id = 0, lease_expires = 0, interrupted_at_step = -1, interruptions_at_step = 0, "
    "deaths_in_row = 0, death_steps = ''";

// A text[] literal: each element double-quoted, with its quotes and backslashes escaped.
std::string text_array_literal(const std::vector<std::string>& values) {
  std::string a = "{";
  for (const auto& v : values) {
    if (a.size() > 1) a += ',';
    a += '"';
    for (const char c : v) {
      if (c == '"' || c == '\\') a += '\\';
      a += c;
    }
    a += '"';
  }
  return a + "}";
}

// A queued job that may be claimed now: its backoff over, its run published.
const std::string kReady = std::string("state = 'queued' AND not_before <= rgbaq_now()") + kVisible;

// The claim: $1 worker, $2 lease seconds, $3 the claim's token, then the cached prompt keys and the loaded
// LoRA sets (each only when not empty: a parameter a statement does not use has no type). Among the jobs of
// the top priority, one with a loaded LoRA set and a cached prompt, then one with a loaded set, then one
// with a cached prompt, else the first by priority, then submit order. A preference whose list is empty
// is left out of the statement (four statements), so a claim without preferences is one index probe.
// In two parts, which complete_and_claim joins to a complete: the CTE `top` (the top priority) and the
// UPDATE that reads it, without its RETURNING.
struct ClaimSql {
  std::string top, update;
};
ClaimSql claim_sql(bool prompts, bool loras) {
  const std::string keys = "$4::bigint[]", sets = prompts ? "$5::text[]" : "$4::text[]";
  // The top priority is that of the first ready job, locked or not (one being claimed still sets it).
  const std::string top = "(SELECT priority FROM top)";
  // A preference: for each of its keys, the key's first ready job of the top priority (one probe of the
  // key's index, whatever the statistics say: a walk of the claim index filtered by key, which the planner
  // picks on a table it has not analysed since a big submit, reads every queued job when no key matches);
  // the earliest of them, unless another claim holds it, when the next preference decides.
  auto preferred = [&](const std::string& list, const std::string& column, const std::string& also) {
    return "(SELECT id FROM jobs WHERE state = 'queued' AND id = (SELECT min(f.id) FROM unnest(" + list +
           ") AS k(key) CROSS JOIN LATERAL (SELECT id FROM jobs WHERE " + kReady + " AND " + column + " = k.key" + also +
           " AND priority = " + top + " ORDER BY id LIMIT 1) f) FOR UPDATE SKIP LOCKED), ";
  };
  ClaimSql sql;
  sql.top = "top AS (SELECT priority FROM jobs WHERE " + kReady + " ORDER BY priority DESC, id LIMIT 1)";
  sql.update = "UPDATE jobs SET state = 'running', attempts = attempts + 1, worker_id = $1, "
               "worker = coalesce((SELECT host || ':' || pid FROM workers WHERE id = $1), ''), "
               "host = coalesce((SELECT host FROM workers WHERE id = $1), ''), "
               "started_at = rgbaq_now(), lease_expires = rgbaq_now() + $2, claim_token = $3 "
               "WHERE state = 'queued' AND NOT EXISTS (SELECT 1 FROM settings WHERE key = 'paused' AND value = '1') "
               // a worker the queue does not know takes nothing: no heartbeat would renew its lease
               "AND EXISTS (SELECT 1 FROM workers WHERE id = $1) AND id = coalesce(";
  if (prompts && loras) sql.update += preferred(keys, "prompt_key", " AND lora = ANY(" + sets + ")");
  if (loras) sql.update += preferred(sets, "lora", "");
  if (prompts) sql.update += preferred(keys, "prompt_key", "");
  sql.update += "(SELECT id FROM jobs WHERE " + kReady + " ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED))";
  return sql;
}

// Which of the four claim statements: by whether there are cached prompts and loaded LoRA sets.
int claim_variant(const std::vector<uint64_t>& preferred, const std::vector<std::string>& preferred_loras) {
  return (preferred.empty() ? 0 : 1) + (preferred_loras.empty() ? 0 : 2);
}
// The claim of a variant (bit 0: cached prompts, bit 1: loaded LoRA sets).
ClaimSql claim_sql(int variant) { return claim_sql((variant & 1) != 0, (variant & 2) != 0); }

// A claim's parameters, in claim_sql's order.
Params claim_params(int64_t worker_id, double lease_seconds, const std::string& token, const std::vector<uint64_t>& preferred,
                    const std::vector<std::string>& preferred_loras) {
  Params params{num(worker_id), real(lease_seconds), token};
  if (!preferred.empty()) params.push_back(array_literal(preferred));
  if (!preferred_loras.empty()) params.push_back(text_array_literal(preferred_loras));
  return params;
}

// The complete as CTEs: `done` (the job, if it still runs under the worker, with what a re-seed needs)
// and `counted` (the worker's image count). The arguments name the parameters: the job, its output path,
// its metadata, the worker, its alpha check's JSON and flags.
std::string complete_ctes(const std::string& job, const std::string& path, const std::string& metadata,
                          const std::string& worker, const std::string& qa_json, const std::string& qa_flags) {
  return "done AS (UPDATE jobs SET state = 'done', finished_at = rgbaq_now(), output_path = " + path +
         ", metadata = " + metadata + ", error = '', lease_expires = 0, qa_json = " + qa_json + ", qa_flags = " + qa_flags +
         " WHERE id = " + job + " AND state = 'running' AND worker_id = " + worker +
         " RETURNING worker_id, run_id, row_key, reseed_max, priority, cancel_requested), "
         "counted AS (UPDATE workers SET images_done = images_done + 1 WHERE id IN (SELECT worker_id FROM done))";
}

}  // namespace

PostgresQueueStore::PostgresQueueStore(const std::string& url, StoreOptions options) : options_(options) {
  const auto reconnect_for = std::chrono::milliseconds(static_cast<int64_t>(options_.reconnect_seconds * 1000));
  try {
    db_ = std::make_unique<pg::Connection>(url, reconnect_for);
  } catch (const pg::ConnectionLost& e) {
    throw std::runtime_error(e.what());
  }
  migrate();
}

PostgresQueueStore::~PostgresQueueStore() = default;

std::string PostgresQueueStore::location() const { return db_->location(); }

void PostgresQueueStore::migrate() { postgres_store::migrate(*db_, postgres_store::schema_versions()); }

void PostgresQueueStore::create_at_version(const std::string& url, int version) {
  pg::Connection db(url, std::chrono::milliseconds(0));
  postgres_store::migrate(db, static_cast<size_t>(version));
}

int PostgresQueueStore::schema_version() {
  return db_->retrying([&] {
    const auto r = db_->exec("SELECT version FROM rgbaq_schema_version");
    return r.empty() ? 0 : static_cast<int>(r.int64(0, 0));
  });
}

int64_t PostgresQueueStore::begin_run(const RunOptions& run) {
  return db_->retrying([&] {
    return db_->exec("INSERT INTO runs (name, options, out_dir, created_at, pending, touched_at) "
                     "VALUES ($1, $2, $3, rgbaq_now(), TRUE, rgbaq_now()) RETURNING id",
                     {run.name, run.options_json, run.out_dir})
        .int64(0, 0);
  });
}

SubmitResult PostgresQueueStore::append_jobs(int64_t run_id, const RunOptions& run, const std::vector<NewJob>& jobs) {
  // One COPY into a temporary table, then set-wise statements: a batch costs a few round trips, not
  // one per job.
  std::string rows;
  rows.reserve(jobs.size() * 160);
  int ord = 0;
  for (const NewJob& j : jobs) {
    rows += num(j.line) + '\t';
    pg::copy_escape(rows, j.prompt);
    rows += '\t' + num(j.seed) + '\t' + num(j.width) + '\t' + num(j.height) + '\t';
    pg::copy_escape(rows, j.name);
    rows += '\t' + num(j.priority) + '\t';
    pg::copy_escape(rows, j.output_path);
    rows += '\t' + num(j.content_key) + '\t' + num(j.prompt_key) + '\t' + num(ord++) + '\t';
    pg::copy_escape(rows, j.lora);
    rows += j.may_take_over ? "\tt\t" : "\tf\t";
    pg::copy_escape(rows, j.template_text);
    rows += '\t';
    pg::copy_escape(rows, j.choices_json);
    rows += '\t' + num(j.row_key) + '\t';
    pg::copy_escape(rows, j.reseed_on);
    rows += '\t' + num(j.reseed_max) + '\n';
  }
  const std::string token = num(new_token());
  int runs = 0;
  return transaction(*db_, [&] {
    SubmitResult result;
    result.run_id = run_id;
    // The run's row, locked until COMMIT: a discard waits for this batch and takes it too; a batch after a
    // discard or a publish is refused. A run of this batch after a dropped connection waits here for a
    // first run still in flight, then finds its token if it committed.
    if (db_->exec("UPDATE runs SET touched_at = rgbaq_now() WHERE id = $1 AND pending", {num(run_id)}).affected() != 1) {
      throw std::runtime_error(location() + ": run " + num(run_id) + " is not being submitted (published or discarded)");
    }
    if (++runs > 1) {
      const auto first = db_->exec("SELECT inserted, skipped FROM run_batches WHERE run_id = $1 AND token = $2",
                                   {num(run_id), token});
      if (!first.empty()) {
        result.inserted = static_cast<uint64_t>(first.int64(0, 0));
        result.skipped = static_cast<uint64_t>(first.int64(0, 1));
        return result;
      }
    }
    db_->exec("CREATE TEMP TABLE IF NOT EXISTS new_jobs (line INTEGER, prompt TEXT, seed BIGINT, width INTEGER, "
              "height INTEGER, name TEXT, priority INTEGER, output_path TEXT, content_key BIGINT, prompt_key BIGINT, "
              "ord INTEGER, lora TEXT, take_over BOOLEAN, template_text TEXT, choices_json TEXT, row_key BIGINT, "
              "reseed_on TEXT, reseed_max INTEGER) ON COMMIT DELETE ROWS");
    db_->copy_in("COPY new_jobs FROM STDIN", rows);
    if (run.skip_duplicates) {
      result.skipped = static_cast<uint64_t>(
          db_->exec("DELETE FROM new_jobs n WHERE EXISTS (SELECT 1 FROM jobs WHERE content_key = n.content_key AND "
                    "state IN ('queued', 'running', 'done')) OR EXISTS (SELECT 1 FROM new_jobs m WHERE "
                    "m.content_key = n.content_key AND m.ord < n.ord)")
              .affected());
    }
    const int64_t owned =
        db_->exec("WITH owned AS (INSERT INTO outputs (path, content_key, run_id) SELECT output_path, content_key, $1 "
                  "FROM new_jobs ORDER BY ord ON CONFLICT (path) DO NOTHING RETURNING 1) SELECT count(*) FROM owned",
                  {num(run_id)})
            .int64(0, 0);
    // Every path new and none twice: no clash is possible, and the join over all outputs is not needed.
    const bool all_new = owned == static_cast<int64_t>(jobs.size() - result.skipped);
    // A queued or running job of the owner's content at the path: then it is not taken over. Nor is a
    // path of this submit's (another row's: its job, not inserted yet, is queued).
    constexpr const char* kOwnerActive = "(SELECT min(a.run_id) FROM jobs a WHERE a.content_key = o.content_key AND "
                                         "a.output_path = o.path AND a.state IN ('queued', 'running'))";
    if (!all_new) {
      result.taken_over = static_cast<uint64_t>(
          db_->exec(std::string("UPDATE outputs o SET content_key = n.content_key, run_id = $1 FROM new_jobs n WHERE "
                                "n.take_over AND o.path = n.output_path AND o.content_key <> n.content_key AND o.run_id <> $1 AND ") +
                        kOwnerActive + " IS NULL",
                    {num(run_id)})
              .affected());
    }
    const auto clash = all_new ? pg::Result()
                               : db_->exec(std::string("SELECT n.line, n.output_path, o.run_id, coalesce(") + kOwnerActive +
                                           ", 0) FROM new_jobs n JOIN outputs o ON o.path = n.output_path WHERE "
                                           "o.content_key <> n.content_key ORDER BY n.ord LIMIT 20");
    if (!clash.empty()) {
      std::vector<OutputClash> clashes;
      for (int i = 0; i < clash.rows(); ++i) {
        const int64_t active_run = clash.int64(i, 3);
        clashes.push_back({static_cast<int>(clash.int64(i, 0)), clash.text(i, 1), active_run != 0 ? active_run : clash.int64(i, 2),
                           active_run != 0});
      }
      throw OutputClashError(std::move(clashes));  // the transaction rolls back
    }
    result.inserted = static_cast<uint64_t>(
        db_->exec("INSERT INTO jobs (run_id, prompt, seed, width, height, name, priority, state, created_at, "
                  "output_path, content_key, prompt_key, lora, template_text, choices_json, row_key, reseed_on, reseed_max) "
                  "SELECT $1, prompt, seed, width, height, name, priority, 'queued', (SELECT rgbaq_now()), output_path, "
                  "content_key, prompt_key, lora, template_text, choices_json, row_key, reseed_on, reseed_max FROM new_jobs "
                  "ORDER BY ord",
                  {num(run_id)})
            .affected());
    db_->exec("INSERT INTO run_batches (run_id, token, inserted, skipped) VALUES ($1, $2, $3, $4)",
              {num(run_id), token, num(static_cast<int64_t>(result.inserted)), num(static_cast<int64_t>(result.skipped))});
    return result;
  });
}

void PostgresQueueStore::publish_run(int64_t run_id, uint64_t inserted) {
  transaction(*db_, [&] {
    // Only the first publish counts: this may run again after a dropped connection.
    if (db_->exec("UPDATE runs SET pending = FALSE WHERE id = $1 AND pending", {num(run_id)}).affected() == 1) {
      db_->exec("INSERT INTO run_counts (run_id, state, stripe, n) VALUES ($1, 'queued', 0, $2) "
                "ON CONFLICT (run_id, state, stripe) DO UPDATE SET n = run_counts.n + excluded.n",
                {num(run_id), num(inserted)});
      db_->exec("DELETE FROM run_batches WHERE run_id = $1", {num(run_id)});  // no batch can run again now
      end_runs_in_transaction({run_id});  // a run with no job to run (every one a duplicate) ends as it is published
    }
    return 0;
  });
}

int64_t PostgresQueueStore::discard_run(int64_t run_id) {
  int64_t deleted = 0;
  for (;;) {
    const int64_t n = db_->retrying([&] {
      return db_->exec("DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE run_id = $1 LIMIT 5000)", {num(run_id)})
          .affected();
    });
    deleted += n;
    if (n == 0) break;
  }
  deleted += transaction(*db_, [&] {
    // The run's row first: an append in flight commits before this goes on, and none comes after it.
    const bool was_pending = db_->exec("DELETE FROM runs WHERE id = $1 AND pending", {num(run_id)}).affected() == 1;
    const int64_t late = was_pending ? db_->exec("DELETE FROM jobs WHERE run_id = $1", {num(run_id)}).affected() : 0;
    for (const char* sql : {"DELETE FROM outputs WHERE run_id = $1", "DELETE FROM run_counts WHERE run_id = $1",
                            "DELETE FROM run_batches WHERE run_id = $1", "DELETE FROM run_ends WHERE run_id = $1"}) {
      db_->exec(sql, {num(run_id)});
    }
    return late;
  });
  return deleted;
}

ForgottenRun PostgresQueueStore::forget_run(int64_t run_id) {
  return transaction(*db_, [&] {
    ForgottenRun r;
    // The run's row locked first: a claim or retry of its jobs commits before this goes on.
    r.found = !db_->exec("SELECT 1 FROM runs WHERE id = $1 AND NOT pending FOR UPDATE", {num(run_id)}).empty();
    if (!r.found) return r;
    r.active = db_->exec("SELECT count(*) FROM jobs WHERE run_id = $1 AND state IN ('queued', 'running')", {num(run_id)})
                   .int64(0, 0);
    if (r.active > 0) return r;
    // A hook or webhook claim of its ends locks their rows, not the run's: this reads what committed.
    r.owed_hooks = db_->exec(std::string("SELECT count(*) FROM run_ends WHERE run_id = $1 AND ") + store_shared::kEndStillOwes,
                             {num(run_id)})
                       .int64(0, 0);
    if (r.owed_hooks > 0) return r;
    // An image another run's job shares (a resubmit that reused it) stays that run's.
    const auto images = db_->exec("SELECT id, output_path FROM jobs j WHERE run_id = $1 AND state = 'done' AND NOT EXISTS ("
                                  "SELECT 1 FROM jobs o WHERE o.content_key = j.content_key AND o.output_path = j.output_path "
                                  "AND o.run_id <> j.run_id) ORDER BY id",
                                  {num(run_id)});
    for (int i = 0; i < images.rows(); ++i) r.images.push_back({images.int64(i, 0), images.text(i, 1)});
    r.jobs = db_->exec("DELETE FROM jobs WHERE run_id = $1", {num(run_id)}).affected();
    // Each path the run owned: released, or handed to the earliest run whose job still uses it.
    for (const char* sql : {"DELETE FROM outputs WHERE run_id = $1 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                            "j.content_key = outputs.content_key AND j.output_path = outputs.path)",
                            "UPDATE outputs SET run_id = (SELECT min(j.run_id) FROM jobs j WHERE j.content_key = "
                            "outputs.content_key AND j.output_path = outputs.path) WHERE run_id = $1",
                            // its finished jobs stay counted (recover's count of finished jobs)
                            "INSERT INTO settings (key, value) SELECT 'forgotten_done', coalesce(sum(n), 0)::text FROM "
                            "run_counts WHERE run_id = $1 AND state = 'done' ON CONFLICT (key) DO UPDATE SET "
                            "value = (settings.value::bigint + excluded.value::bigint)::text",
                            "DELETE FROM run_counts WHERE run_id = $1", "DELETE FROM run_ends WHERE run_id = $1",
                            "DELETE FROM runs WHERE id = $1"}) {
      db_->exec(sql, {num(run_id)});
    }
    return r;
  });
}

std::optional<Job> PostgresQueueStore::claimed_by_token(int64_t worker_id, const std::string& token) {
  const auto r = db_->exec(std::string("SELECT ") + kJobColumns +
                               " FROM jobs WHERE state = 'running' AND worker_id = $1 AND claim_token = $2",
                           {num(worker_id), token}, "claimed_by_token");
  if (r.empty()) return std::nullopt;
  return read_job(r, 0);
}

std::optional<Job> PostgresQueueStore::claim_in_transaction(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                                            const std::vector<std::string>& preferred_loras,
                                                            const std::string& token) {
  static const auto statements = [] {
    std::array<std::string, 4> s;
    for (int v = 0; v < 4; ++v) {
      const ClaimSql claim = claim_sql(v);
      s[v] = "WITH " + claim.top + " " + claim.update + " RETURNING " + kJobColumns;
    }
    return s;
  }();
  static const char* const names[4] = {"claim", "claim_p", "claim_l", "claim_pl"};
  const int variant = claim_variant(preferred, preferred_loras);
  const auto r = db_->exec(statements[variant], claim_params(worker_id, options_.lease_seconds, token, preferred, preferred_loras),
                           names[variant]);
  if (r.empty()) return std::nullopt;
  return read_job(r, 0);
}

std::optional<Job> PostgresQueueStore::claim(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                             const std::vector<std::string>& preferred_loras) {
  // Run again after a dropped connection, the claim first looks for the job its first run took.
  const std::string token = num(new_token());
  int runs = 0;
  return db_->retrying([&]() -> std::optional<Job> {
    if (++runs > 1) {
      if (auto job = claimed_by_token(worker_id, token)) return job;
    }
    return claim_in_transaction(worker_id, preferred, preferred_loras, token);
  });
}

bool PostgresQueueStore::complete_in_transaction(int64_t job_id, int64_t worker_id, const Completion& c) {
  static const std::string statement =
      "WITH " + complete_ctes("$1", "$2", "$3", "$4", "$5", "$6") +
      " SELECT run_id, row_key, reseed_max, priority, cancel_requested FROM done";
  const auto r = db_->exec(statement, {num(job_id), c.output_path, c.metadata_json, num(worker_id), c.qa_json, c.qa_flags},
                           "complete");
  if (r.empty()) return false;
  const store_shared::CompletedJob done{.id = job_id, .run_id = r.int64(0, 0), .row_key = static_cast<uint64_t>(r.int64(0, 1)),
                                        .reseed_max = static_cast<int>(r.int64(0, 2)),
                                        .priority = static_cast<int>(r.int64(0, 3)), .cancel_requested = r.boolean(0, 4)};
  // The re-seeded job first: a run that gets one has not ended. A job canceled as it finished gets none
  // (a cancel of its run that waited on its row sees it done, then cancels what it queued: cancel_where).
  if (!c.reseed_candidates.empty() && !done.cancel_requested) reseed_in_transaction(done, c.reseed_candidates);
  end_runs_in_transaction({done.run_id});
  return true;
}

bool PostgresQueueStore::complete(int64_t job_id, int64_t worker_id, const Completion& c) {
  store_shared::check_reseed_candidates(*this, job_id, c);
  int runs = 0;
  return transaction(*db_, [&] {
    ++runs;
    if (complete_in_transaction(job_id, worker_id, c)) return true;
    // Run again after a dropped connection: the first run may have committed. A done job keeps its worker
    // id, and worker ids are never given twice, so done under this worker means this worker did it.
    return runs > 1 && !db_->exec("SELECT 1 FROM jobs WHERE id = $1 AND state = 'done' AND worker_id = $2",
                                    {num(job_id), num(worker_id)})
                              .empty();
  });
}

std::optional<Job> PostgresQueueStore::complete_and_claim(int64_t job_id, const Completion& c, int64_t worker_id,
                                                          const std::vector<uint64_t>& preferred,
                                                          const std::vector<std::string>& preferred_loras) {
  store_shared::check_reseed_candidates(*this, job_id, c);
  // Run again after a dropped connection, it first looks for the job its first run claimed.
  const std::string token = num(new_token());
  int runs = 0;
  if (!c.reseed_candidates.empty()) {
    // A re-seed's statements read the row after the complete: a transaction of several statements.
    return transaction(*db_, [&]() -> std::optional<Job> {
      if (++runs > 1) {
        if (auto job = claimed_by_token(worker_id, token)) return job;
      }
      complete_in_transaction(job_id, worker_id, c);
      return claim_in_transaction(worker_id, preferred, preferred_loras, token);
    });
  }
  // Else the complete and the claim are one statement, and one firing of the counter trigger (the updates
  // of one statement share its transition tables); then a second statement records the run's end, if
  // this was its last job; then one commit. The claim reads the snapshot from before the complete; the
  // job completed was running, not one it could take. The complete's parameters follow the claim's.
  static const auto statements = [] {
    std::array<std::string, 4> s;
    for (int v = 0; v < 4; ++v) {
      const int next = 4 + (v & 1) + (v >> 1);  // after the claim's arrays
      const auto param = [](int n) { return "$" + std::to_string(n); };
      const ClaimSql claim = claim_sql(v);
      s[v] = "WITH " + complete_ctes(param(next), param(next + 1), param(next + 2), "$1", param(next + 3), param(next + 4)) +
             ", " + claim.top +
             ", claimed AS (" + claim.update + " RETURNING " + kJobColumns +
             ") SELECT * FROM claimed";  // the complete runs whether or not a job is claimed
    }
    return s;
  }();
  static const char* const names[4] = {"complete_claim", "complete_claim_p", "complete_claim_l", "complete_claim_pl"};
  const int variant = claim_variant(preferred, preferred_loras);
  Params params = claim_params(worker_id, options_.lease_seconds, token, preferred, preferred_loras);
  params.insert(params.end(), {num(job_id), c.output_path, c.metadata_json, c.qa_json, c.qa_flags});
  return transaction(*db_, [&]() -> std::optional<Job> {
    if (++runs > 1) {
      if (auto job = claimed_by_token(worker_id, token)) return job;  // the first run committed
    }
    const auto r = db_->exec(statements[variant], params, names[variant]);
    end_runs_of_job_in_transaction(job_id);
    if (r.empty()) return std::nullopt;
    return read_job(r, 0);
  });
}

std::optional<JobState> PostgresQueueStore::fail(int64_t job_id, int64_t worker_id, const std::string& reason,
                                                 Failure failure) {
  return transaction(*db_, [&]() -> std::optional<JobState> {
    const auto r = db_->exec(
        "UPDATE jobs SET state = CASE WHEN $5 OR attempts >= $3 THEN 'failed' ELSE 'queued' END, error = $2, "
        "not_before = CASE WHEN $5 OR attempts >= $3 THEN 0 ELSE rgbaq_now() + least(300, $4 * power(2, attempts - 1)) END, "
        "finished_at = CASE WHEN $5 OR attempts >= $3 THEN rgbaq_now() ELSE 0 END, "
        "errors = errors || jsonb_build_array(jsonb_build_object('attempt', attempts, 'at', rgbaq_now(), 'reason', $2::text)), "
        "interruptions_at_step = 0, deaths_in_row = 0, death_steps = '', worker_id = 0, lease_expires = 0 "
        "WHERE id = $1 AND state = 'running' AND worker_id = $6 "
        "RETURNING state, run_id",
        {num(job_id), reason, num(options_.max_attempts), real(options_.backoff_seconds),
         failure == Failure::kPermanent ? "true" : "false", num(worker_id)});
    if (r.empty()) return std::nullopt;
    const JobState state = parse_state(r.text(0, 0)).value_or(JobState::kFailed);
    if (state == JobState::kFailed) end_runs_in_transaction({r.int64(0, 1)});
    return state;
  });
}

bool PostgresQueueStore::requeue(int64_t job_id, int64_t worker_id) {
  return db_->retrying([&] {
    return db_->exec("UPDATE jobs SET state = 'queued', attempts = greatest(attempts - 1, 0), worker = '', worker_id = 0, "
                     "lease_expires = 0, interruptions_at_step = 0, deaths_in_row = 0, death_steps = '' "
                     "WHERE id = $1 AND state = 'running' AND worker_id = $2",
                     {num(job_id), num(worker_id)})
               .affected() == 1;
  });
}

bool PostgresQueueStore::finish_canceled(int64_t job_id, int64_t worker_id) {
  return transaction(*db_, [&] {
    const auto r = db_->exec("UPDATE jobs SET state = 'canceled', finished_at = rgbaq_now(), worker_id = 0, lease_expires = 0 "
                             "WHERE id = $1 AND state = 'running' AND worker_id = $2 AND cancel_requested RETURNING run_id",
                             {num(job_id), num(worker_id)});
    if (r.empty()) return false;
    end_runs_in_transaction({r.int64(0, 0)});
    return true;
  });
}

QueueStore::Canceled PostgresQueueStore::cancel_where(const char* column, int64_t id) {
  return transaction(*db_, [&] {
    Canceled n;
    // The running jobs first: one being completed holds its row, and this waits for that transaction;
    // the next statement's snapshot, taken after it, then sees the job it re-seeded (if any) and cancels
    // it too. (Neither this nor the complete locks the run before its jobs: no deadlock.)
    n.stopping = db_->exec(std::string("UPDATE jobs SET cancel_requested = TRUE WHERE ") + column + " = $1 AND state = 'running'",
                           {num(id)})
                     .affected();
    n.canceled = db_->exec(std::string("UPDATE jobs SET state = 'canceled', finished_at = rgbaq_now() WHERE ") + column +
                               " = $1 AND state = 'queued'" + kVisible,
                           {num(id)})
                     .affected();
    if (std::string_view(column) == "run_id") {
      end_runs_in_transaction({id});
    } else {
      end_runs_of_job_in_transaction(id);
    }
    return n;
  });
}

QueueStore::Canceled PostgresQueueStore::cancel_run(int64_t run_id) { return cancel_where("run_id", run_id); }

bool PostgresQueueStore::cancel_job(int64_t job_id) { return cancel_where("id", job_id).total() > 0; }

QueueStore::StepHold PostgresQueueStore::step_hold(int64_t job_id, int64_t worker_id) {
  return db_->retrying([&] {
    const auto r = db_->exec("SELECT cancel_requested FROM jobs WHERE id = $1 AND state = 'running' AND worker_id = $2",
                             {num(job_id), num(worker_id)}, "step_hold");
    if (r.empty()) return StepHold::kLost;
    return r.boolean(0, 0) ? StepHold::kCancelRequested : StepHold::kHeld;
  });
}

void PostgresQueueStore::set_paused(bool paused) {
  db_->retrying([&] {
    return db_->exec("INSERT INTO settings (key, value) VALUES ('paused', $1) ON CONFLICT (key) DO UPDATE SET value = "
                     "excluded.value",
                     {paused ? "1" : "0"})
        .affected();
  });
}

bool PostgresQueueStore::paused() {
  return db_->retrying([&] {
    const auto r = db_->exec("SELECT value FROM settings WHERE key = 'paused'");
    return !r.empty() && r.text(0, 0) == "1";
  });
}

int64_t PostgresQueueStore::prioritize_run(int64_t run_id, int priority) {
  return db_->retrying([&] {
    return db_->exec("UPDATE jobs SET priority = $1 WHERE run_id = $2 AND state IN ('queued', 'running')",
                     {num(priority), num(run_id)})
        .affected();
  });
}

int64_t PostgresQueueStore::retry(int64_t run_id, bool include_canceled) {
  return transaction(*db_, [&] {
    lock_runs_in_transaction({run_id});
    const int64_t n = db_->exec(std::string("UPDATE jobs SET ") + kRetrySet + " WHERE run_id = $1 AND state IN ('failed'" +
                                    (include_canceled ? ", 'canceled')" : ")") + kStillOwner,
                                {num(run_id)})
                          .affected();
    reopen_runs_in_transaction({run_id});
    return n;
  });
}

// Run again after a dropped connection whose COMMIT had gone through, these two find nothing left to do
// and count less than they did: the queue ends as asked either way.
int64_t PostgresQueueStore::retry_jobs(const std::vector<int64_t>& job_ids) {
  const auto slices = id_slices(job_ids);
  return transaction(*db_, [&] {
    std::vector<int64_t> runs;
    for (const std::string& slice : slices) {
      const auto r = db_->exec("SELECT DISTINCT run_id FROM jobs WHERE id = ANY($1::bigint[])", {slice});
      for (int i = 0; i < r.rows(); ++i) runs.push_back(r.int64(i, 0));
    }
    lock_runs_in_transaction(runs);
    int64_t n = 0;
    for (const std::string& slice : slices) {
      n += db_->exec(std::string("UPDATE jobs SET ") + kRetrySet + " WHERE id = ANY($1::bigint[]) AND state IN ('failed', 'canceled')" + kStillOwner,
                     {slice})
               .affected();
    }
    reopen_runs_in_transaction(runs);
    return n;
  });
}

int64_t PostgresQueueStore::set_marks(const std::vector<int64_t>& job_ids, Mark mark, const std::string& by) {
  const auto slices = id_slices(job_ids);
  return transaction(*db_, [&] {
    // Every id is a job, or nothing changes: all slices are checked before any is marked.
    for (const std::string& slice : slices) {
      const auto missing = db_->exec("SELECT k.id FROM unnest($1::bigint[]) WITH ORDINALITY AS k(id, n) WHERE NOT EXISTS "
                                     "(SELECT 1 FROM jobs j WHERE j.id = k.id) ORDER BY k.n LIMIT 1",
                                     {slice});
      if (!missing.empty()) throw NoSuchJobError(missing.int64(0, 0));
    }
    int64_t n = 0;
    for (const std::string& slice : slices) {
      n += db_->exec("UPDATE jobs SET mark = $2::text, marked_at = CASE WHEN $2::text = '' THEN 0 ELSE rgbaq_now() END, "
                     "marked_by = CASE WHEN $2::text = '' THEN '' ELSE $3::text END WHERE id = ANY($1::bigint[]) AND mark <> $2::text",
                     {slice, std::string(mark_name(mark)), by})
               .affected();
    }
    return n;
  });
}

RecoverResult PostgresQueueStore::recover(std::optional<int64_t> crashed_job) {
  RecoverResult r;
  // Submits cut off before their last batch and left alone for a lease: their submitter is gone.
  const auto pending = db_->retrying([&] {
    return db_->exec("SELECT id FROM runs WHERE pending AND touched_at < rgbaq_now() - $1",
                     {real(options_.lease_seconds)});
  });
  for (int i = 0; i < pending.rows(); ++i) r.discarded_jobs += discard_run(pending.int64(i, 0));
  // Expired leases, in one statement (concurrent recoveries on other hosts lock rows in the same order).
  // The crashed job spends its attempt; any other was interrupted: attempt given back, interruption
  // counted; unless its lease recorded the step of its last interruptions, so many times in a row that
  // it is the job's own doing (the kernel killing it there for its memory, say): then it counts as a
  // crash, spending the attempt, and waits out a backoff (the other jobs claimed first). Each, the
  // crashed one too, also counts a death in its row: the next one when no other job finished since its
  // last death (the queue's count of finished jobs, `finished`, unchanged), else the first of a new row;
  // so many in a row fail it, whatever the steps.
  const std::string crashed = num(crashed_job.value_or(-1));
  const char* recorded = "progress_at >= started_at";  // this lease recorded a step
  const std::string recurring = std::string("(id <> $1 AND ") + recorded +
                                " AND step = interrupted_at_step AND interruptions_at_step + 1 >= $4)";
  // Counted from the run counters (forgotten runs' tallied apart): no write per completion. Read once,
  // and only when a lease has expired.
  const std::string finished = "(SELECT n FROM finished)";
  const std::string in_row = "(deaths_in_row > 0 AND done_at_death = " + finished + ")";
  // A death before any step was recorded (the daemon killed as it started) leaves the row as it is.
  const std::string deaths = "(CASE WHEN NOT (" + std::string(recorded) + ") THEN deaths_in_row WHEN " + in_row +
                             " THEN deaths_in_row + 1 ELSE 1 END)";
  const std::string death_steps = "(CASE WHEN NOT (" + std::string(recorded) + ") THEN death_steps WHEN " + in_row +
                                  " THEN death_steps || ', ' || step::text ELSE step::text END)";
  const char* failed_crash = "(id = $1 AND attempts >= $2)";
  const std::string failed_recurring = "(" + recurring + " AND attempts >= $2)";
  const std::string failed_deaths = "(" + std::string(recorded) + " AND " + deaths + " >= $6)";
  const std::string failed_interrupted = "(id <> $1 AND NOT " + recurring + " AND interruptions + 1 >= $3)";
  const std::string failing = std::string("(") + failed_crash + " OR " + failed_recurring + " OR " + failed_deaths + " OR " +
                              failed_interrupted + ")";
  const std::string reason = std::string("CASE WHEN ") + failed_crash + " THEN 'crashed the daemon ' || attempts || ' times' "
                             "WHEN " + failed_recurring + " THEN 'the daemon died at step ' || step || ' on each of its last "
                             "tries (out of memory?)' WHEN " + failed_deaths + " THEN 'the daemon died ' || " + deaths +
                             " || ' times with this job in hand, no other job finishing in between (at steps ' || " +
                             death_steps + " || ')' ELSE 'interrupted ' || (interruptions + 1) || ' times' END";
  int64_t canceled = 0;
  const auto states = transaction(*db_, [&] {
    // An expired job whose cancel was requested is canceled, as its worker would have done: not queued
    // again, and no death of its counted. (The statement below then finds it no longer running.)
    const auto cancels = db_->exec("UPDATE jobs SET state = 'canceled', finished_at = rgbaq_now(), worker_id = 0, lease_expires = 0 "
                                   "WHERE state = 'running' AND (lease_expires < rgbaq_now() OR worker_id = 0) AND "
                                   "cancel_requested RETURNING run_id");
    canceled = cancels.rows();
    std::vector<int64_t> ended_runs;  // the runs its cancels and failures may have ended
    for (int i = 0; i < cancels.rows(); ++i) ended_runs.push_back(cancels.int64(i, 0));
    auto changed = db_->exec(
        "WITH finished AS MATERIALIZED (SELECT (SELECT coalesce(sum(n), 0) FROM run_counts WHERE state = 'done')::bigint + "
        "coalesce((SELECT value::bigint FROM settings WHERE key = 'forgotten_done'), 0) AS n) "
        "UPDATE jobs SET attempts = CASE WHEN id = $1 OR " + recurring + " THEN attempts ELSE greatest(attempts - 1, 0) END, "
        "interruptions = CASE WHEN id = $1 OR " + recurring + " THEN interruptions ELSE interruptions + 1 END, "
        "interruptions_at_step = CASE WHEN id = $1 THEN interruptions_at_step WHEN NOT (" + recorded + ") THEN 0 "
        "WHEN step = interrupted_at_step THEN interruptions_at_step + 1 ELSE 1 END, "
        "interrupted_at_step = CASE WHEN id = $1 THEN interrupted_at_step WHEN " + recorded + " THEN step ELSE -1 END, "
        "deaths_in_row = " + deaths + ", death_steps = " + death_steps + ", done_at_death = CASE WHEN " + recorded +
        " THEN " + finished + " ELSE done_at_death END, "
        "not_before = CASE WHEN " + recurring + " AND NOT " + failing + " THEN rgbaq_now() + least(300, $5 * "
        "power(2, greatest(attempts - 1, 0))) ELSE not_before END, "
        "state = CASE WHEN " + failing + " THEN 'failed' ELSE 'queued' END, "
        "error = CASE WHEN " + failing + " THEN " + reason + " ELSE error END, "
        "errors = CASE WHEN " + failing + " THEN errors || jsonb_build_array(jsonb_build_object('attempt', attempts, "
        "'at', rgbaq_now(), 'reason', " + reason + ")) ELSE errors END, "
        "finished_at = CASE WHEN " + failing + " THEN rgbaq_now() ELSE finished_at END, "
        "worker = '', worker_id = 0, lease_expires = 0 "
        "WHERE state = 'running' AND (lease_expires < rgbaq_now() OR worker_id = 0) RETURNING state, run_id",
        {crashed, num(options_.max_attempts), num(options_.max_interruptions), num(options_.same_step_interruptions),
         real(options_.backoff_seconds), num(options_.max_deaths)});
    for (int i = 0; i < changed.rows(); ++i) {
      if (changed.text(i, 0) == "failed") ended_runs.push_back(changed.int64(i, 1));
    }
    if (!ended_runs.empty()) end_runs_in_transaction(ended_runs);
    return changed;
  });
  r.canceled = canceled;
  for (int i = 0; i < states.rows(); ++i) ++(states.text(i, 0) == "failed" ? r.failed : r.requeued);
  db_->retrying([&] {
    return db_->exec("DELETE FROM workers WHERE heartbeat_at < rgbaq_now() - $1", {real(options_.lease_seconds)}).affected();
  });
  recover_run_ends();
  return r;
}

int64_t PostgresQueueStore::register_worker(const WorkerInfo& info) {
  return db_->retrying([&] {
    // With what its daemon can do at a run's end.
    return db_->exec("INSERT INTO workers (host, boot_id, pid, engine, device, started_at, heartbeat_at, runs_hooks, "
                     "sends_webhooks) VALUES ($1, $2, $3, $4, $5, rgbaq_now(), rgbaq_now(), $6, $7) RETURNING id",
                     {info.host, info.boot_id, num(info.pid), info.engine, info.device, options_.owe_hook ? "true" : "false",
                      options_.owe_webhook ? "true" : "false"})
        .int64(0, 0);
  });
}

bool PostgresQueueStore::heartbeat(int64_t worker_id, const std::vector<int64_t>& jobs) {
  return db_->retrying([&] {
    return db_->exec("WITH w AS (UPDATE workers SET heartbeat_at = rgbaq_now() WHERE id = $1 RETURNING id), "
                     "j AS (UPDATE jobs SET lease_expires = rgbaq_now() + $3 WHERE id = ANY($2::bigint[]) AND "
                     "state = 'running' AND worker_id = $1 AND EXISTS (SELECT 1 FROM w)) SELECT count(*) FROM w",
                     {num(worker_id), array_literal(jobs), real(options_.lease_seconds)}, "heartbeat")
               .int64(0, 0) == 1;
  });
}

void PostgresQueueStore::unregister_worker(int64_t worker_id) {
  db_->retrying([&] { return db_->exec("DELETE FROM workers WHERE id = $1", {num(worker_id)}).affected(); });
}

int64_t PostgresQueueStore::expire_worker(int64_t worker_id) {
  return transaction(*db_, [&] {
    const int64_t n = db_->exec("UPDATE jobs SET lease_expires = 0 WHERE worker_id = $1 AND state = 'running'",
                                {num(worker_id)})
                          .affected();
    db_->exec("DELETE FROM workers WHERE id = $1", {num(worker_id)});
    return n;
  });
}

void PostgresQueueStore::record_progress(int64_t worker_id, const std::vector<JobProgress>& progress) {
  if (progress.empty()) return;
  std::vector<int64_t> jobs, steps, totals, decoding;
  for (const JobProgress& p : progress) {
    jobs.push_back(p.job);
    steps.push_back(p.step);
    totals.push_back(p.steps);
    decoding.push_back(p.decoding ? 1 : 0);
  }
  db_->retrying([&] {
    return db_->exec("UPDATE jobs j SET step = p.step, steps = p.steps, decoding = p.decoding <> 0, progress_at = rgbaq_now() "
                     "FROM unnest($2::bigint[], $3::int[], $4::int[], $5::int[]) AS p(id, step, steps, decoding) "
                     "WHERE j.id = p.id AND j.worker_id = $1 AND j.state = 'running'",
                     {num(worker_id), array_literal(jobs), array_literal(steps), array_literal(totals), array_literal(decoding)},
                     "record_progress")
        .affected();
  });
}

std::vector<Worker> PostgresQueueStore::list_workers() {
  const auto r = db_->retrying([&] {
    return db_->exec("SELECT w.id, host, boot_id, pid, engine, device, started_at, heartbeat_at, images_done, "
                     "coalesce((SELECT min(id) FROM jobs WHERE state = 'running' AND worker_id = w.id), 0) "
                     "FROM workers w ORDER BY id");
  });
  std::vector<Worker> workers;
  for (int i = 0; i < r.rows(); ++i) {
    Worker w;
    w.id = r.int64(i, 0);
    w.info = {r.text(i, 1), r.text(i, 2), r.int64(i, 3), r.text(i, 4), r.text(i, 5)};
    w.started_at = r.real(i, 6);
    w.heartbeat_at = r.real(i, 7);
    w.images_done = r.int64(i, 8);
    w.job = r.int64(i, 9);
    workers.push_back(std::move(w));
  }
  return workers;
}

std::vector<Run> PostgresQueueStore::list_runs() {
  return transaction(*db_, [&] {
    std::vector<Run> runs;
    const auto q = db_->exec("SELECT id, name, options, out_dir, created_at FROM runs WHERE NOT pending ORDER BY id");
    for (int i = 0; i < q.rows(); ++i) {
      Run r;
      r.id = q.int64(i, 0);
      r.name = q.text(i, 1);
      r.options_json = q.text(i, 2);
      r.out_dir = q.text(i, 3);
      r.created_at = q.real(i, 4);
      runs.push_back(std::move(r));
    }
    const auto c = db_->exec("SELECT run_id, state, sum(n) FROM run_counts GROUP BY run_id, state");
    for (int i = 0; i < c.rows(); ++i) add_run_count(runs, c.int64(i, 0), c.text(i, 1), c.int64(i, 2));
    for (RunEnd& end : last_ends_in_transaction()) {
      if (Run* r = listed_run(runs, end.run_id)) r->last_end = std::move(end);
    }
    return runs;
  });
}

std::map<int64_t, double> PostgresQueueStore::finish_times() {
  return db_->retrying([&] {
    std::map<int64_t, double> out;
    const auto q = db_->exec("SELECT run_id, MAX(finished_at) FROM jobs GROUP BY run_id "
                             "HAVING bool_and(state NOT IN ('queued', 'running'))");
    for (int i = 0; i < q.rows(); ++i) out[q.int64(i, 0)] = q.real(i, 1);
    return out;
  });
}

namespace {

// The jobs `where` (SQL with its parameters $1...) selects; `name` prepares the statement once.
std::vector<Job> select_jobs(pg::Connection& db, const std::string& where, const Params& params,
                             const char* name = nullptr) {
  const auto r = db.retrying([&] { return db.exec(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE " + where, params, name); });
  std::vector<Job> jobs;
  jobs.reserve(static_cast<size_t>(r.rows()));
  for (int i = 0; i < r.rows(); ++i) jobs.push_back(read_job(r, i));
  return jobs;
}

}  // namespace

std::vector<Job> PostgresQueueStore::list_jobs(const JobQuery& query) {
  store_shared::check_qa_flag_filter(query.qa_flag);
  std::string sql = "TRUE";
  Params params;
  if (query.run) {
    params.push_back(num(*query.run));
    sql += " AND run_id = $" + std::to_string(params.size());
  }
  // The state and the mark are in the text, not parameters: the connection plans generically
  // (pg_connection.cpp), and a plan that knows them can take their partial indexes.
  if (query.state) sql += " AND state = '" + std::string(state_name(*query.state)) + "'";
  if (query.marked) sql += std::string(" AND ") + mark_filter_sql(*query.marked);
  // A flag is a whole name between commas; "" is a job not checked yet.
  if (query.qa_flag && query.qa_flag->empty()) sql += " AND qa_flags = ''";
  if (query.qa_flag && !query.qa_flag->empty()) {
    params.push_back(*query.qa_flag);
    sql += " AND $" + std::to_string(params.size()) + "::text = ANY(string_to_array(qa_flags, ','))";
  }
  if (query.after_id > 0) {
    params.push_back(num(query.after_id));
    sql += " AND id > $" + std::to_string(params.size());
  }
  params.push_back(num(query.limit));
  sql += " ORDER BY id LIMIT $" + std::to_string(params.size());
  params.push_back(num(query.offset));
  sql += " OFFSET $" + std::to_string(params.size());
  return select_jobs(*db_, sql, params);
}

std::optional<Job> PostgresQueueStore::job(int64_t job_id) {
  auto jobs = select_jobs(*db_, "id = $1", {num(job_id)}, "job");
  if (jobs.empty()) return std::nullopt;
  return std::move(jobs[0]);
}

StateCounts PostgresQueueStore::counts(std::optional<int64_t> run_id) {
  const auto r = db_->retrying([&] {
    return run_id ? db_->exec("SELECT state, sum(n) FROM run_counts WHERE run_id = $1 GROUP BY state", {num(*run_id)})
                  : db_->exec("SELECT state, sum(n) FROM run_counts GROUP BY state");
  });
  StateCounts c{};
  for (int i = 0; i < r.rows(); ++i) {
    if (const auto s = parse_state(r.text(i, 0))) c[static_cast<int>(*s)] = r.int64(i, 1);
  }
  return c;
}

std::string PostgresQueueStore::integrity_check() {
  return transaction(*db_, [&]() -> std::string {
    // One snapshot for both sides of each comparison.
    db_->exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
    std::string problems;
    const auto counters = db_->exec(
        std::string("SELECT count(*) FROM (SELECT run_id, state, count(*) AS n FROM jobs WHERE TRUE") + kVisible +
        " GROUP BY run_id, state) j FULL JOIN (SELECT run_id, state, sum(n) AS n FROM run_counts GROUP BY run_id, state) c "
        "USING (run_id, state) WHERE coalesce(j.n, 0) <> coalesce(c.n, 0)");
    if (counters.int64(0, 0) != 0) problems = "run counters disagree with the jobs (" + counters.text(0, 0) + " run/state pairs)";
    const auto orphans = db_->exec(store_shared::orphans_sql("rgbaq_now()"));
    if (orphans.int64(0, 0) != 0) {
      if (!problems.empty()) problems += "; ";
      problems += store_shared::orphans_problem(orphans.int64(0, 0), orphans.int64(0, 1));
    }
    const auto ends = db_->exec(store_shared::kEndedMismatch);
    if (!ends.empty()) {
      if (!problems.empty()) problems += "; ";
      problems += store_shared::ended_mismatch_problem(ends.int64(0, 0), ends.boolean(0, 1));
    }
    return problems.empty() ? "ok" : problems;
  });
}

}  // namespace rgbaq::storage
