// Transitions fenced by the lease, on both stores: a worker whose lease ran out (it stalled, recovery
// requeued its job, another worker claimed it) can no longer complete, fail, requeue or cancel the new
// holder's job; and a permanent failure that fails a job at once, whatever its attempts.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

int64_t count(QueueStore& s, JobState st, int64_t run) { return s.counts(run)[static_cast<int>(st)]; }

template <class Backend>
class QueueStoreFenceTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreFenceTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreFenceTest, AWorkerWhoseLeaseRanOutCannotFinishFailOrRequeueTheNewHoldersJob) {
  auto s = this->open({.max_attempts = 3, .backoff_seconds = 0, .lease_seconds = 0.5});
  const int64_t a = s->register_worker(worker_info("a"));
  const int64_t b = s->register_worker(worker_info("b"));
  const auto run = s->submit({"r", "{}", "/o"}, {job("fox", 1), job("owl", 2)});
  const auto mine = s->claim(a);
  ASSERT_TRUE(mine);
  // A stalls past its lease; B is alive. Recovery gives A's job back and B claims it.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  ASSERT_TRUE(s->heartbeat(b, {}));
  EXPECT_EQ(s->recover().requeued, 1);
  const auto theirs = s->claim(b);
  ASSERT_TRUE(theirs);
  ASSERT_EQ(theirs->id, mine->id);
  EXPECT_EQ(theirs->attempts, 1) << "the interruption gave A's attempt back";

  // A wakes up and asks at its next step whether it still holds the job: it does not; B does.
  EXPECT_EQ(s->step_hold(mine->id, a), QueueStore::StepHold::kLost);
  EXPECT_EQ(s->step_hold(mine->id, b), QueueStore::StepHold::kHeld);
  // A acts on the job as it claimed it: every transition is refused.
  EXPECT_FALSE(s->complete(mine->id, a, mine->output_path, "{\"by\": \"a\"}"));
  EXPECT_EQ(s->fail(mine->id, a, "a's render failed"), std::nullopt);
  EXPECT_EQ(s->fail(mine->id, a, "a's folder is a file", Failure::kPermanent), std::nullopt);
  EXPECT_FALSE(s->requeue(mine->id, a));
  ASSERT_TRUE(s->cancel_job(mine->id));
  EXPECT_FALSE(s->finish_canceled(mine->id, a));
  // complete_and_claim's complete half too. Recovery forgot A (silent for a lease), so A's claims take
  // nothing until it registers again, as its daemon does when its heartbeat is refused; then its claim
  // half takes the next job.
  EXPECT_FALSE(s->complete_and_claim(mine->id, mine->output_path, "{\"by\": \"a\"}", a));
  ASSERT_FALSE(s->heartbeat(a, {mine->id}));
  const int64_t a_again = s->register_worker(worker_info("a"));
  const auto next = s->complete_and_claim(mine->id, mine->output_path, "{\"by\": \"a\"}", a_again);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->prompt, "owl");

  const auto held = s->job(mine->id);
  EXPECT_EQ(held->state, JobState::kRunning);
  EXPECT_EQ(held->worker_id, b);
  EXPECT_EQ(held->host, "b");
  EXPECT_EQ(held->attempts, 1) << "B's attempt count: nothing A did counted";
  EXPECT_EQ(held->interruptions, 1);
  EXPECT_EQ(held->error, "");
  EXPECT_EQ(nlohmann::json::parse(held->errors_json).size(), 0u);
  EXPECT_EQ(held->metadata_json, "");
  EXPECT_EQ(count(*s, JobState::kRunning, run.run_id), 2);
  EXPECT_EQ(count(*s, JobState::kDone, run.run_id), 0);

  // B, the holder, completes it.
  EXPECT_TRUE(s->complete(mine->id, b, mine->output_path, "{\"by\": \"b\"}"));
  const auto done = s->job(mine->id);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->metadata_json, "{\"by\": \"b\"}");
  EXPECT_EQ(done->host, "b");
  for (const auto& w : s->list_workers()) EXPECT_EQ(w.images_done, w.id == b ? 1 : 0) << "worker " << w.id;
  EXPECT_TRUE(s->complete(next->id, a_again, next->output_path, "{}")) << "A finishes the job it holds now";
  EXPECT_EQ(count(*s, JobState::kDone, run.run_id), 2);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreFenceTest, ALiveWorkerCannotTouchAnotherLiveWorkersJob) {
  auto s = this->open({.backoff_seconds = 0});
  const int64_t a = s->register_worker(worker_info("a"));
  const int64_t b = s->register_worker(worker_info("b"));
  s->submit({"r", "{}", "/o"}, {job("fox", 1)});
  const auto theirs = s->claim(b);
  EXPECT_FALSE(s->complete(theirs->id, a, theirs->output_path, "{}"));
  EXPECT_EQ(s->fail(theirs->id, a, "not mine", Failure::kPermanent), std::nullopt);
  EXPECT_FALSE(s->requeue(theirs->id, a));
  EXPECT_FALSE(s->complete(theirs->id, 0, theirs->output_path, "{}")) << "0 is no worker";
  EXPECT_EQ(s->job(theirs->id)->state, JobState::kRunning);
  EXPECT_EQ(s->job(theirs->id)->worker_id, b);
  EXPECT_EQ(s->fail(theirs->id, b, "mine"), JobState::kQueued);
}

TYPED_TEST(QueueStoreFenceTest, AWorkerIdIsNeverGivenTwice) {
  // The fence is the worker id: a forgotten worker's id given to a new one would let the stale worker
  // act on the new one's jobs.
  auto s = this->open({.lease_seconds = 0.3});
  const int64_t a = s->register_worker(worker_info("a"));
  const int64_t b = s->register_worker(worker_info("b"));
  s->unregister_worker(b);
  const int64_t c = s->register_worker(worker_info("c"));
  EXPECT_GT(c, b);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  s->recover();  // forgets a and c, silent for a lease
  ASSERT_TRUE(s->list_workers().empty());
  const int64_t d = this->open()->register_worker(worker_info("d"));
  EXPECT_GT(d, c) << "a: " << a << ", b: " << b;
}

TYPED_TEST(QueueStoreFenceTest, APermanentFailureFailsTheJobAtOnceWithItsReason) {
  auto s = this->open({.max_attempts = 3, .backoff_seconds = 0});
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {job("fox", 1), job("owl", 2)});
  const auto fox = s->claim(w);
  const std::string reason = "/o/fox_1.png: cannot make its folder /o: Not a directory";
  EXPECT_EQ(s->fail(fox->id, w, reason, Failure::kPermanent), JobState::kFailed);
  const auto failed = s->job(fox->id);
  EXPECT_EQ(failed->state, JobState::kFailed);
  EXPECT_EQ(failed->attempts, 1) << "one attempt of three, and no more";
  EXPECT_EQ(failed->error, reason);
  EXPECT_GE(failed->finished_at, failed->started_at);
  EXPECT_EQ(failed->worker_id, 0);
  const auto history = nlohmann::json::parse(failed->errors_json);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0]["attempt"], 1);
  EXPECT_EQ(history[0]["reason"], reason);
  EXPECT_EQ(count(*s, JobState::kFailed, run.run_id), 1);

  // The next claim is the other job; a retryable failure of it on its first attempt is retried.
  const auto owl = s->claim(w);
  ASSERT_TRUE(owl);
  EXPECT_EQ(owl->prompt, "owl");
  EXPECT_EQ(s->fail(owl->id, w, "disk full"), JobState::kQueued);
  // On a later attempt as well: permanent is permanent whatever the attempts.
  const auto again = s->claim(w);
  ASSERT_EQ(again->id, owl->id);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(s->fail(again->id, w, "read-only file system", Failure::kPermanent), JobState::kFailed);
  EXPECT_EQ(s->job(owl->id)->error, "read-only file system");
  EXPECT_FALSE(s->claim(w));
  // `rgbaq retry` brings both back.
  EXPECT_EQ(s->retry(run.run_id), 2);
  EXPECT_EQ(s->job(fox->id)->attempts, 0);
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
