// A job that the kernel kills at the same step on every try (what the OOM killer does to a job whose
// size exhausts memory), on both stores: the first interruptions at that step are blameless, from the
// third in a row each counts as a crash (its attempt spent, a backoff in which the other jobs are
// claimed), and the attempt limit fails it saying where it died; kills at random points, or with no
// step recorded, stay blameless; a failure ends a row. And one the daemon dies with at steps that move
// (3, 8, 3, 5, ...): the fifth death in a row with no other job finishing in between fails it, naming
// the steps; deaths with other jobs finishing between them never do. And queues from before the
// columns that keep either row migrate forward.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <type_traits>
#include <vector>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

constexpr const char* kDiedAtStep3 = "the daemon died at step 3 on each of its last tries (out of memory?)";

template <class Backend>
class QueueStoreRecurringKillTest : public QueueStoreTest<Backend> {
 protected:
  // A lease of 0: every claim's lease has expired by the next recovery, as after a SIGKILL.
  void open_queue(double backoff_s = 0.4, int max_deaths = StoreOptions{}.max_deaths) {
    s_ = this->open({.max_attempts = 3, .max_deaths = max_deaths, .backoff_seconds = backoff_s, .lease_seconds = 0});
    w_ = s_->register_worker(worker_info("h"));
  }
  // The daemon killed with `job` in hand at `step` (0: before its lease recorded any), then started again.
  RecoverResult kill(const Job& job, int step) {
    if (step > 0) s_->record_progress(w_, {{job.id, step, 8, false}});
    const auto r = s_->recover();
    w_ = s_->register_worker(worker_info("h"));
    return r;
  }
  // The daemon crashing (a crash signal) with `job` in hand at `step`, then started again.
  RecoverResult crash(const Job& job, int step) {
    s_->record_progress(w_, {{job.id, step, 8, false}});
    const auto r = s_->recover(job.id);
    w_ = s_->register_worker(worker_info("h"));
    return r;
  }
  Job claim() {
    const auto j = s_->claim(w_);
    EXPECT_TRUE(j);
    return j.value_or(Job{});
  }
  std::unique_ptr<QueueStore> s_;
  int64_t w_ = 0;
};
TYPED_TEST_SUITE(QueueStoreRecurringKillTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreRecurringKillTest, KilledAtOneStepEveryTryCountsAsACrashAndFailsSayingWhere) {
  this->open_queue();
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("too big", 1), job("a", 2), job("b", 3)});
  const int64_t oom = 1;
  // Kills 1 and 2 at step 3: interruptions, as any SIGKILL (the attempt given back).
  for (int kill = 1; kill <= 2; ++kill) {
    const Job j = this->claim();
    ASSERT_EQ(j.id, oom);
    EXPECT_EQ(this->kill(j, 3).failed, 0);
    EXPECT_EQ(s.job(oom)->attempts, 0) << "kill " << kill;
    EXPECT_EQ(s.job(oom)->interruptions, kill);
  }
  // Kill 3 at step 3: the third in a row there is the job's fault: the attempt is spent.
  ASSERT_EQ(this->claim().id, oom);
  EXPECT_EQ(this->kill(*s.job(oom), 3).requeued, 1);
  EXPECT_EQ(s.job(oom)->state, JobState::kQueued);
  EXPECT_EQ(s.job(oom)->attempts, 1);
  EXPECT_EQ(s.job(oom)->interruptions, 2) << "not counted as an interruption";
  // Its backoff: the other jobs are claimed first, though it was submitted before them.
  const Job a = this->claim();
  EXPECT_EQ(a.prompt, "a");
  ASSERT_TRUE(s.complete(a.id, this->w_, "/o/a_2.png", "{}"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the 0.4 s backoff after attempt 1
  // Kills 4 and 5: attempts 2 and 3; the third attempt fails it, naming the step.
  for (int attempt = 2; attempt <= 3; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt == 3 ? 900 : 0));  // 0.8 s after attempt 2
    const Job j = this->claim();
    ASSERT_EQ(j.id, oom) << "attempt " << attempt;
    EXPECT_EQ(j.attempts, attempt);
    EXPECT_EQ(this->kill(j, 3).failed, attempt == 3 ? 1 : 0);
  }
  const auto failed = s.job(oom);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->error, kDiedAtStep3);
  EXPECT_EQ(failed->attempts, 3);
  const Job b = this->claim();
  EXPECT_EQ(b.prompt, "b") << "the rest of the run goes on";
  EXPECT_TRUE(s.complete(b.id, this->w_, "/o/b_3.png", "{}"));
  // A retry starts the job afresh: three more kills before one counts.
  EXPECT_EQ(s.retry(1), 1);
  for (int kill = 1; kill <= 2; ++kill) {
    ASSERT_EQ(this->claim().id, oom);
    this->kill(*s.job(oom), 3);
    EXPECT_EQ(s.job(oom)->attempts, 0) << "kill " << kill << " after the retry";
  }
  EXPECT_EQ(s.integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRecurringKillTest, KillsAtOtherStepsOrBeforeAnyStepStayBlameless) {
  this->open_queue();
  auto& s = *this->s_;
  std::vector<NewJob> jobs{job("healthy", 1)};
  for (int i = 2; i <= 11; ++i) jobs.push_back(job("other", i));
  s.submit({"r", "{}", "/o"}, jobs);
  // Two at step 3, one at step 5, two at step 3, one before its lease recorded a step, two at step 3,
  // ... 40 kills, never three in a row at one step; and another job finishing every fourth kill (a
  // daemon killed often that still gets work done: no row of deaths reaches five either).
  const int steps[] = {3, 3, 5, 3, 3, 0, 3, 3, 1, 8};
  for (int kill = 0; kill < 40; ++kill) {
    const Job j = this->claim();
    ASSERT_EQ(j.prompt, "healthy");
    if (kill % 4 == 3) {
      const auto o = s.claim(this->w_);
      ASSERT_TRUE(o);
      ASSERT_TRUE(s.complete(o->id, this->w_, o->output_path, "{}"));
    }
    EXPECT_EQ(this->kill(j, steps[kill % 10]).failed, 0);
  }
  EXPECT_EQ(s.job(1)->attempts, 0);
  EXPECT_EQ(s.job(1)->interruptions, 40);
  EXPECT_EQ(s.job(1)->state, JobState::kQueued);
}

TYPED_TEST(QueueStoreRecurringKillTest, AFailureEndsARow) {
  this->open_queue(0);
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("j", 1)});
  for (int kill = 1; kill <= 2; ++kill) this->kill(this->claim(), 3);
  Job j = this->claim();
  ASSERT_EQ(s.fail(j.id, this->w_, "out of disk"), JobState::kQueued);  // attempt 1 spent by the failure
  j = this->claim();
  EXPECT_EQ(j.attempts, 2);
  this->kill(j, 3);  // the first kill at step 3 since the failure: an interruption
  EXPECT_EQ(s.job(1)->attempts, 1);
  EXPECT_EQ(s.job(1)->interruptions, 3);
}

TYPED_TEST(QueueStoreRecurringKillTest, AQueueFromBeforeTheRowColumnsMigratesForward) {
  const int known = this->backend().known_schema_version();
  {
    auto s = this->open();
    s->submit({"r", "{}", "/o"}, {job("old", 1)});
  }
  this->backend().exec(std::string(kDropV9Schema) + kDropDeathColumns +
                       "ALTER TABLE jobs DROP COLUMN interrupted_at_step; ALTER TABLE jobs DROP COLUMN interruptions_at_step");
  this->backend().set_schema_version(6);  // both stores' v6: before the same-step row (v7), the deaths (v8) and v9
  this->open_queue();
  EXPECT_EQ(this->s_->schema_version(), known);
  for (int kill = 1; kill <= 3; ++kill) {
    const Job j = this->claim();
    ASSERT_EQ(j.prompt, "old");
    this->kill(j, 3);
  }
  EXPECT_EQ(this->s_->job(1)->attempts, 1) << "the third kill at step 3 counted";
  EXPECT_EQ(this->s_->integrity_check(), "ok");
}

// Deaths in a row: the daemon dying with one job in hand while it renders (its lease recorded a step),
// whatever the step, again and again with no other job finishing in between, is that job's doing (an OOM killer or a watchdog that ends every try
// of it somewhere around one point): the fifth such death (StoreOptions::max_deaths) fails it, naming
// the steps. A single death, or deaths with other jobs finishing between them, are blameless.
constexpr const char* kDiedFiveTimes = "the daemon died 5 times with this job in hand, no other job finishing in between ";

TYPED_TEST(QueueStoreRecurringKillTest, DeathsAtAMovingStepWithNoOtherJobFinishingFailTheJobNamingThem) {
  this->open_queue();
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("pill", 1), job("other", 2)});
  const int64_t pill = 1;
  // Killed at step 3, 8, 3, 5, 4: never three times in a row at one step.
  const int steps[] = {3, 8, 3, 5, 4};
  for (int death = 1; death <= 5; ++death) {
    const Job j = this->claim();
    ASSERT_EQ(j.id, pill) << "death " << death;
    EXPECT_EQ(this->kill(j, steps[death - 1]).failed, death == 5 ? 1 : 0) << "death " << death;
    if (death == 1) {
      EXPECT_EQ(s.job(pill)->state, JobState::kQueued) << "a single death is blameless";
      EXPECT_EQ(s.job(pill)->attempts, 0);
      EXPECT_EQ(s.job(pill)->interruptions, 1);
    }
  }
  const auto failed = s.job(pill);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->error, std::string(kDiedFiveTimes) + "(at steps 3, 8, 3, 5, 4)");
  EXPECT_NE(failed->errors_json.find("(at steps 3, 8, 3, 5, 4)"), std::string::npos) << failed->errors_json;
  const Job other = this->claim();
  EXPECT_EQ(other.prompt, "other") << "the rest of the run goes on";
  EXPECT_TRUE(s.complete(other.id, this->w_, "/o/other_2.png", "{}"));
  // A retry starts a new row. A death before the lease recorded a step (the daemon killed as it
  // started, before its heartbeat wrote any progress) cannot be the job's doing: it counts for nothing,
  // nor does it end the row.
  EXPECT_EQ(s.retry(1), 1);
  for (const int step : {0, 3, 6, 0, 3, 2}) {
    ASSERT_EQ(this->claim().id, pill);
    EXPECT_EQ(this->kill(*s.job(pill), step).failed, 0) << "step " << step << " after the retry";
  }
  EXPECT_EQ(s.job(pill)->deaths_in_row, 4);
  ASSERT_EQ(this->claim().id, pill);
  EXPECT_EQ(this->kill(*s.job(pill), 7).failed, 1);
  EXPECT_EQ(s.job(pill)->error, std::string(kDiedFiveTimes) + "(at steps 3, 6, 3, 2, 7)");
  EXPECT_EQ(s.integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRecurringKillTest, DeathsWithAnotherJobFinishingInBetweenNeverFailIt) {
  this->open_queue();
  auto& s = *this->s_;
  std::vector<NewJob> jobs{job("flaky", 1)};
  for (int i = 2; i <= 31; ++i) jobs.push_back(job("other", i));
  s.submit({"r", "{}", "/o"}, jobs);
  const int64_t flaky = 1;
  // 30 deaths with it in hand, four in a row at most before another job finishes (a daemon killed often,
  // that still gets work done): never three in a row at one step either.
  const int steps[] = {3, 8, 3, 5, 4, 0, 2, 3, 7, 1};
  for (int death = 1; death <= 30; ++death) {
    const Job j = this->claim();
    ASSERT_EQ(j.id, flaky) << "death " << death;
    if (death % 4 == 0) {  // another job done while this one renders (another worker, the writer)
      const auto o = s.claim(this->w_);
      ASSERT_TRUE(o);
      ASSERT_TRUE(s.complete(o->id, this->w_, o->output_path, "{}"));
    }
    EXPECT_EQ(this->kill(j, steps[death % 10]).failed, 0) << "death " << death;
  }
  EXPECT_EQ(s.job(flaky)->state, JobState::kQueued);
  EXPECT_EQ(s.job(flaky)->attempts, 0);
  EXPECT_EQ(s.job(flaky)->interruptions, 30);
  // Two more deaths with nothing finishing make a row of five (deaths 28, the first since the last
  // other job finished, to 32): that fails it, naming the five.
  for (int death = 31; death <= 32; ++death) {
    ASSERT_EQ(this->claim().id, flaky);
    EXPECT_EQ(this->kill(*s.job(flaky), 6).failed, death == 32 ? 1 : 0);
  }
  EXPECT_EQ(s.job(flaky)->error, std::string(kDiedFiveTimes) + "(at steps 7, 1, 3, 6, 6)");
  EXPECT_EQ(s.integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRecurringKillTest, AFinishedJobOfARunForgottenSinceStillEndsARow) {
  this->open_queue();
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("pill", 1)});
  const int64_t other_run = s.submit({"r2", "{}", "/o"}, {job("other", 2)}).run_id;
  for (int death = 1; death <= 4; ++death) this->kill(this->claim(), 3 + death % 2);
  // Another job finishes, then its run is forgotten, before the fifth death: the queue holds as many
  // finished jobs as at the fourth, yet one finished in between.
  const Job j = this->claim();
  ASSERT_EQ(j.prompt, "pill");
  const auto o = s.claim(this->w_);
  ASSERT_TRUE(o);
  ASSERT_TRUE(s.complete(o->id, this->w_, o->output_path, "{}"));
  ASSERT_EQ(s.forget_run(other_run).jobs, 1);
  EXPECT_EQ(this->kill(j, 5).failed, 0);
  for (int death = 6; death <= 8; ++death) EXPECT_EQ(this->kill(this->claim(), 3 + death % 2).failed, 0);
  EXPECT_EQ(this->kill(this->claim(), 4).failed, 1) << "the fifth in a row since the other job finished";
  EXPECT_EQ(s.job(1)->error, std::string(kDiedFiveTimes) + "(at steps 5, 3, 4, 3, 4)");
}

TYPED_TEST(QueueStoreRecurringKillTest, ACleanStopOrAFailureEndsARowOfDeaths) {
  this->open_queue(0);
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("j", 1)});
  auto deaths = [&](int n) {
    for (int i = 0; i < n; ++i) EXPECT_EQ(this->kill(this->claim(), 3 + i % 2).failed, 0);
  };
  deaths(4);
  ASSERT_TRUE(s.requeue(this->claim().id, this->w_));  // a clean stop (SIGTERM) with it in hand
  deaths(4);
  ASSERT_EQ(s.fail(this->claim().id, this->w_, "out of disk"), JobState::kQueued);  // it failed, the daemon lived
  deaths(4);
  EXPECT_EQ(s.job(1)->state, JobState::kQueued);
  EXPECT_EQ(s.job(1)->attempts, 1) << "the failure's";
  EXPECT_EQ(this->kill(this->claim(), 6).failed, 1) << "the fifth in a row since the failure";
  EXPECT_EQ(s.job(1)->error, std::string(kDiedFiveTimes) + "(at steps 3, 4, 3, 4, 6)");
}

TYPED_TEST(QueueStoreRecurringKillTest, MaxDeathsSetsTheBoundAndACrashIsADeathToo) {
  this->open_queue(0, 3);
  auto& s = *this->s_;
  s.submit({"r", "{}", "/o"}, {job("j", 1)});
  EXPECT_EQ(this->kill(this->claim(), 2).failed, 0);
  EXPECT_EQ(s.job(1)->deaths_in_row, 1);
  EXPECT_EQ(this->crash(this->claim(), 5).failed, 0) << "a crash spends an attempt, and is a death in the row";
  EXPECT_EQ(s.job(1)->deaths_in_row, 2);
  EXPECT_EQ(s.job(1)->attempts, 1);
  EXPECT_EQ(this->kill(this->claim(), 7).failed, 1);
  const auto failed = s.job(1);
  EXPECT_EQ(failed->error, "the daemon died 3 times with this job in hand, no other job finishing in between (at steps 2, 5, 7)");
  EXPECT_EQ(failed->deaths_in_row, 3);
  // A retry starts afresh.
  EXPECT_EQ(s.retry(1), 1);
  EXPECT_EQ(s.job(1)->deaths_in_row, 0);
  EXPECT_EQ(this->kill(this->claim(), 4).failed, 0);
  EXPECT_EQ(s.job(1)->deaths_in_row, 1);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRecurringKillTest, AQueueFromBeforeTheDeathColumnsMigratesForward) {
  const int known = this->backend().known_schema_version();
  {
    // A job running when the daemon of the older version died.
    auto s = this->open({.lease_seconds = 0});
    s->submit({"r", "{}", "/o"}, {job("old", 1), job("other", 2)});
    ASSERT_TRUE(s->claim(s->register_worker(worker_info("h"))));
  }
  this->backend().exec(std::string(kDropV9Schema) + kDropDeathColumns);
  this->backend().set_schema_version(7);  // both stores' v7: before the deaths (v8) and v9
  this->open_queue();
  auto& s = *this->s_;
  EXPECT_EQ(s.schema_version(), known);
  EXPECT_EQ(s.job(1)->deaths_in_row, 0);
  // The older daemon's death: its lease recorded no step, so it counts for nothing.
  EXPECT_EQ(this->kill(*s.job(1), 0).requeued, 1);
  EXPECT_EQ(s.job(1)->deaths_in_row, 0);
  for (const int step : {8, 3, 5, 4}) EXPECT_EQ(this->kill(this->claim(), step).failed, 0);
  EXPECT_EQ(s.job(1)->deaths_in_row, 4);
  EXPECT_EQ(this->kill(this->claim(), 6).failed, 1);
  EXPECT_EQ(s.job(1)->error, std::string(kDiedFiveTimes) + "(at steps 8, 3, 5, 4, 6)");
  const Job other = this->claim();
  EXPECT_EQ(other.prompt, "other");
  EXPECT_TRUE(s.complete(other.id, this->w_, other.output_path, "{}"));
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
