// The queue store: every state transition, ordering and preference, resubmission, pause, recovery;
// a crash test that SIGKILLs a real process 60 times; and several processes submitting and claiming.
#include "storage/sqlite/sqlite_queue_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

NewJob job(const std::string& prompt, uint64_t seed, int priority = 0) {
  NewJob j;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.priority = priority;
  j.output_path = "/out/" + prompt + "_" + std::to_string(seed) + ".png";
  j.content_key = std::hash<std::string>{}(prompt + "|" + std::to_string(seed));
  j.prompt_key = std::hash<std::string>{}(prompt);
  return j;
}

int64_t count(QueueStore& s, JobState st, std::optional<int64_t> run = std::nullopt) { return s.counts(run)[static_cast<int>(st)]; }

TEST(QueueStore, SubmitClaimCompleteAndCounters) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db", {.max_attempts = 3, .backoff_seconds = 0});
  EXPECT_EQ(s.schema_version(), SqliteQueueStore::kSchemaVersion);
  const auto r = s.submit({"first", "{\"size\": 256}", "/out"}, {job("a", 1), job("b", ~0ull), job("c", 3)});
  EXPECT_EQ(r.inserted, 3u);
  auto j = s.claim("w1");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->prompt, "a");
  EXPECT_EQ(j->state, JobState::kRunning);
  EXPECT_EQ(j->attempts, 1);
  EXPECT_EQ(j->worker, "w1");
  EXPECT_TRUE(s.complete(j->id, "/out/a.png", "{\"k\": 1}"));
  EXPECT_FALSE(s.complete(j->id, "/out/a.png", "{}")) << "done is final";
  const auto b = s.claim("w1");
  EXPECT_EQ(b->seed, ~0ull) << "uint64 seeds survive SQLite's int64";
  const auto done = s.job(j->id);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->metadata_json, "{\"k\": 1}");
  EXPECT_EQ(count(s, JobState::kDone, r.run_id), 1);
  EXPECT_EQ(count(s, JobState::kRunning, r.run_id), 1);
  EXPECT_EQ(count(s, JobState::kQueued, r.run_id), 1);
  const auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].name, "first");
  EXPECT_EQ(runs[0].total(), 3);
  EXPECT_EQ(s.list_jobs(r.run_id, JobState::kQueued).size(), 1u);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStore, PriorityThenSubmitOrderThenCachedPrompt) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db");
  s.submit({"r1", "{}", "/o"}, {job("low", 1, 0), job("high", 2, 5), job("high2", 3, 5)});
  s.submit({"r2", "{}", "/o"}, {job("cached", 4, 5), job("cached", 5, 0)});
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 4u) << "a cached prompt goes first within the top priority";
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 2u) << "but never ahead of a higher priority";
  EXPECT_EQ(s.claim("w")->seed, 3u);
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 5u) << "among equals, the cached prompt first";
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 1u);
  EXPECT_FALSE(s.claim("w"));
}

TEST(QueueStore, FailRetriesWithBackoffThenFails) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db", {.max_attempts = 2, .backoff_seconds = 0.2});
  const auto r = s.submit({"r", "{}", "/o"}, {job("a", 1)});
  const auto j = s.claim("w");
  EXPECT_EQ(s.fail(j->id, "disk full"), JobState::kQueued);
  EXPECT_FALSE(s.claim("w")) << "backing off";
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const auto again = s.claim("w");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(s.fail(again->id, "disk still full"), JobState::kFailed);
  const auto failed = s.job(j->id);
  EXPECT_EQ(failed->error, "disk still full");
  const auto history = nlohmann::json::parse(failed->errors_json);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0]["reason"], "disk full");
  EXPECT_EQ(history[1]["attempt"], 2);
  EXPECT_EQ(s.retry(r.run_id), 1);
  const auto retried = s.claim("w");
  EXPECT_EQ(retried->attempts, 1);
  EXPECT_EQ(nlohmann::json::parse(retried->errors_json).size(), 2u) << "the history is kept";
}

TEST(QueueStore, CancelPauseRequeuePrioritize) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db");
  const auto r1 = s.submit({"r1", "{}", "/o"}, {job("a", 1), job("a", 2), job("a", 3)});
  const auto r2 = s.submit({"r2", "{}", "/o"}, {job("b", 1)});
  const auto running = s.claim("w");
  EXPECT_EQ(s.cancel_run(r1.run_id), 3);
  EXPECT_EQ(count(s, JobState::kCanceled, r1.run_id), 2);
  EXPECT_TRUE(s.cancel_requested(running->id));
  EXPECT_TRUE(s.finish_canceled(running->id));
  EXPECT_EQ(s.job(running->id)->state, JobState::kCanceled);
  s.set_paused(true);
  EXPECT_TRUE(s.paused());
  EXPECT_FALSE(s.claim("w"));
  s.set_paused(false);
  const auto b = s.claim("w");
  EXPECT_EQ(b->run_id, r2.run_id);
  EXPECT_TRUE(s.requeue(b->id));
  EXPECT_EQ(s.job(b->id)->attempts, 0) << "a clean shutdown does not spend an attempt";
  const auto r3 = s.submit({"r3", "{}", "/o"}, {job("c", 1)});
  EXPECT_EQ(s.prioritize_run(r3.run_id, 10), 1);
  EXPECT_EQ(s.claim("w")->run_id, r3.run_id);
  EXPECT_TRUE(s.cancel_job(b->id));
  EXPECT_EQ(s.retry(r2.run_id, true), 1);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStore, RecoverRequeuesOrFailsInterruptedJobs) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db", {.max_attempts = 2, .max_interruptions = 2});
  s.submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  auto a = s.claim("w");
  EXPECT_EQ(s.recover().requeued, 1);
  a = s.claim("w");  // the same job: an interruption gives its attempt back
  EXPECT_EQ(a->attempts, 1);
  EXPECT_EQ(a->interruptions, 1);
  const auto res = s.recover();
  EXPECT_EQ(res.failed, 1);
  EXPECT_EQ(s.job(a->id)->error, "interrupted 2 times");
  EXPECT_EQ(s.job(a->id)->state, JobState::kFailed);
}

TEST(QueueStore, ManyInterruptionsFailNoJobButRepeatedCrashesDo) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db", {.max_attempts = 3});
  s.submit({"r", "{}", "/o"}, {job("healthy", 1), job("crasher", 2)});
  const int64_t healthy = s.claim("w")->id;
  for (int kill = 0; kill < 60; ++kill) {  // SIGKILLs: the running job is not to blame
    s.recover();
    ASSERT_EQ(s.claim("w")->id, healthy);
  }
  EXPECT_EQ(s.job(healthy)->attempts, 1);
  EXPECT_EQ(s.job(healthy)->interruptions, 60);
  ASSERT_TRUE(s.complete(healthy, "/o/healthy_1.png", "{}"));
  // The other job crashes the daemon each time it is in hand: the third crash fails it.
  for (int crash = 1; crash <= 3; ++crash) {
    const auto c = s.claim("w");
    ASSERT_TRUE(c) << "crash " << crash;
    const auto r = s.recover(c->id);
    EXPECT_EQ(r.failed, crash == 3 ? 1 : 0);
  }
  const auto crasher = s.list_jobs(std::nullopt, JobState::kFailed);
  ASSERT_EQ(crasher.size(), 1u);
  EXPECT_EQ(crasher[0].error, "crashed the daemon 3 times");
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStore, ResubmissionIsDetectedAndSkippedOnRequest) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db");
  s.submit({"r", "{}", "/o"}, {job("a", 1), job("a", 2)});
  const auto again = s.submit({"r", "{}", "/o", true}, {job("a", 1), job("a", 2), job("a", 3)});
  EXPECT_EQ(again.inserted, 1u);
  EXPECT_EQ(again.skipped, 2u);
  const auto forced = s.submit({"r", "{}", "/o", false}, {job("a", 1)});
  EXPECT_EQ(forced.inserted, 1u);
}

TEST(QueueStore, NewerSchemaIsRefused) {
  TempDir dir;
  { SqliteQueueStore s(dir.path() / "q.db"); }
  {
    SQLite::Database db((dir.path() / "q.db").string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE schema_version SET version = 99");
  }
  try {
    SqliteQueueStore s(dir.path() / "q.db");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99; this rgbaq knows versions up to 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(SqliteQueueStore(dir.path() / "no" / "dir" / "q.db"), std::runtime_error);
}

}  // namespace
}  // namespace rgbaq::storage
