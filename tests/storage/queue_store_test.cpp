// The queue store, one typed suite over both stores (SQLite, and PostgreSQL on a real server): every
// state transition, ordering and preference, resubmission, pause, batches and output ownership,
// workers and leases, recovery that never takes a live worker's job, concurrent claimers.
#include "storage/queue_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/storage/queue_store_backends.h"

namespace rgbaq::storage {
namespace {

NewJob job(const std::string& prompt, uint64_t seed, int priority = 0, const std::string& path = "") {
  NewJob j;
  j.line = static_cast<int>(seed) + 1;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.priority = priority;
  j.output_path = path.empty() ? "/out/" + prompt + "_" + std::to_string(seed) + ".png" : path;
  j.content_key = std::hash<std::string>{}(prompt + "|" + std::to_string(seed));
  j.prompt_key = std::hash<std::string>{}(prompt);
  return j;
}

int64_t count(QueueStore& s, JobState st, std::optional<int64_t> run = std::nullopt) { return s.counts(run)[static_cast<int>(st)]; }

WorkerInfo worker_info(const std::string& host, int64_t pid = 100) { return {host, "boot-1", pid, "cpu", "test cpu"}; }

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

TYPED_TEST_SUITE(QueueStoreTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreTest, SubmitClaimCompleteAndCounters) {
  auto s = this->open({.max_attempts = 3, .backoff_seconds = 0});
  EXPECT_EQ(s->schema_version(), this->backend().known_schema_version());
  const int64_t w = s->register_worker(worker_info("alpha", 42));
  const auto r = s->submit({"first", "{\"size\": 256}", "/out"}, {job("a", 1), job("b", ~0ull), job("c", 3)});
  EXPECT_EQ(r.inserted, 3u);
  auto j = s->claim(w);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->prompt, "a");
  EXPECT_EQ(j->state, JobState::kRunning);
  EXPECT_EQ(j->attempts, 1);
  EXPECT_EQ(j->worker, "alpha:42");
  EXPECT_EQ(j->worker_id, w);
  EXPECT_EQ(j->host, "alpha");
  EXPECT_GT(j->lease_expires, j->started_at + 59) << "the default lease is 60 s";
  EXPECT_TRUE(s->complete(j->id, w, "/out/a.png", "{\"k\": 1}"));
  EXPECT_FALSE(s->complete(j->id, w, "/out/a.png", "{}")) << "done is final";
  const auto b = s->claim(w);
  EXPECT_EQ(b->seed, ~0ull) << "uint64 seeds survive the store's int64";
  const auto done = s->job(j->id);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->metadata_json, "{\"k\": 1}");
  EXPECT_EQ(done->host, "alpha") << "the rendering host stays recorded";
  EXPECT_EQ(count(*s, JobState::kDone, r.run_id), 1);
  EXPECT_EQ(count(*s, JobState::kRunning, r.run_id), 1);
  EXPECT_EQ(count(*s, JobState::kQueued, r.run_id), 1);
  const auto runs = s->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].name, "first");
  EXPECT_EQ(runs[0].total(), 3);
  EXPECT_EQ(s->list_jobs(r.run_id, JobState::kQueued).size(), 1u);
  const auto workers = s->list_workers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(workers[0].images_done, 1);
  EXPECT_EQ(workers[0].job, b->id);
  EXPECT_EQ(workers[0].info.engine, "cpu");
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, PriorityThenSubmitOrderThenCachedPrompt) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  s->submit({"r1", "{}", "/o"}, {job("low", 1, 0), job("high", 2, 5), job("high2", 3, 5)});
  s->submit({"r2", "{}", "/o"}, {job("cached", 4, 5), job("cached", 5, 0)});
  const uint64_t cached = std::hash<std::string>{}("cached");
  EXPECT_EQ(s->claim(w, {cached})->seed, 4u) << "a cached prompt goes first within the top priority";
  EXPECT_EQ(s->claim(w, {cached})->seed, 2u) << "but never ahead of a higher priority";
  EXPECT_EQ(s->claim(w)->seed, 3u);
  EXPECT_EQ(s->claim(w, {cached})->seed, 5u) << "among equals, the cached prompt first";
  EXPECT_EQ(s->claim(w, {cached})->seed, 1u);
  EXPECT_FALSE(s->claim(w));
}

TYPED_TEST(QueueStoreTest, FailRetriesWithBackoffThenFails) {
  auto s = this->open({.max_attempts = 2, .backoff_seconds = 0.3});
  const int64_t w = s->register_worker(worker_info("h"));
  const auto r = s->submit({"r", "{}", "/o"}, {job("a", 1)});
  const auto j = s->claim(w);
  EXPECT_EQ(s->fail(j->id, w, "disk full"), JobState::kQueued);
  EXPECT_FALSE(s->claim(w)) << "backing off";
  sleep_s(0.4);
  const auto again = s->claim(w);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(s->fail(again->id, w, "disk still full"), JobState::kFailed);
  const auto failed = s->job(j->id);
  EXPECT_EQ(failed->error, "disk still full");
  const auto history = nlohmann::json::parse(failed->errors_json);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0]["reason"], "disk full");
  EXPECT_EQ(history[1]["attempt"], 2);
  EXPECT_EQ(s->retry(r.run_id), 1);
  const auto retried = s->claim(w);
  EXPECT_EQ(retried->attempts, 1);
  EXPECT_EQ(nlohmann::json::parse(retried->errors_json).size(), 2u) << "the history is kept";
}

TYPED_TEST(QueueStoreTest, CancelPauseRequeuePrioritizeFromAnotherConnection) {
  auto s = this->open();
  auto other = this->open();  // another host's daemon, or a CLI request on another host
  const int64_t w = s->register_worker(worker_info("h"));
  const auto r1 = s->submit({"r1", "{}", "/o"}, {job("a", 1), job("a", 2), job("a", 3)});
  const auto r2 = s->submit({"r2", "{}", "/o"}, {job("b", 1)});
  const auto running = s->claim(w);
  EXPECT_EQ(s->step_hold(running->id, w), QueueStore::StepHold::kHeld);
  EXPECT_EQ(other->cancel_run(r1.run_id).total(), 3);
  EXPECT_EQ(count(*s, JobState::kCanceled, r1.run_id), 2);
  EXPECT_EQ(s->step_hold(running->id, w), QueueStore::StepHold::kCancelRequested) << "the worker sees another host's cancel at its next step";
  EXPECT_EQ(s->step_hold(running->id, w + 1), QueueStore::StepHold::kLost) << "not held by another worker id";
  EXPECT_TRUE(s->finish_canceled(running->id, w));
  EXPECT_EQ(s->job(running->id)->state, JobState::kCanceled);
  other->set_paused(true);
  EXPECT_TRUE(s->paused());
  EXPECT_FALSE(s->claim(w));
  other->set_paused(false);
  const auto b = s->claim(w);
  EXPECT_EQ(b->run_id, r2.run_id);
  EXPECT_TRUE(s->requeue(b->id, w));
  EXPECT_EQ(s->job(b->id)->attempts, 0) << "a clean shutdown does not spend an attempt";
  const auto r3 = s->submit({"r3", "{}", "/o"}, {job("c", 1)});
  EXPECT_EQ(other->prioritize_run(r3.run_id, 10), 1);
  EXPECT_EQ(s->claim(w)->run_id, r3.run_id);
  EXPECT_TRUE(other->cancel_job(b->id));
  EXPECT_EQ(other->retry(r2.run_id, true), 1);
  EXPECT_EQ(s->job(b->id)->state, JobState::kQueued);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, RecoveryTakesOnlyExpiredLeasesNeverALiveWorkersJob) {
  auto s = this->open({.max_attempts = 2, .max_interruptions = 2, .lease_seconds = 1.0});
  auto other_host = this->open({.lease_seconds = 1.0});
  const int64_t live = s->register_worker(worker_info("live"));
  const int64_t dying = s->register_worker(worker_info("dying"));
  s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  const auto a = s->claim(live);
  const auto b = s->claim(dying);
  EXPECT_EQ(other_host->recover().requeued, 0) << "both leases are live";
  // The live worker heartbeats; the dying one has stopped.
  for (int i = 0; i < 3; ++i) {
    sleep_s(0.5);
    ASSERT_TRUE(s->heartbeat(live, {a->id}));
  }
  const auto r = other_host->recover();
  EXPECT_EQ(r.requeued, 1) << "only the expired lease";
  EXPECT_EQ(s->job(a->id)->state, JobState::kRunning);
  EXPECT_EQ(s->job(a->id)->worker_id, live);
  const auto back = s->job(b->id);
  EXPECT_EQ(back->state, JobState::kQueued);
  EXPECT_EQ(back->attempts, 0) << "an interruption gives the attempt back";
  EXPECT_EQ(back->interruptions, 1);
  EXPECT_FALSE(s->heartbeat(dying, {})) << "a worker silent for a lease is forgotten and must register again";
  EXPECT_EQ(s->list_workers().size(), 1u);
  EXPECT_TRUE(s->complete(a->id, live, "/o/a_1.png", "{}"));
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, ADeadLocalWorkerIsExpiredAtOnceAndInterruptionsAreBounded) {
  auto s = this->open({.max_attempts = 2, .max_interruptions = 2});
  const int64_t old_self = s->register_worker(worker_info("h", 7));
  s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  auto a = s->claim(old_self);
  EXPECT_EQ(s->recover().requeued, 0);
  EXPECT_EQ(s->expire_worker(old_self), 1) << "the restarted daemon knows its old process is gone";
  EXPECT_EQ(s->recover().requeued, 1);
  const int64_t self = s->register_worker(worker_info("h", 8));
  a = s->claim(self);  // the same job: an interruption gives its attempt back
  EXPECT_EQ(a->attempts, 1);
  EXPECT_EQ(a->interruptions, 1);
  s->expire_worker(self);
  const auto res = s->recover();
  EXPECT_EQ(res.failed, 1);
  EXPECT_EQ(s->job(a->id)->error, "interrupted 2 times");
  EXPECT_EQ(s->job(a->id)->state, JobState::kFailed);
}

TYPED_TEST(QueueStoreTest, ManyInterruptionsFailNoJobButRepeatedCrashesDo) {
  // A lease of 0: every claim's lease has expired by the next recovery, as after a SIGKILL.
  auto s = this->open({.max_attempts = 3, .lease_seconds = 0});
  int64_t w = s->register_worker(worker_info("h"));
  // The daemon starting again: recovery (which forgets the dead worker), then registering anew.
  auto restart = [&](std::optional<int64_t> crashed = std::nullopt) {
    const auto r = s->recover(crashed);
    w = s->register_worker(worker_info("h"));
    return r;
  };
  std::vector<NewJob> jobs{job("healthy", 1), job("crasher", 2, -1)};
  for (int i = 3; i <= 62; ++i) jobs.push_back(job("other", i));
  s->submit({"r", "{}", "/o"}, jobs);
  const int64_t healthy = s->claim(w)->id;
  // SIGKILLs, with other jobs finishing between them (a daemon killed often that still gets work done):
  // the running job is not to blame. (Deaths in a row with nothing else finishing are:
  // queue_store_recurring_kill_test.cpp.)
  for (int kill = 0; kill < 60; ++kill) {
    const auto other = s->claim(w);
    ASSERT_TRUE(other);
    ASSERT_EQ(other->prompt, "other");
    ASSERT_TRUE(s->complete(other->id, w, other->output_path, "{}"));
    restart();
    ASSERT_EQ(s->claim(w)->id, healthy);
  }
  EXPECT_EQ(s->job(healthy)->attempts, 1);
  EXPECT_EQ(s->job(healthy)->interruptions, 60);
  EXPECT_EQ(s->job(healthy)->deaths_in_row, 0) << "no lease recorded a step: no death counted in a row";
  ASSERT_TRUE(s->complete(healthy, w, "/o/healthy_1.png", "{}"));
  // The other job crashes the daemon each time it is in hand: the third crash fails it.
  for (int crash = 1; crash <= 3; ++crash) {
    const auto c = s->claim(w);
    ASSERT_TRUE(c) << "crash " << crash;
    const auto r = restart(c->id);
    EXPECT_EQ(r.failed, crash == 3 ? 1 : 0);
  }
  const auto crasher = s->list_jobs(std::nullopt, JobState::kFailed);
  ASSERT_EQ(crasher.size(), 1u);
  EXPECT_EQ(crasher[0].error, "crashed the daemon 3 times");
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, ResubmissionIsDetectedAndSkippedOnRequest) {
  auto s = this->open();
  s->submit({"r", "{}", "/o"}, {job("a", 1), job("a", 2)});
  const auto again = s->submit({"r", "{}", "/o", true}, {job("a", 1), job("a", 2), job("a", 3), job("a", 3)});
  EXPECT_EQ(again.inserted, 1u);
  EXPECT_EQ(again.skipped, 3u) << "two queued already, one repeated within the submit";
  const auto forced = s->submit({"r", "{}", "/o", false}, {job("a", 1)});
  EXPECT_EQ(forced.inserted, 1u);
}

TYPED_TEST(QueueStoreTest, NewerSchemaIsRefused) {
  { auto s = this->open(); }
  this->backend().set_schema_version(99);
  try {
    auto s = this->open();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99; this rgbaq knows versions up to " +
                                         std::to_string(this->backend().known_schema_version())),
              std::string::npos)
        << e.what();
  }
}

TYPED_TEST(QueueStoreTest, APendingRunIsInvisibleUntilPublishedAndDiscardedOnceLeftAlone) {
  auto s = this->open({.lease_seconds = 0.5});
  const int64_t w = s->register_worker(worker_info("h"));
  const RunOptions opts{.name = "big", .out_dir = "/out"};
  const int64_t run = s->begin_run(opts);
  EXPECT_EQ(s->append_jobs(run, opts, {job("a", 1), job("a", 2)}).inserted, 2u);
  EXPECT_EQ(s->append_jobs(run, opts, {job("a", 3)}).inserted, 1u);
  EXPECT_FALSE(s->claim(w)) << "no job of a pending run is claimed";
  EXPECT_TRUE(s->list_runs().empty());
  EXPECT_EQ(s->counts()[0], 0);
  EXPECT_FALSE(s->cancel_job(1));
  EXPECT_EQ(s->integrity_check(), "ok");
  s->publish_run(run, 3);
  EXPECT_EQ(s->run(run)->total(), 3);
  EXPECT_TRUE(s->claim(w));

  // A submit cut off after one batch (the process died): recovery leaves it while its submitter may
  // still be adding batches, then removes it and its path claims.
  const int64_t cut = s->begin_run(opts);
  s->append_jobs(cut, opts, {job("b", 1), job("b", 2)});
  EXPECT_EQ(s->recover().discarded_jobs, 0) << "a submit in progress (on any host) is left alone";
  sleep_s(0.7);
  ASSERT_TRUE(s->heartbeat(w, {1}));
  const auto r = s->recover();
  EXPECT_EQ(r.discarded_jobs, 2);
  EXPECT_EQ(s->list_jobs(std::nullopt, std::nullopt).size(), 3u);
  // The paths are free again for a different image.
  NewJob other = job("c", 1, 0, "/out/b_1.png");
  EXPECT_EQ(s->submit(opts, {other}).inserted, 1u);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, AnOutputPathIsOwnedByOneImageAcrossRuns) {
  auto s = this->open();
  const RunOptions opts{.name = "r", .out_dir = "/out"};
  const auto first = s->submit(opts, {job("fox", 1, 0, "/out/x_1.png")});
  // The same image again (a resubmission) may share its path.
  EXPECT_EQ(s->submit(opts, {job("fox", 1, 0, "/out/x_1.png")}).inserted, 1u);
  // A different image for that path is refused, naming the row and the path; nothing is queued.
  try {
    s->submit(opts, {job("owl", 5, 0, "/out/y_5.png"), job("cat", 7, 0, "/out/x_1.png")});
    FAIL();
  } catch (const OutputClashError& e) {
    ASSERT_EQ(e.clashes().size(), 1u);
    EXPECT_EQ(e.clashes()[0].line, 8);
    EXPECT_EQ(e.clashes()[0].path, "/out/x_1.png");
    EXPECT_EQ(e.clashes()[0].owner_run, first.run_id);
  }
  EXPECT_EQ(s->list_runs().size(), 2u);
  EXPECT_EQ(s->list_jobs(std::nullopt, std::nullopt).size(), 2u);
  // Within one submit too: two rows, one path.
  EXPECT_THROW(s->submit(opts, {job("p", 1, 0, "/out/z.png"), job("q", 2, 0, "/out/z.png")}), OutputClashError);
  EXPECT_EQ(s->submit(opts, {job("owl", 5, 0, "/out/y_5.png")}).inserted, 1u) << "the refused submit claimed nothing";
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreTest, TextSurvivesTheStoreByteForByte) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  NewJob odd = job("tab\there, newline\nthere, back\\slash, quote \" ' and ünïcødé 🦊", 1);
  odd.name = "name\r\nwith CR";
  s->submit({"r", "{}", "/o"}, {odd});
  const auto j = s->claim(w);
  EXPECT_EQ(j->prompt, odd.prompt);
  EXPECT_EQ(j->name, odd.name);
}

TYPED_TEST(QueueStoreTest, ConcurrentClaimersOnTheirOwnConnectionsClaimEveryJobOnce) {
  auto s = this->open({.busy_timeout_ms = 30000});
  constexpr int kJobs = 400, kClaimers = 4;
  std::vector<NewJob> jobs;
  for (int i = 0; i < kJobs; ++i) jobs.push_back(job("p" + std::to_string(i % 7), static_cast<uint64_t>(i)));
  s->submit({"r", "{}", "/o"}, jobs);
  std::vector<std::vector<int64_t>> claimed(kClaimers);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClaimers; ++c) {
    threads.emplace_back([&, c] {
      auto mine = this->open({.busy_timeout_ms = 30000});
      const int64_t w = mine->register_worker(worker_info("h" + std::to_string(c)));
      auto j = mine->claim(w);
      while (j) {
        claimed[c].push_back(j->id);
        j = mine->complete_and_claim(j->id, j->output_path, "{}", w, {j->prompt_key});
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<int64_t> all;
  size_t total = 0;
  for (const auto& c : claimed) {
    total += c.size();
    all.insert(c.begin(), c.end());
  }
  EXPECT_EQ(total, static_cast<size_t>(kJobs)) << "no job claimed twice";
  EXPECT_EQ(all.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(count(*s, JobState::kDone), kJobs);
  int64_t images = 0;
  for (const auto& w : s->list_workers()) images += w.images_done;
  EXPECT_EQ(images, kJobs);
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
