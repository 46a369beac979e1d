// A running job's progress in the queue, on both stores: recorded by the worker that holds its lease
// and read on another connection (another host); another worker's record ignored; none for a job not
// running, nor from an earlier lease once the job is claimed again; and a queue from before the
// progress columns migrated forward.
#include <gtest/gtest.h>

#include <type_traits>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

// step/steps/decoding of job `id` as `s` reads it.
std::tuple<int, int, bool> progress_of(QueueStore& s, int64_t id) {
  const auto j = s.job(id);
  EXPECT_TRUE(j);
  return j ? std::tuple{j->step, j->steps, j->decoding} : std::tuple{-1, -1, false};
}

template <class Backend>
class QueueStoreProgressTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreProgressTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreProgressTest, TheLeaseHoldersRecordIsReadEverywhereAndOnlyForThatLease) {
  auto here = this->open(), there = this->open();  // two hosts' connections to one queue
  const int64_t w_here = here->register_worker(worker_info("here")), w_there = there->register_worker(worker_info("there"));
  here->submit({"r", "{}", "/out"}, {job("a", 1), job("b", 2)});
  const auto a = here->claim(w_here), b = there->claim(w_there);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(progress_of(*there, a->id), std::tuple(0, 0, false)) << "nothing recorded yet";

  here->record_progress(w_here, {{a->id, 3, 8, false}});
  EXPECT_EQ(progress_of(*there, a->id), std::tuple(3, 8, false)) << "read on the other host's connection";
  here->record_progress(w_here, {{b->id, 5, 8, false}});
  EXPECT_EQ(progress_of(*here, b->id), std::tuple(0, 0, false)) << "b is leased to the other worker";
  there->record_progress(w_there, {{b->id, 8, 8, true}});
  there->record_progress(w_there, {});
  const auto running = here->list_jobs(std::nullopt, JobState::kRunning);
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(std::tuple(running[0].step, running[0].steps, running[0].decoding), std::tuple(3, 8, false));
  EXPECT_EQ(std::tuple(running[1].step, running[1].steps, running[1].decoding), std::tuple(8, 8, true));

  // Done: no progress. Back in the queue (its worker gone) and claimed again (here): the earlier lease's is not shown.
  EXPECT_TRUE(here->complete(a->id, w_here, "/o/a_1.png", "{}"));
  EXPECT_EQ(progress_of(*there, a->id), std::tuple(0, 0, false));
  EXPECT_EQ(there->expire_worker(w_there), 1);  // its host is gone: its job goes back to the queue
  EXPECT_EQ(here->recover().requeued, 1);
  EXPECT_EQ(progress_of(*here, b->id), std::tuple(0, 0, false));
  const auto again = here->claim(w_here);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, b->id);
  EXPECT_EQ(std::tuple(again->step, again->steps, again->decoding), std::tuple(0, 0, false)) << "the claim's own row";
  EXPECT_EQ(progress_of(*there, b->id), std::tuple(0, 0, false));
  there->record_progress(w_there, {{b->id, 7, 8, false}});
  EXPECT_EQ(progress_of(*there, b->id), std::tuple(0, 0, false)) << "no longer the other worker's lease";
  here->record_progress(w_here, {{b->id, 1, 8, false}});
  EXPECT_EQ(progress_of(*there, b->id), std::tuple(1, 8, false));
  EXPECT_EQ(here->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreProgressTest, AQueueFromBeforeTheProgressColumnsMigratesForward) {
  const int known = this->backend().known_schema_version();
  {
    auto s = this->open();
    s->submit({"r", "{}", "/out"}, {job("old", 1)});
  }
  // Back to the schema before the progress columns (the migrations after it run again too).
  const int before_progress = std::is_same_v<TypeParam, PostgresBackend> ? 3 : 4;
  this->backend().exec(std::string(kDropV9Schema) + kDropDeathColumns + kDropMarkColumns +
                       "ALTER TABLE jobs DROP COLUMN step; ALTER TABLE jobs DROP COLUMN steps; "
                       "ALTER TABLE jobs DROP COLUMN decoding; ALTER TABLE jobs DROP COLUMN progress_at; "
                       "ALTER TABLE jobs DROP COLUMN interrupted_at_step; ALTER TABLE jobs DROP COLUMN interruptions_at_step");
  this->backend().set_schema_version(before_progress);
  auto s = this->open();
  EXPECT_EQ(s->schema_version(), known);
  const int64_t w = s->register_worker(worker_info("here"));
  const auto old = s->claim(w);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->prompt, "old");
  EXPECT_EQ(std::tuple(old->step, old->steps), std::tuple(0, 0));
  s->record_progress(w, {{old->id, 2, 8, false}});
  EXPECT_EQ(progress_of(*s, old->id), std::tuple(2, 8, false));
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
