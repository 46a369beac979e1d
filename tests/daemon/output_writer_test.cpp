// The writer thread's boundary: a store error while recording a finished job (SQLite busy, a disk-full
// style abort) fails or leaves that job with the reason and never ends the process (std::terminate).
// An output that can never be written fails its job at once; one whose lease was lost is not recorded.
#include "daemon/worker/output_writer.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include <cerrno>
#include <fstream>
#include <future>
#include <cstring>

#include "daemon/worker/pending_outputs.h"
#include "storage/png_file.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::daemon {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  TempDir dir;
  fs::path db = dir.path() / "queue.db";
  fs::path pending = dir.path() / "pending-outputs";
  DaemonState state;
  WorkerState worker{0, "cpu"};
  EventHub events;

  storage::Job claim_one(const std::string& prompt, const fs::path& folder = {}) {
    storage::SqliteQueueStore store(db);
    storage::NewJob j;
    j.prompt = prompt;
    j.width = j.height = 2;
    j.output_path = ((folder.empty() ? dir.path() : folder) / (prompt + ".png")).string();
    j.content_key = std::hash<std::string>()(prompt);
    store.submit({.name = prompt, .out_dir = dir.path().string()}, {j});
    return *store.claim(store.register_worker({"test-host", "boot", 1, "none", "none"}));
  }
  FinishedRender render(const storage::Job& job) {
    FinishedRender r;
    r.job = job;
    r.width = r.height = 2;
    r.rgba.assign(16, 200);
    r.metadata.job_id = job.id;
    r.metadata.prompt = job.prompt;
    return r;
  }
};

TEST(OutputWriter, AStoreErrorInCompleteFailsTheAttemptWithTheReasonAndTheWriterCarriesOn) {
  Fixture f;
  // Both claimed before the writer starts: with no backoff, the failed first job is claimable again
  // at once and a later claim could take it instead of the second.
  const auto job = f.claim_one("first");
  const auto second = f.claim_one("second");
  {
    SQLite::Database raw(f.db.string(), SQLite::OPEN_READWRITE);
    raw.exec("CREATE TRIGGER refuse_done BEFORE UPDATE OF state ON jobs WHEN NEW.state = 'done' AND NEW.prompt = 'first' "
             "BEGIN SELECT RAISE(ABORT, 'database or disk is full (simulated)'); END");
  }
  OutputWriter writer(f.db, {.backoff_seconds = 0}, f.pending, f.state, f.worker, f.events);
  writer.enqueue(f.render(job));
  writer.enqueue(f.render(second));
  writer.finish();
  storage::SqliteQueueStore store(f.db);
  const auto first = *store.job(job.id);
  EXPECT_EQ(first.state, storage::JobState::kQueued);
  EXPECT_NE(first.error.find("database or disk is full (simulated)"), std::string::npos) << first.error;
  EXPECT_EQ(store.job(second.id)->state, storage::JobState::kDone) << "the writer went on to the next job";
}

TEST(OutputWriter, ABusyDatabaseLeavesTheJobForRecoveryAndDoesNotEndTheProcess) {
  Fixture f;
  const auto job = f.claim_one("busy");
  SQLite::Database locker(f.db.string(), SQLite::OPEN_READWRITE);
  {
    OutputWriter writer(f.db, {.busy_timeout_ms = 50}, f.pending, f.state, f.worker, f.events);
    locker.exec("BEGIN EXCLUSIVE");
    f.worker.hold(job.id);  // as the worker does at the claim
    writer.enqueue(f.render(job));
    writer.finish();
  }
  locker.exec("COMMIT");
  storage::SqliteQueueStore store(f.db);
  EXPECT_EQ(store.job(job.id)->state, storage::JobState::kRunning);
  EXPECT_EQ(store.recover().requeued, 0) << "its lease has not run out";
  EXPECT_TRUE(f.worker.held_jobs().empty()) << "the writer no longer renews its lease";
  store.expire_worker(job.worker_id);  // as a restart finds its dead process, or the lease runs out
  EXPECT_EQ(store.recover().requeued, 1);
  EXPECT_FALSE(fs::exists(job.output_path)) << "not known to be recorded done: not renamed into place";
  EXPECT_EQ(settle_pending_outputs(store, f.pending), 1) << "its note was left for the next start";
  for (const auto& e : fs::directory_iterator(f.dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".busy.png.tmp"), std::string::npos) << "the job is queued again: its temporary removed";
  }
}

TEST(OutputWriter, WriteErrorsNoRetryCanFixArePermanentOthersAreRetried) {
  using storage::Failure;
  auto kind = [](int e) { return write_failure_kind(std::error_code(e, std::generic_category())); };
  for (const int e : {ENOENT, ENOTDIR, EISDIR, EROFS, EACCES, EPERM, ENAMETOOLONG, ELOOP}) {
    EXPECT_EQ(kind(e), Failure::kPermanent) << std::strerror(e);
  }
  for (const int e : {ENOSPC, EDQUOT, EIO, EMFILE, ENFILE, ENOMEM, EINTR, EAGAIN, ESTALE}) {
    EXPECT_EQ(kind(e), Failure::kRetry) << std::strerror(e);
  }
  EXPECT_EQ(write_failure_kind(std::error_code(ENOTDIR, std::system_category())), Failure::kPermanent);
  EXPECT_EQ(write_failure_kind({}), Failure::kRetry) << "no OS error (libpng's own): retried";
  EXPECT_EQ(write_failure_kind(std::make_error_code(std::future_errc::broken_promise)), Failure::kRetry)
      << "another category's number is not an errno";
}

TEST(OutputWriter, AnOutputThatCanNeverBeWrittenFailsAtOnceAndTheOthersAreWritten) {
  Fixture f;
  // Its folder is a regular file (which holds for root too), and an output path that is a folder.
  const fs::path file_folder = f.dir.path() / "was_a_folder";
  std::ofstream(file_folder) << "not a folder";
  const auto in_file = f.claim_one("in_file", file_folder);
  const auto dir_path = f.claim_one("dir_path");
  fs::create_directories(dir_path.output_path);
  const auto fine = f.claim_one("fine", f.dir.path() / "new" / "folder");
  OutputWriter writer(f.db, {.max_attempts = 3, .backoff_seconds = 0}, f.pending, f.state, f.worker, f.events);
  for (const auto& j : {in_file, dir_path, fine}) writer.enqueue(f.render(j));
  writer.finish();
  storage::SqliteQueueStore store(f.db);
  const auto a = *store.job(in_file.id);
  EXPECT_EQ(a.state, storage::JobState::kFailed);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(a.error, in_file.output_path + ": cannot make its folder " + file_folder.string() +
                         ": Not a directory (not retried: trying again cannot fix this)");
  const auto b = *store.job(dir_path.id);
  EXPECT_EQ(b.state, storage::JobState::kFailed);
  EXPECT_EQ(b.attempts, 1);
  EXPECT_EQ(b.error, dir_path.output_path + ": writing the PNG failed: Is a directory (not retried: trying again "
                                            "cannot fix this)");
  EXPECT_EQ(store.job(fine.id)->state, storage::JobState::kDone);
  EXPECT_EQ(storage::read_png(fine.output_path).rgba, std::vector<uint8_t>(16, 200));
  EXPECT_EQ(f.state.counters.jobs_failed.load(), 2u);
  EXPECT_EQ(f.state.counters.images_rendered.load(), 1u);
  EXPECT_EQ(f.worker.images_done.load(), 1u) << "the worker's own count";
}

TEST(OutputWriter, WaitIdleReturnsOnceEverythingEnqueuedIsRecordedAndTheWriterGoesOn) {
  Fixture f;
  const auto a = f.claim_one("a"), b = f.claim_one("b"), c = f.claim_one("c");
  OutputWriter writer(f.db, {}, f.pending, f.state, f.worker, f.events);
  writer.enqueue(f.render(a));
  writer.enqueue(f.render(b));
  writer.wait_idle();  // a worker giving its leases back waits for this first
  {
    storage::SqliteQueueStore store(f.db);
    EXPECT_EQ(store.job(a.id)->state, storage::JobState::kDone);
    EXPECT_EQ(store.job(b.id)->state, storage::JobState::kDone);
  }
  EXPECT_EQ(f.worker.images_done.load(), 2u);
  writer.enqueue(f.render(c));
  writer.finish();
  storage::SqliteQueueStore store(f.db);
  EXPECT_EQ(store.job(c.id)->state, storage::JobState::kDone);
}

TEST(OutputWriter, AJobWhoseLeaseWasLostIsNotRecordedNorCounted) {
  Fixture f;
  const auto mine = f.claim_one("stalled");
  int64_t other = 0;
  {
    // This worker stalled past its lease: recovery took the job back and another worker claimed it.
    storage::SqliteQueueStore store(f.db);
    store.expire_worker(mine.worker_id);
    ASSERT_EQ(store.recover().requeued, 1);
    other = store.register_worker({"other-host", "boot", 2, "none", "none"});
    ASSERT_EQ(store.claim(other)->id, mine.id);
  }
  OutputWriter writer(f.db, {}, f.pending, f.state, f.worker, f.events);
  writer.enqueue(f.render(mine));
  writer.finish();
  storage::SqliteQueueStore store(f.db);
  const auto now = *store.job(mine.id);
  EXPECT_EQ(now.state, storage::JobState::kRunning);
  EXPECT_EQ(now.worker_id, other);
  EXPECT_EQ(f.state.counters.images_rendered.load(), 0u) << "not this worker's image to count";
  EXPECT_FALSE(fs::exists(mine.output_path)) << "the path is the holder's to write: a fenced-out worker never renames into it";
  for (const auto& e : fs::directory_iterator(f.dir.path())) {
    EXPECT_EQ(e.path().filename().string().find(".stalled.png.tmp"), std::string::npos) << "its temporary is removed";
  }
  EXPECT_TRUE(fs::is_empty(f.pending)) << "and its note";
}

// A crash between the record and the rename: the note left in the data directory lets the next start
// put the PNG recorded done in place, and remove the temporary of a job the queue gave to another.
TEST(OutputWriter, APngRecordedDoneBeforeACrashIsPutInPlaceAtTheNextStartAnotherJobsTemporaryRemoved) {
  Fixture f;
  const auto done = f.claim_one("done");
  const auto lost = f.claim_one("lost");
  storage::SqliteQueueStore store(f.db);
  const auto leave = [&](const storage::Job& job, const std::string& metadata) {
    const auto r = f.render(job);
    storage::PendingPng png(::open(f.dir.path().c_str(), O_RDONLY | O_DIRECTORY), job.output_path, r.rgba.data(), 2, 2, {});
    PendingOutputNote note(f.pending, job.id, job.output_path, png.temp_name(), metadata);
    png.keep();  // the crash: neither the rename nor the note's removal happens
    note.keep();
    return png.temp_name();
  };
  const std::string done_temp = leave(done, R"({"job_id":1,"host":"here"})");
  ASSERT_TRUE(store.complete(done.id, done.worker_id, done.output_path, R"({"job_id":1,"host":"here"})"));
  const std::string lost_temp = leave(lost, R"({"job_id":2,"host":"here"})");
  ASSERT_EQ(store.fail(lost.id, lost.worker_id, "taken back"), storage::JobState::kQueued);
  EXPECT_EQ(settle_pending_outputs(store, f.pending), 2);
  EXPECT_EQ(storage::read_png(done.output_path).width, 2) << "recorded done with this note's metadata: renamed into place";
  EXPECT_FALSE(fs::exists(f.dir.path() / done_temp));
  EXPECT_FALSE(fs::exists(lost.output_path)) << "not recorded done: never put at the path";
  EXPECT_FALSE(fs::exists(f.dir.path() / lost_temp)) << "its temporary removed";
  EXPECT_TRUE(fs::is_empty(f.pending));
}

}  // namespace
}  // namespace rgbaq::daemon
