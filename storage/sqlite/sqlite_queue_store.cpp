#include "storage/sqlite/sqlite_queue_store.h"

#include <algorithm>
#include <stdexcept>
#include <string_view>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "storage/sqlite/sqlite_store_helpers.h"

namespace rgbaq::storage {

using sqlite_store::now_seconds;
using sqlite_store::Use;
using store_shared::kStillOwner;

namespace {

// The queue's count of finished (done) jobs ever, those of forgotten runs included: it only grows, and
// grows with each job done. From the run counters, no write per completion.
constexpr const char* kDoneCount =
    "(SELECT coalesce(sum(n), 0) FROM run_counts WHERE state = 'done') + "
    "coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'forgotten_done'), 0)";

// Claims skip the jobs of runs whose submit has not committed its last batch.
constexpr const char* kVisible = " AND run_id NOT IN (SELECT id FROM runs WHERE pending = 1)";

const char* kJobColumns =
    "id, run_id, prompt, seed, width, height, name, priority, state, attempts, worker, created_at, started_at, "
    "finished_at, cancel_requested, error, errors, output_path, metadata, prompt_key, content_key, interruptions, "
    "worker_id, host, lease_expires, lora, step, steps, decoding, progress_at, mark, marked_at, marked_by, deaths_in_row, "
    "template_text, choices_json, row_key, reseed_on, reseed_max, replaces, replaced_by, qa_json, qa_flags";

Job read_job(SQLite::Statement& q) {
  Job j;
  j.id = q.getColumn(0).getInt64();
  j.run_id = q.getColumn(1).getInt64();
  j.prompt = q.getColumn(2).getString();
  j.seed = static_cast<uint64_t>(q.getColumn(3).getInt64());
  j.width = q.getColumn(4).getInt();
  j.height = q.getColumn(5).getInt();
  j.name = q.getColumn(6).getString();
  j.priority = q.getColumn(7).getInt();
  j.state = parse_state(q.getColumn(8).getString()).value_or(JobState::kFailed);
  j.attempts = q.getColumn(9).getInt();
  j.worker = q.getColumn(10).getString();
  j.created_at = q.getColumn(11).getDouble();
  j.started_at = q.getColumn(12).getDouble();
  j.finished_at = q.getColumn(13).getDouble();
  j.cancel_requested = q.getColumn(14).getInt() != 0;
  j.error = q.getColumn(15).getString();
  j.errors_json = q.getColumn(16).getString();
  j.output_path = q.getColumn(17).getString();
  j.metadata_json = q.getColumn(18).getString();
  j.prompt_key = static_cast<uint64_t>(q.getColumn(19).getInt64());
  j.content_key = static_cast<uint64_t>(q.getColumn(20).getInt64());
  j.interruptions = q.getColumn(21).getInt();
  j.worker_id = q.getColumn(22).getInt64();
  j.host = q.getColumn(23).getString();
  j.lease_expires = q.getColumn(24).getDouble();
  j.lora = q.getColumn(25).getString();
  if (j.state == JobState::kRunning && q.getColumn(29).getDouble() >= j.started_at) {  // this lease's progress
    j.step = q.getColumn(26).getInt();
    j.steps = q.getColumn(27).getInt();
    j.decoding = q.getColumn(28).getInt() != 0;
  }
  j.mark = parse_mark(q.getColumn(30).getString()).value_or(Mark::kNone);
  j.marked_at = q.getColumn(31).getDouble();
  j.marked_by = q.getColumn(32).getString();
  j.deaths_in_row = q.getColumn(33).getInt();
  j.template_text = q.getColumn(34).getString();
  j.choices_json = q.getColumn(35).getString();
  j.row_key = static_cast<uint64_t>(q.getColumn(36).getInt64());
  j.reseed_on = q.getColumn(37).getString();
  j.reseed_max = q.getColumn(38).getInt();
  j.replaces = q.getColumn(39).getInt64();
  j.replaced_by = q.getColumn(40).getInt64();
  j.qa_json = q.getColumn(41).getString();
  j.qa_flags = q.getColumn(42).getString();
  return j;
}

// What retry() and retry_jobs() set: queued again, as if new, with its error history kept.
constexpr const char* kRetrySet =
    "state = 'queued', attempts = 0, interruptions = 0, not_before = 0, error = '', cancel_requested = 0, "
    "finished_at = 0, worker_id = 0, lease_expires = 0, interrupted_at_step = -1, interruptions_at_step = 0, "
    "deaths_in_row = 0, death_steps = ''";

// Statements over a list of job ids take them as one JSON array (json_each), at most this many a
// statement: no limit on bound variables is reached, and no one statement runs long.
constexpr size_t kIdsPerStatement = 10000;

// `ids` in slices of kIdsPerStatement, each as a JSON array, in order.
std::vector<std::string> id_slices(const std::vector<int64_t>& ids) {
  std::vector<std::string> slices;
  for (size_t at = 0; at < ids.size(); at += kIdsPerStatement) {
    std::string a = "[";
    for (size_t i = at; i < std::min(ids.size(), at + kIdsPerStatement); ++i) a += (i > at ? "," : "") + std::to_string(ids[i]);
    slices.push_back(a + "]");
  }
  return slices;
}

}  // namespace

struct SqliteQueueStore::Statements {
  explicit Statements(SQLite::Database& db)
      : paused(db, "SELECT value FROM settings WHERE key = 'paused'"),
        top(db, std::string("SELECT id, priority FROM jobs WHERE state = 'queued' AND not_before <= ?") + kVisible +
                    " ORDER BY priority DESC, id LIMIT 1"),
        preferred(db, std::string("SELECT id, lora FROM jobs WHERE state = 'queued' AND prompt_key = ? AND priority = ? AND "
                                  "not_before <= ?") + kVisible + " ORDER BY id LIMIT 1"),
        preferred_lora(db, std::string("SELECT id FROM jobs WHERE state = 'queued' AND lora = ? AND priority = ? AND "
                                       "not_before <= ?") + kVisible + " ORDER BY id LIMIT 1"),
        lease(db, "UPDATE jobs SET state = 'running', attempts = attempts + 1, worker_id = ?1, started_at = ?2, "
                  "lease_expires = ?2 + ?4, worker = coalesce((SELECT host || ':' || pid FROM workers WHERE id = ?1), ''), "
                  "host = coalesce((SELECT host FROM workers WHERE id = ?1), '') WHERE id = ?3 AND state = 'queued'"),
        select_job(db, std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?"),
        complete(db, "UPDATE jobs SET state = 'done', finished_at = ?1, output_path = ?2, metadata = ?3, error = '', "
                     "lease_expires = 0, qa_json = ?6, qa_flags = ?7 WHERE id = ?4 AND state = 'running' AND worker_id = ?5 "
                     "RETURNING run_id, row_key, reseed_max, priority, cancel_requested"),
        count_image(db, "UPDATE workers SET images_done = images_done + 1 WHERE id = ?"),
        step_hold(db, "SELECT cancel_requested FROM jobs WHERE id = ? AND state = 'running' AND worker_id = ?") {}

  SQLite::Statement paused, top, preferred, preferred_lora, lease, select_job, complete, count_image, step_hold;
};

SqliteQueueStore::~SqliteQueueStore() = default;

namespace {

bool existing_file(const std::filesystem::path& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// A missing queue is made whole under a temporary name and linked into place, so that a file at the
// path is never a half-made queue (a process killed while creating it leaves only the temporary), and
// an existing file that is not a queue can be told apart. Returns whether the path existed before.
bool create_if_missing(const std::filesystem::path& path) {
  if (existing_file(path)) return true;
  std::random_device rd;
  const auto tmp = path.parent_path() / ("." + path.filename().string() + ".new-" + std::to_string(getpid()) + "-" +
                                         std::to_string(rd()));
  {
    SQLite::Database db(tmp.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    sqlite_store::migrate(db, path, sqlite_store::schema_versions());
  }
  const bool linked = ::link(tmp.c_str(), path.c_str()) == 0 || errno == EEXIST;  // EEXIST: another process won
  const int link_errno = errno;
  ::unlink(tmp.c_str());
  if (!linked) throw std::runtime_error(path.string() + ": cannot create the queue database: " + std::strerror(link_errno));
  return false;
}

}  // namespace

SqliteQueueStore::SqliteQueueStore(const std::filesystem::path& path, StoreOptions options) try
    : path_(path), options_(options), existed_(create_if_missing(path)),
      db_(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_FULLMUTEX, options.busy_timeout_ms) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path.string() + ": cannot stat the queue database");
  file_dev_ = st.st_dev;
  file_ino_ = st.st_ino;
  // Before anything writes to it: an existing file that is not a queue stays as it was.
  if (existed_ && !options_.create_over_invalid) {
    SQLite::Statement q(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
    q.executeStep();
    if (q.getColumn(0).getInt() == 0) {
      throw std::runtime_error(path.string() + ": exists but is not an rgbaq queue database (it is empty or holds "
                               "something else); refusing to start a fresh queue over it. Move it aside, or start "
                               "rgbaqd with --create-queue to make a new queue in this file");
    }
  }
  db_.exec("PRAGMA journal_mode = WAL");
  db_.exec(options_.durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
  db_.exec("PRAGMA foreign_keys = ON");
  db_.exec("PRAGMA cache_size = -65536");  // 64 MiB: big submits touch index pages all over
  migrate();
  st_ = std::make_unique<Statements>(db_);
} catch (const SQLite::Exception& e) {
  throw std::runtime_error(path.string() + ": cannot open the queue database: " + e.what());
}

void SqliteQueueStore::migrate() { sqlite_store::migrate(db_, path_, sqlite_store::schema_versions()); }

void SqliteQueueStore::create_at_version(const std::filesystem::path& path, int version) {
  SQLite::Database db(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  sqlite_store::migrate(db, path, static_cast<size_t>(version));
}

void SqliteQueueStore::check_file_identity() const {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {
    throw std::runtime_error(path_.string() + ": the queue database was deleted while rgbaqd had it open; refusing "
                             "writes that could not be kept (restart rgbaqd)");
  }
  if (static_cast<uint64_t>(st.st_dev) != file_dev_ || static_cast<uint64_t>(st.st_ino) != file_ino_) {
    throw std::runtime_error(path_.string() + ": the queue database was replaced by another file while rgbaqd had it "
                             "open; refusing writes that could not be kept (restart rgbaqd)");
  }
}

int SqliteQueueStore::schema_version() {
  SQLite::Statement q(db_, "SELECT version FROM schema_version");
  return q.executeStep() ? q.getColumn(0).getInt() : 0;
}

int64_t SqliteQueueStore::begin_run(const RunOptions& run) {
  check_file_identity();
  SQLite::Statement ins_run(db_, "INSERT INTO runs (name, options, out_dir, created_at, pending, touched_at) VALUES (?, ?, ?, ?4, 1, ?4)");
  ins_run.bind(1, run.name);
  ins_run.bind(2, run.options_json);
  ins_run.bind(3, run.out_dir);
  ins_run.bind(4, now_seconds());
  ins_run.exec();
  return db_.getLastInsertRowid();
}

SubmitResult SqliteQueueStore::append_jobs(int64_t run_id, const RunOptions& run, const std::vector<NewJob>& jobs) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  const double now = now_seconds();
  SubmitResult result;
  result.run_id = run_id;
  SQLite::Statement exists(db_,
                           "SELECT 1 FROM jobs WHERE content_key = ? AND state IN ('queued', 'running', 'done') LIMIT 1");
  SQLite::Statement claim(db_, "INSERT INTO outputs (path, content_key, run_id) VALUES (?, ?, ?) ON CONFLICT (path) DO NOTHING");
  SQLite::Statement owner(db_, "SELECT content_key, run_id FROM outputs WHERE path = ?");
  SQLite::Statement ins(db_, sqlite_store::kInsertJob);
  SQLite::Statement take(db_, "UPDATE outputs SET content_key = ?, run_id = ? WHERE path = ?");
  // The run of a queued or running job of the owner's content at the path (0 when none): such a path
  // is not taken over, whatever the submit says.
  SQLite::Statement active(db_, "SELECT run_id FROM jobs WHERE content_key = ? AND output_path = ? AND state IN ('queued', "
                                "'running') LIMIT 1");
  auto owner_active_run = [&](const std::string& path, int64_t owner_ck) {
    active.bind(1, owner_ck);
    active.bindNoCopy(2, path);
    const int64_t r = active.executeStep() ? active.getColumn(0).getInt64() : 0;
    active.reset();
    return r;
  };
  std::vector<OutputClash> clashes;
  for (const NewJob& j : jobs) {
    if (run.skip_duplicates) {
      exists.bind(1, static_cast<int64_t>(j.content_key));
      const bool dup = exists.executeStep();
      exists.reset();
      if (dup) {
        ++result.skipped;
        continue;
      }
    }
    claim.bindNoCopy(1, j.output_path);
    claim.bind(2, static_cast<int64_t>(j.content_key));
    claim.bind(3, run_id);
    const bool fresh = claim.exec() == 1;
    claim.reset();
    if (!fresh) {
      owner.bindNoCopy(1, j.output_path);
      owner.executeStep();
      const int64_t owner_ck = owner.getColumn(0).getInt64();
      const bool same = owner_ck == static_cast<int64_t>(j.content_key);
      const int64_t owner_run = owner.getColumn(1).getInt64();
      owner.reset();
      if (!same) {
        const int64_t active_run = owner_active_run(j.output_path, owner_ck);
        if (j.may_take_over && active_run == 0) {
          take.bind(1, static_cast<int64_t>(j.content_key));
          take.bind(2, run_id);
          take.bindNoCopy(3, j.output_path);
          take.exec();
          take.reset();
          ++result.taken_over;
        } else {
          clashes.push_back({j.line, j.output_path, active_run != 0 ? active_run : owner_run, active_run != 0});
          if (clashes.size() >= 20) break;  // enough to say what is wrong
          continue;
        }
      }
    }
    sqlite_store::bind_new_job(ins, run_id, j, j.priority, now, 0);
    ins.exec();
    ins.reset();
    ++result.inserted;
  }
  if (!clashes.empty()) throw OutputClashError(std::move(clashes));  // the transaction rolls back
  SQLite::Statement touch(db_, "UPDATE runs SET touched_at = ? WHERE id = ?");
  touch.bind(1, now);
  touch.bind(2, run_id);
  touch.exec();
  tx.commit();
  return result;
}

void SqliteQueueStore::publish_run(int64_t run_id, uint64_t inserted) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement counts(db_, "INSERT INTO run_counts (run_id, state, n) VALUES (?, 'queued', ?) "
                                "ON CONFLICT (run_id, state) DO UPDATE SET n = n + excluded.n");
  counts.bind(1, run_id);
  counts.bind(2, static_cast<int64_t>(inserted));
  counts.exec();
  SQLite::Statement visible(db_, "UPDATE runs SET pending = 0 WHERE id = ?");
  visible.bind(1, run_id);
  visible.exec();
  record_ends_locked(run_id);  // a run with no job to run (every one a duplicate) ends as it is published
  tx.commit();
}

int64_t SqliteQueueStore::discard_run(int64_t run_id) {
  int64_t deleted = 0;
  // Batches, each its own transaction: discarding a million jobs must not hold the lock either.
  for (;;) {
    SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
    SQLite::Statement del(db_, "DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE run_id = ? LIMIT 5000)");
    del.bind(1, run_id);
    const int n = del.exec();
    tx.commit();
    deleted += n;
    if (n == 0) break;
  }
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  for (const char* sql : {"DELETE FROM outputs WHERE run_id = ?", "DELETE FROM run_counts WHERE run_id = ?",
                          "DELETE FROM run_ends WHERE run_id = ?", "DELETE FROM runs WHERE id = ? AND pending = 1"}) {
    SQLite::Statement q(db_, sql);
    q.bind(1, run_id);
    q.exec();
  }
  tx.commit();
  return deleted;
}

ForgottenRun SqliteQueueStore::forget_run(int64_t run_id) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  ForgottenRun r;
  SQLite::Statement run(db_, "SELECT 1 FROM runs WHERE id = ? AND pending = 0");
  run.bind(1, run_id);
  r.found = run.executeStep();
  if (!r.found) return r;
  SQLite::Statement active(db_, "SELECT count(*) FROM jobs WHERE run_id = ? AND state IN ('queued', 'running')");
  active.bind(1, run_id);
  active.executeStep();
  r.active = active.getColumn(0).getInt64();
  if (r.active > 0) return r;
  SQLite::Statement owed(db_, std::string("SELECT count(*) FROM run_ends WHERE run_id = ? AND ") + store_shared::kEndStillOwes);
  owed.bind(1, run_id);
  owed.executeStep();
  r.owed_hooks = owed.getColumn(0).getInt64();
  if (r.owed_hooks > 0) return r;
  // An image another run's job shares (a resubmit that reused it) stays that run's.
  SQLite::Statement images(db_, "SELECT id, output_path FROM jobs j WHERE run_id = ? AND state = 'done' AND NOT EXISTS ("
                                "SELECT 1 FROM jobs o WHERE o.content_key = j.content_key AND o.output_path = j.output_path "
                                "AND o.run_id <> j.run_id) ORDER BY id");
  images.bind(1, run_id);
  while (images.executeStep()) r.images.push_back({images.getColumn(0).getInt64(), images.getColumn(1).getString()});
  SQLite::Statement jobs(db_, "DELETE FROM jobs WHERE run_id = ?");
  jobs.bind(1, run_id);
  r.jobs = jobs.exec();
  // Each path the run owned: released, or handed to the earliest run whose job still uses it.
  for (const char* sql : {"DELETE FROM outputs WHERE run_id = ?1 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE "
                          "j.content_key = outputs.content_key AND j.output_path = outputs.path)",
                          "UPDATE outputs SET run_id = (SELECT min(j.run_id) FROM jobs j WHERE j.content_key = "
                          "outputs.content_key AND j.output_path = outputs.path) WHERE run_id = ?1",
                          // its finished jobs stay counted (kDoneCount)
                          "INSERT INTO settings (key, value) VALUES ('forgotten_done', (SELECT coalesce(sum(n), 0) FROM "
                          "run_counts WHERE run_id = ?1 AND state = 'done')) ON CONFLICT (key) DO UPDATE SET "
                          "value = CAST(value AS INTEGER) + CAST(excluded.value AS INTEGER)",
                          "DELETE FROM run_counts WHERE run_id = ?1", "DELETE FROM run_ends WHERE run_id = ?1",
                          "DELETE FROM runs WHERE id = ?1"}) {
    SQLite::Statement q(db_, sql);
    q.bind(1, run_id);
    q.exec();
  }
  tx.commit();
  return r;
}

std::optional<Job> SqliteQueueStore::claim_locked(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                                  const std::vector<std::string>& preferred_loras) {
  if (paused()) return std::nullopt;
  {
    // A worker the queue does not know (never registered, or forgotten after a silent lease) takes
    // nothing: no heartbeat would renew the lease it took, and recovery would hand its job to another.
    SQLite::Statement registered(db_, "SELECT 1 FROM workers WHERE id = ?");
    registered.bind(1, worker_id);
    if (!registered.executeStep()) return std::nullopt;
  }
  const double now = now_seconds();
  int64_t id = 0;
  int priority = 0;
  {
    Use top(st_->top);
    top->bind(1, now);
    if (!top->executeStep()) return std::nullopt;
    id = top->getColumn(0).getInt64();
    priority = top->getColumn(1).getInt();
  }
  // After priority: a loaded LoRA set with a cached prompt, then a loaded set, then a cached prompt.
  auto loaded = [&](const std::string& lora) {
    return std::find(preferred_loras.begin(), preferred_loras.end(), lora) != preferred_loras.end();
  };
  int64_t best = INT64_MAX, best_loaded = INT64_MAX, best_lora = INT64_MAX;
  for (const uint64_t key : preferred) {
    Use pref(st_->preferred);
    pref->bind(1, static_cast<int64_t>(key));
    pref->bind(2, priority);
    pref->bind(3, now);
    if (!pref->executeStep()) continue;
    const int64_t found = pref->getColumn(0).getInt64();
    best = std::min(best, found);
    if (loaded(pref->getColumn(1).getString())) best_loaded = std::min(best_loaded, found);
  }
  for (const std::string& lora : preferred_loras) {
    Use pref(st_->preferred_lora);
    pref->bind(1, lora);
    pref->bind(2, priority);
    pref->bind(3, now);
    if (pref->executeStep()) best_lora = std::min(best_lora, pref->getColumn(0).getInt64());
  }
  for (const int64_t choice : {best_loaded, best_lora, best}) {
    if (choice != INT64_MAX) {
      id = choice;
      break;
    }
  }
  {
    Use lease(st_->lease);
    lease->bind(1, worker_id);
    lease->bind(2, now);
    lease->bind(3, id);
    lease->bind(4, options_.lease_seconds);
    if (lease->exec() != 1) return std::nullopt;
  }
  return job(id);
}

std::optional<Job> SqliteQueueStore::claim(int64_t worker_id, const std::vector<uint64_t>& preferred,
                                           const std::vector<std::string>& preferred_loras) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  auto job = claim_locked(worker_id, preferred, preferred_loras);
  tx.commit();
  return job;
}

bool SqliteQueueStore::complete_locked(int64_t job_id, int64_t worker_id, const Completion& c) {
  store_shared::CompletedJob done{.id = job_id};
  {
    Use q(st_->complete);
    q->bind(1, now_seconds());
    q->bindNoCopy(2, c.output_path);
    q->bindNoCopy(3, c.metadata_json);
    q->bind(4, job_id);
    q->bind(5, worker_id);
    q->bindNoCopy(6, c.qa_json);
    q->bindNoCopy(7, c.qa_flags);
    if (!q->executeStep()) return false;
    done.run_id = q->getColumn(0).getInt64();
    done.row_key = static_cast<uint64_t>(q->getColumn(1).getInt64());
    done.reseed_max = q->getColumn(2).getInt();
    done.priority = q->getColumn(3).getInt();
    done.cancel_requested = q->getColumn(4).getInt() != 0;
  }
  {
    Use count(st_->count_image);
    count->bind(1, worker_id);
    count->exec();
  }
  // The re-seeded job first: a run that gets one has not ended. A job canceled as it finished gets none.
  if (!c.reseed_candidates.empty() && !done.cancel_requested) reseed_locked(done, c.reseed_candidates);
  record_ends_locked(done.run_id);
  return true;
}

bool SqliteQueueStore::complete(int64_t job_id, int64_t worker_id, const Completion& c) {
  check_file_identity();
  store_shared::check_reseed_candidates(*this, job_id, c);
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  const bool ok = complete_locked(job_id, worker_id, c);
  tx.commit();
  return ok;
}

std::optional<Job> SqliteQueueStore::complete_and_claim(int64_t job_id, const Completion& c, int64_t worker_id,
                                                        const std::vector<uint64_t>& preferred,
                                                        const std::vector<std::string>& preferred_loras) {
  check_file_identity();
  store_shared::check_reseed_candidates(*this, job_id, c);
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  complete_locked(job_id, worker_id, c);
  auto next = claim_locked(worker_id, preferred, preferred_loras);
  tx.commit();
  return next;
}

std::optional<JobState> SqliteQueueStore::fail(int64_t job_id, int64_t worker_id, const std::string& reason,
                                               Failure failure) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  // One statement: the attempt count it judges is the one it updates. Backoff before attempt k + 1:
  // backoff * 2^(k - 1), at most 5 minutes.
  SQLite::Statement q(db_,
                      "UPDATE jobs SET state = CASE WHEN ?1 OR attempts >= ?2 THEN 'failed' ELSE 'queued' END, error = ?3, "
                      "not_before = CASE WHEN ?1 OR attempts >= ?2 THEN 0 "
                      "ELSE ?4 + min(300.0, ?5 * (1 << min(max(attempts - 1, 0), 30))) END, "
                      "finished_at = CASE WHEN ?1 OR attempts >= ?2 THEN ?4 ELSE 0 END, "
                      "errors = json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', ?4, 'reason', ?3)), "
                      "interruptions_at_step = 0, deaths_in_row = 0, death_steps = '', worker_id = 0, lease_expires = 0 "
                      "WHERE id = ?6 AND state = 'running' AND worker_id = ?7 RETURNING state, run_id");
  q.bind(1, static_cast<int>(failure == Failure::kPermanent));
  q.bind(2, options_.max_attempts);
  q.bind(3, reason);
  q.bind(4, now_seconds());
  q.bind(5, options_.backoff_seconds);
  q.bind(6, job_id);
  q.bind(7, worker_id);
  if (!q.executeStep()) return std::nullopt;
  const JobState state = parse_state(q.getColumn(0).getString()).value_or(JobState::kFailed);
  const int64_t run_id = q.getColumn(1).getInt64();
  q.reset();
  if (state == JobState::kFailed) record_ends_locked(run_id);
  tx.commit();
  return state;
}

bool SqliteQueueStore::requeue(int64_t job_id, int64_t worker_id) {
  check_file_identity();
  SQLite::Statement q(db_,
                      "UPDATE jobs SET state = 'queued', attempts = max(attempts - 1, 0), worker = '', worker_id = 0, "
                      "lease_expires = 0, interruptions_at_step = 0, deaths_in_row = 0, death_steps = '' "
                      "WHERE id = ? AND state = 'running' AND worker_id = ?");
  q.bind(1, job_id);
  q.bind(2, worker_id);
  return q.exec() == 1;
}

bool SqliteQueueStore::finish_canceled(int64_t job_id, int64_t worker_id) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db_,
                      "UPDATE jobs SET state = 'canceled', finished_at = ?, worker_id = 0, lease_expires = 0 WHERE id = ? AND "
                      "state = 'running' AND worker_id = ? AND cancel_requested = 1 RETURNING run_id");
  q.bind(1, now_seconds());
  q.bind(2, job_id);
  q.bind(3, worker_id);
  if (!q.executeStep()) return false;
  const int64_t run_id = q.getColumn(0).getInt64();
  q.reset();
  record_ends_locked(run_id);
  tx.commit();
  return true;
}

QueueStore::Canceled SqliteQueueStore::cancel_where(const char* column, int64_t id) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement queued(db_, std::string("UPDATE jobs SET state = 'canceled', finished_at = ? WHERE ") + column +
                                    " = ? AND state = 'queued'" + kVisible);
  queued.bind(1, now_seconds());
  queued.bind(2, id);
  Canceled n;
  n.canceled = queued.exec();
  SQLite::Statement running(db_, std::string("UPDATE jobs SET cancel_requested = 1 WHERE ") + column + " = ? AND state = 'running'");
  running.bind(1, id);
  n.stopping = running.exec();
  int64_t run_id = id;
  if (std::string_view(column) == "id") {  // the job's run
    SQLite::Statement run(db_, "SELECT run_id FROM jobs WHERE id = ?");
    run.bind(1, id);
    run_id = run.executeStep() ? run.getColumn(0).getInt64() : 0;
  }
  if (run_id != 0) record_ends_locked(run_id);
  tx.commit();
  return n;
}

QueueStore::Canceled SqliteQueueStore::cancel_run(int64_t run_id) { return cancel_where("run_id", run_id); }

bool SqliteQueueStore::cancel_job(int64_t job_id) { return cancel_where("id", job_id).total() > 0; }

QueueStore::StepHold SqliteQueueStore::step_hold(int64_t job_id, int64_t worker_id) {
  Use q(st_->step_hold);
  q->bind(1, job_id);
  q->bind(2, worker_id);
  if (!q->executeStep()) return StepHold::kLost;
  return q->getColumn(0).getInt() != 0 ? StepHold::kCancelRequested : StepHold::kHeld;
}

void SqliteQueueStore::set_paused(bool paused) {
  check_file_identity();
  SQLite::Statement q(db_, "INSERT INTO settings (key, value) VALUES ('paused', ?) "
                           "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  q.bind(1, paused ? "1" : "0");
  q.exec();
}

bool SqliteQueueStore::paused() {
  Use q(st_->paused);
  return q->executeStep() && q->getColumn(0).getString() == "1";
}

int64_t SqliteQueueStore::prioritize_run(int64_t run_id, int priority) {
  check_file_identity();
  SQLite::Statement q(db_, "UPDATE jobs SET priority = ? WHERE run_id = ? AND state IN ('queued', 'running')");
  q.bind(1, priority);
  q.bind(2, run_id);
  return q.exec();
}

int64_t SqliteQueueStore::retry(int64_t run_id, bool include_canceled) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db_, std::string("UPDATE jobs SET ") + kRetrySet + " WHERE run_id = ? AND state IN ('failed'" +
                               (include_canceled ? ", 'canceled')" : ")") + kStillOwner);
  q.bind(1, run_id);
  const int64_t n = q.exec();
  reopen_runs_locked(run_id);
  tx.commit();
  return n;
}

int64_t SqliteQueueStore::retry_jobs(const std::vector<int64_t>& job_ids) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db_, std::string("UPDATE jobs SET ") + kRetrySet +
                               " WHERE id IN (SELECT value FROM json_each(?)) AND state IN ('failed', 'canceled')" + kStillOwner);
  int64_t n = 0;
  for (const std::string& slice : id_slices(job_ids)) {
    q.bind(1, slice);
    n += q.exec();
    q.reset();
  }
  reopen_runs_locked(std::nullopt);
  tx.commit();
  return n;
}

int64_t SqliteQueueStore::set_marks(const std::vector<int64_t>& job_ids, Mark mark, const std::string& by) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  const auto slices = id_slices(job_ids);
  // Every id is a job, or nothing changes: all slices are checked before any is marked.
  SQLite::Statement missing(db_, "SELECT k.value FROM json_each(?) k WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = k.value) "
                                 "ORDER BY k.key LIMIT 1");
  for (const std::string& slice : slices) {
    missing.bind(1, slice);
    if (missing.executeStep()) throw NoSuchJobError(missing.getColumn(0).getInt64());
    missing.reset();
  }
  SQLite::Statement set(db_, "UPDATE jobs SET mark = ?2, marked_at = CASE WHEN ?2 = '' THEN 0 ELSE ?3 END, "
                             "marked_by = CASE WHEN ?2 = '' THEN '' ELSE ?4 END "
                             "WHERE id IN (SELECT value FROM json_each(?1)) AND mark <> ?2");
  const double now = now_seconds();
  int64_t n = 0;
  for (const std::string& slice : slices) {
    set.bind(1, slice);
    set.bind(2, std::string(mark_name(mark)));
    set.bind(3, now);
    set.bind(4, by);
    n += set.exec();
    set.reset();
  }
  tx.commit();
  return n;
}

RecoverResult SqliteQueueStore::recover(std::optional<int64_t> crashed_job) {
  check_file_identity();
  RecoverResult r;
  const double now = now_seconds();
  std::vector<int64_t> pending;
  {
    // Submits cut off before their last batch and left alone for a lease: their submitter is gone.
    SQLite::Statement q(db_, "SELECT id FROM runs WHERE pending = 1 AND touched_at < ?");
    q.bind(1, now - options_.lease_seconds);
    while (q.executeStep()) pending.push_back(q.getColumn(0).getInt64());
  }
  for (const int64_t id : pending) r.discarded_jobs += discard_run(id);
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  // Only expired leases: a live worker's job (its heartbeat extends the lease) is never taken.
  // Expired, or held by no worker (nobody could renew it).
  const std::string expired = "state = 'running' AND (lease_expires < ?4 OR worker_id = 0)";
  // ?2 the first bound, ?5 and on the others.
  auto fail_where = [&](const std::string& reason_sql, const std::string& where, std::initializer_list<int> bounds) {
    SQLite::Statement q(db_, "UPDATE jobs SET state = 'failed', finished_at = ?1, error = " + reason_sql +
                                 ", errors = json_insert(errors, '$[#]', json_object('attempt', attempts, 'at', ?1, "
                                 "'reason', " + reason_sql + ")), worker_id = 0, lease_expires = 0 WHERE " + expired + " AND " + where);
    q.bind(1, now);
    q.bind(3, crashed_job.value_or(-1));
    q.bind(4, now);
    int index = 2;
    for (const int bound : bounds) {
      q.bind(index, bound);
      index = index == 2 ? 5 : index + 1;
    }
    return q.exec();
  };
  // An expired job whose cancel was requested is canceled, as its worker would have done: not queued
  // again, and no death of its counted.
  {
    SQLite::Statement q(db_, "UPDATE jobs SET state = 'canceled', finished_at = ?1, worker_id = 0, lease_expires = 0 "
                             "WHERE state = 'running' AND (lease_expires < ?1 OR worker_id = 0) AND cancel_requested = 1");
    q.bind(1, now);
    r.canceled = q.exec();
  }
  // Every expired job, the crashed one too, died with the daemon (or its host) while it rendered (its
  // lease recorded a step): one more death in its row when no other job finished since its last (the
  // count of finished jobs unchanged), else the first of a new row, the step noted. A death before any
  // step was recorded (the daemon killed as it started, in the heartbeat's first second) cannot be
  // the job's doing: it leaves the row as it is.
  {
    SQLite::Statement q(db_, std::string("UPDATE jobs SET death_steps = CASE WHEN deaths_in_row > 0 AND done_at_death = (") +
                                 kDoneCount + ") THEN death_steps || ', ' ELSE '' END || step, "
                                 "deaths_in_row = CASE WHEN deaths_in_row > 0 AND done_at_death = (" +
                                 kDoneCount + ") THEN deaths_in_row + 1 ELSE 1 END, done_at_death = (" + kDoneCount +
                                 ") WHERE state = 'running' AND (lease_expires < ?1 OR worker_id = 0) AND progress_at >= started_at");
    q.bind(1, now);
    q.exec();
  }
  // The crashed job: its attempt counts (taken at the claim).
  r.failed += fail_where("'crashed the daemon ' || attempts || ' times'", "id = ?3 AND attempts >= ?2", {options_.max_attempts});
  // Statements over the others (interrupted): ?1 the crashed job, ?2 now, `bounds` from ?3 on.
  auto update_interrupted = [&](const std::string& set, const std::string& condition, std::initializer_list<double> bounds) {
    SQLite::Statement q(db_, "UPDATE jobs SET " + set + " WHERE state = 'running' AND (lease_expires < ?2 OR worker_id = 0) "
                             "AND id != ?1" + condition);
    q.bind(1, crashed_job.value_or(-1));
    q.bind(2, now);
    int index = 3;
    for (const double bound : bounds) q.bind(index++, bound);
    return q.exec();
  };
  // At the step its lease last recorded (progress_at from this lease), the same as its last
  // interruption's: one more in a row there; at another: the first; none recorded: none.
  update_interrupted("interruptions_at_step = CASE WHEN progress_at < started_at THEN 0 WHEN step = interrupted_at_step "
                     "THEN interruptions_at_step + 1 ELSE 1 END, "
                     "interrupted_at_step = CASE WHEN progress_at < started_at THEN -1 ELSE step END", "", {});
  // Interrupted at one step so many times in a row: the job's own doing (the kernel killing it there for
  // its memory, say), so it counts as a crash: its attempt is spent, and after a backoff (the other jobs
  // claimed first) it runs again, failing at the attempt limit.
  r.failed += fail_where("'the daemon died at step ' || interrupted_at_step || ' on each of its last tries (out of memory?)'",
                         "id != ?3 AND interruptions_at_step >= ?2 AND attempts >= ?5",
                         {options_.same_step_interruptions, options_.max_attempts});
  // Any other: the attempt is given back, the interruption counted.
  update_interrupted("attempts = max(attempts - 1, 0), interruptions = interruptions + 1", " AND interruptions_at_step < ?3",
                     {static_cast<double>(options_.same_step_interruptions)});
  // So many deaths in a row with it in hand, and nothing else finished: its own doing, whatever the steps.
  // (In this order the reasons rank as PostgreSQL's statement ranks them.)
  r.failed += fail_where("'the daemon died ' || deaths_in_row || ' times with this job in hand, no other job finishing in "
                         "between (at steps ' || death_steps || ')'",
                         "deaths_in_row >= ?2", {options_.max_deaths});
  // The same-step ones still queued: their backoff.
  update_interrupted("not_before = ?2 + min(300.0, ?4 * (1 << min(max(attempts - 1, 0), 30)))", " AND interruptions_at_step >= ?3",
                     {static_cast<double>(options_.same_step_interruptions), options_.backoff_seconds});
  r.failed += fail_where("'interrupted ' || interruptions || ' times'", "id != ?3 AND interruptions >= ?2",
                         {options_.max_interruptions});
  SQLite::Statement requeue(db_, "UPDATE jobs SET state = 'queued', worker = '', worker_id = 0, lease_expires = 0 "
                                 "WHERE state = 'running' AND (lease_expires < ?1 OR worker_id = 0)");
  requeue.bind(1, now);
  r.requeued = requeue.exec();
  SQLite::Statement forget(db_, "DELETE FROM workers WHERE heartbeat_at < ?");
  forget.bind(1, now - options_.lease_seconds);
  forget.exec();
  // The ends its failures and cancels made, and any other open run's with nothing left to run (an end
  // a crash or an older rgbaq missed): every open run's, through the open-runs index.
  record_ends_locked(std::nullopt);
  recover_run_ends_locked(now);
  tx.commit();
  return r;
}

int64_t SqliteQueueStore::register_worker(const WorkerInfo& info) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  // Never an id given before: a job's transitions are fenced by its worker's id, and SQLite would give a
  // forgotten worker's id (the highest) to the next one. The last id given is kept in settings.
  SQLite::Statement q(db_, "INSERT INTO workers (id, host, boot_id, pid, engine, device, started_at, heartbeat_at, runs_hooks, "
                           "sends_webhooks) VALUES (max(coalesce((SELECT CAST(value AS INTEGER) FROM settings WHERE key = "
                           "'last_worker_id'), 0), coalesce((SELECT max(id) FROM workers), 0)) + 1, ?, ?, ?, ?, ?, ?6, ?6, ?7, ?8)");
  q.bind(1, info.host);
  q.bind(2, info.boot_id);
  q.bind(3, info.pid);
  q.bind(4, info.engine);
  q.bind(5, info.device);
  q.bind(6, now_seconds());
  q.bind(7, options_.owe_hook ? 1 : 0);  // what its daemon can do at a run's end
  q.bind(8, options_.owe_webhook ? 1 : 0);
  q.exec();
  const int64_t id = db_.getLastInsertRowid();
  SQLite::Statement last(db_, "INSERT INTO settings (key, value) VALUES ('last_worker_id', ?) "
                              "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  last.bind(1, std::to_string(id));
  last.exec();
  tx.commit();
  return id;
}

bool SqliteQueueStore::heartbeat(int64_t worker_id, const std::vector<int64_t>& jobs) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  const double now = now_seconds();
  SQLite::Statement beat(db_, "UPDATE workers SET heartbeat_at = ? WHERE id = ?");
  beat.bind(1, now);
  beat.bind(2, worker_id);
  if (beat.exec() != 1) return false;  // forgotten: its leases may be someone else's now
  SQLite::Statement extend(db_, "UPDATE jobs SET lease_expires = ? WHERE id = ? AND worker_id = ? AND state = 'running'");
  for (const int64_t id : jobs) {
    extend.bind(1, now + options_.lease_seconds);
    extend.bind(2, id);
    extend.bind(3, worker_id);
    extend.exec();
    extend.reset();
  }
  tx.commit();
  return true;
}

void SqliteQueueStore::unregister_worker(int64_t worker_id) {
  check_file_identity();
  SQLite::Statement q(db_, "DELETE FROM workers WHERE id = ?");
  q.bind(1, worker_id);
  q.exec();
}

int64_t SqliteQueueStore::expire_worker(int64_t worker_id) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db_, "UPDATE jobs SET lease_expires = 0 WHERE worker_id = ? AND state = 'running'");
  q.bind(1, worker_id);
  const int64_t n = q.exec();
  SQLite::Statement del(db_, "DELETE FROM workers WHERE id = ?");
  del.bind(1, worker_id);
  del.exec();
  tx.commit();
  return n;
}

void SqliteQueueStore::record_progress(int64_t worker_id, const std::vector<JobProgress>& progress) {
  check_file_identity();
  SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
  SQLite::Statement q(db_, "UPDATE jobs SET step = ?, steps = ?, decoding = ?, progress_at = ? WHERE id = ? AND "
                           "worker_id = ? AND state = 'running'");
  const double now = now_seconds();
  for (const JobProgress& p : progress) {
    q.bind(1, p.step);
    q.bind(2, p.steps);
    q.bind(3, p.decoding ? 1 : 0);
    q.bind(4, now);
    q.bind(5, p.job);
    q.bind(6, worker_id);
    q.exec();
    q.reset();
  }
  tx.commit();
}

std::vector<Worker> SqliteQueueStore::list_workers() {
  SQLite::Statement q(db_, "SELECT w.id, host, boot_id, pid, engine, device, started_at, heartbeat_at, images_done, "
                           "coalesce((SELECT min(id) FROM jobs WHERE state = 'running' AND worker_id = w.id), 0) "
                           "FROM workers w ORDER BY id");
  std::vector<Worker> workers;
  while (q.executeStep()) {
    Worker w;
    w.id = q.getColumn(0).getInt64();
    w.info = {q.getColumn(1).getString(), q.getColumn(2).getString(), q.getColumn(3).getInt64(),
              q.getColumn(4).getString(), q.getColumn(5).getString()};
    w.started_at = q.getColumn(6).getDouble();
    w.heartbeat_at = q.getColumn(7).getDouble();
    w.images_done = q.getColumn(8).getInt64();
    w.job = q.getColumn(9).getInt64();
    workers.push_back(std::move(w));
  }
  return workers;
}

std::vector<Run> SqliteQueueStore::list_runs() {
  std::vector<Run> runs;
  SQLite::Statement q(db_, "SELECT id, name, options, out_dir, created_at FROM runs WHERE pending = 0 ORDER BY id");
  while (q.executeStep()) {
    Run r;
    r.id = q.getColumn(0).getInt64();
    r.name = q.getColumn(1).getString();
    r.options_json = q.getColumn(2).getString();
    r.out_dir = q.getColumn(3).getString();
    r.created_at = q.getColumn(4).getDouble();
    runs.push_back(std::move(r));
  }
  SQLite::Statement c(db_, "SELECT run_id, state, n FROM run_counts");
  while (c.executeStep()) add_run_count(runs, c.getColumn(0).getInt64(), c.getColumn(1).getString(), c.getColumn(2).getInt64());
  for (RunEnd& end : last_ends()) {
    if (Run* r = listed_run(runs, end.run_id)) r->last_end = std::move(end);
  }
  return runs;
}

std::map<int64_t, double> SqliteQueueStore::finish_times() {
  std::map<int64_t, double> out;
  SQLite::Statement q(db_, "SELECT run_id, MAX(finished_at) FROM jobs GROUP BY run_id "
                           "HAVING SUM(state IN ('queued', 'running')) = 0");
  while (q.executeStep()) out[q.getColumn(0).getInt64()] = q.getColumn(1).getDouble();
  return out;
}

std::vector<Job> SqliteQueueStore::list_jobs(const JobQuery& query) {
  store_shared::check_qa_flag_filter(query.qa_flag);
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE 1 = 1";
  if (query.run) sql += " AND run_id = :run";
  if (query.state) sql += " AND state = :state";
  if (query.marked) sql += std::string(" AND ") + mark_filter_sql(*query.marked);
  // A flag is a whole name between commas; "" is a job not checked yet.
  if (query.qa_flag) sql += query.qa_flag->empty() ? " AND qa_flags = ''" : " AND instr(',' || qa_flags || ',', ',' || :qa || ',') > 0";
  if (query.after_id > 0) sql += " AND id > :after";
  sql += " ORDER BY id LIMIT :limit OFFSET :offset";
  SQLite::Statement q(db_, sql);
  if (query.qa_flag && !query.qa_flag->empty()) q.bind(":qa", *query.qa_flag);
  if (query.run) q.bind(":run", *query.run);
  if (query.after_id > 0) q.bind(":after", query.after_id);
  if (query.state) q.bind(":state", std::string(state_name(*query.state)));
  q.bind(":limit", query.limit);
  q.bind(":offset", query.offset);
  std::vector<Job> jobs;
  while (q.executeStep()) jobs.push_back(read_job(q));
  return jobs;
}

std::optional<Job> SqliteQueueStore::job(int64_t job_id) {
  Use q(st_->select_job);
  q->bind(1, job_id);
  if (!q->executeStep()) return std::nullopt;
  return read_job(*q);
}

StateCounts SqliteQueueStore::counts(std::optional<int64_t> run_id) {
  StateCounts c{};
  SQLite::Statement q(db_, run_id ? "SELECT state, n FROM run_counts WHERE run_id = ?" : "SELECT state, sum(n) FROM run_counts GROUP BY state");
  if (run_id) q.bind(1, *run_id);
  while (q.executeStep()) {
    if (const auto s = parse_state(q.getColumn(0).getString())) c[static_cast<int>(*s)] = q.getColumn(1).getInt64();
  }
  return c;
}

std::string SqliteQueueStore::integrity_check() {
  std::string result;
  SQLite::Statement q(db_, "PRAGMA integrity_check");
  while (q.executeStep()) result += (result.empty() ? "" : "; ") + q.getColumn(0).getString();
  if (result != "ok") return result;
  // The counters must agree with the jobs they count.
  SQLite::Statement cmp(db_,
                        "SELECT count(*) FROM (SELECT run_id, state, count(*) AS n FROM jobs WHERE 1 = 1" + std::string(kVisible) +
                        " GROUP BY run_id, state) j "
                        "LEFT JOIN run_counts c USING (run_id, state) WHERE c.n IS NULL OR c.n != j.n");
  cmp.executeStep();
  if (cmp.getColumn(0).getInt64() != 0) return "run counters disagree with the jobs";
  SQLite::Statement ends(db_, store_shared::kEndedMismatch);
  if (ends.executeStep()) return store_shared::ended_mismatch_problem(ends.getColumn(0).getInt64(), ends.getColumn(1).getInt() != 0);
  SQLite::Statement orphans(db_, store_shared::orphans_sql("?"));
  orphans.bind(1, now_seconds());
  orphans.executeStep();
  if (const int64_t n = orphans.getColumn(0).getInt64()) return store_shared::orphans_problem(n, orphans.getColumn(1).getInt64());
  return "ok";
}

}  // namespace rgbaq::storage
