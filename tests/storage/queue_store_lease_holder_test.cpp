// Every running job has a lease holder that a heartbeat can renew, on both stores: a worker the queue
// does not know (never registered, or forgotten) claims nothing, and a running job held by no worker
// (worker 0, lease 0: what a claim by worker 0 followed by expire_worker(0) leaves) is named by
// integrity_check and taken back by recover() at once.
#include <gtest/gtest.h>

#include "tests/storage/queue_store_backends.h"

namespace rgbaq::storage {
namespace {

std::vector<NewJob> two_jobs() {
  std::vector<NewJob> jobs;
  for (uint64_t seed : {1u, 2u}) {
    NewJob j;
    j.prompt = "a fox";
    j.seed = seed;
    j.width = j.height = 64;
    j.output_path = "/o/" + std::to_string(seed) + ".png";
    j.content_key = seed;
    jobs.push_back(j);
  }
  return jobs;
}

template <class Backend>
class LeaseHolderTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(LeaseHolderTest, QueueStoreBackends, BackendNames);

TYPED_TEST(LeaseHolderTest, AWorkerTheQueueDoesNotKnowClaimsNothing) {
  auto s = this->open();
  s->submit({"r", "{}", "/o"}, two_jobs());
  EXPECT_FALSE(s->claim(0)) << "worker 0 is nobody";
  EXPECT_FALSE(s->claim(4242)) << "never registered";
  const int64_t gone = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  s->unregister_worker(gone);
  EXPECT_FALSE(s->claim(gone)) << "forgotten";
  EXPECT_EQ(s->counts()[static_cast<int>(JobState::kQueued)], 2);
  EXPECT_EQ(s->integrity_check(), "ok");
  // A registered worker still claims, and so does the same process registered again.
  const int64_t again = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  const auto job = s->claim(again);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->worker_id, again);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(LeaseHolderTest, ARunningJobHeldByNoWorkerIsNamedAndTakenBackAtOnce) {
  auto s = this->open();
  s->submit({"r", "{}", "/o"}, two_jobs());
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  const auto held = s->claim(w);
  const auto orphan = s->claim(w);
  ASSERT_TRUE(held && orphan);
  // The row found after a bench run: running, no holder, no lease. And one with no holder but a lease
  // still in the future, which no heartbeat can renew either.
  this->backend().exec("UPDATE jobs SET worker_id = 0, lease_expires = 0 WHERE id = " + std::to_string(orphan->id));
  const std::string problem = s->integrity_check();
  EXPECT_NE(problem.find("1 running job(s) without a live lease (the first: job " + std::to_string(orphan->id) + ")"),
            std::string::npos)
      << problem;
  this->backend().exec("UPDATE jobs SET lease_expires = lease_expires + 1e9 WHERE id = " + std::to_string(orphan->id));
  EXPECT_NE(s->integrity_check(), "ok");

  const auto r = s->recover();
  EXPECT_EQ(r.requeued, 1);
  EXPECT_EQ(r.failed, 0);
  EXPECT_EQ(s->job(orphan->id)->state, JobState::kQueued);
  EXPECT_EQ(s->job(held->id)->state, JobState::kRunning) << "a live worker's lease is not taken";
  EXPECT_EQ(s->integrity_check(), "ok");
  const auto back = s->claim(w);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, orphan->id);
}

}  // namespace
}  // namespace rgbaq::storage
