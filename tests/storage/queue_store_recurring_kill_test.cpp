// A job that the kernel kills at the same step on every try (what the OOM killer does to a job whose
// size exhausts memory), on both stores: the first interruptions at that step are blameless, from the
// third in a row each counts as a crash (its attempt spent, a backoff in which the other jobs are
// claimed), and the attempt limit fails it saying where it died; kills at random points, or with no
// step recorded, stay blameless; a failure ends a row. And a queue from before the columns that keep
// the row migrates forward.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <type_traits>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

constexpr const char* kDiedAtStep3 = "the daemon died at step 3 on each of its last tries (out of memory?)";

template <class Backend>
class QueueStoreRecurringKillTest : public QueueStoreTest<Backend> {
 protected:
  // A lease of 0: every claim's lease has expired by the next recovery, as after a SIGKILL.
  void open_queue(double backoff_s = 0.4) {
    s_ = this->open({.max_attempts = 3, .backoff_seconds = backoff_s, .lease_seconds = 0});
    w_ = s_->register_worker(worker_info("h"));
  }
  // The daemon killed with `job` in hand at `step` (0: before its lease recorded any), then started again.
  RecoverResult kill(const Job& job, int step) {
    if (step > 0) s_->record_progress(w_, {{job.id, step, 8, false}});
    const auto r = s_->recover();
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
  s.submit({"r", "{}", "/o"}, {job("healthy", 1)});
  // Two at step 3, one at step 5, two at step 3, one before its lease recorded a step, two at step 3,
  // ... 40 kills, never three in a row at one step.
  const int steps[] = {3, 3, 5, 3, 3, 0, 3, 3, 1, 8};
  for (int kill = 0; kill < 40; ++kill) {
    const Job j = this->claim();
    ASSERT_EQ(j.prompt, "healthy");
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
  this->backend().exec("ALTER TABLE jobs DROP COLUMN interrupted_at_step; ALTER TABLE jobs DROP COLUMN interruptions_at_step");
  this->backend().set_schema_version(known - 1);
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

}  // namespace
}  // namespace rgbaq::storage
