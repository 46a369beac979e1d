// Output paths that change hands, on both stores: a path passes to other content only when the submit
// allows it (may_take_over) and no job of its owner is queued or running; a job that gave its path up
// is not retried onto it; forget_run refuses a run in progress, deletes a finished one, lists its own
// images, and hands a path another run's job shares to that run instead of releasing it.
#include <gtest/gtest.h>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

template <class Backend>
class QueueStoreForgetTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreForgetTest, QueueStoreBackends, BackendNames);

// Another prompt's job for `j`'s path.
NewJob other_image_at(const NewJob& j, const std::string& prompt, bool may_take_over) {
  NewJob o = job(prompt, j.seed);
  o.output_path = j.output_path;
  o.may_take_over = may_take_over;
  return o;
}

// Claims the queue's next job and finishes it: done, or failed at once.
void finish_next(QueueStore& s, int64_t w, bool done) {
  const auto j = s.claim(w);
  ASSERT_TRUE(j);
  if (done) {
    ASSERT_TRUE(s.complete(j->id, w, j->output_path, "{}"));
  } else {
    ASSERT_EQ(s.fail(j->id, w, "broken", Failure::kPermanent), JobState::kFailed);
  }
}

TYPED_TEST(QueueStoreForgetTest, APathPassesOnlyFromAFinishedOwnerAndOnlyWhenAllowed) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const NewJob fox = job("fox", 1);
  const int64_t first = s->submit({"r1", "{}", "/o"}, {fox}).run_id;
  // Queued: not taken, allowed or not, and the clash says the owner is active.
  try {
    s->submit({"r2", "{}", "/o"}, {other_image_at(fox, "cat", true)});
    FAIL() << "a queued owner's path was taken";
  } catch (const OutputClashError& e) {
    ASSERT_EQ(e.clashes().size(), 1u);
    EXPECT_EQ(e.clashes()[0].owner_run, first);
    EXPECT_TRUE(e.clashes()[0].owner_active);
  }
  finish_next(*s, w, false);  // failed: finished
  try {
    s->submit({"r3", "{}", "/o"}, {other_image_at(fox, "cat", false)});
    FAIL() << "a path was taken without leave";
  } catch (const OutputClashError& e) {
    EXPECT_FALSE(e.clashes()[0].owner_active);
  }
  const auto taken = s->submit({"r4", "{}", "/o"}, {other_image_at(fox, "cat", true)});
  EXPECT_EQ(taken.inserted, 1u);
  EXPECT_EQ(taken.taken_over, 1u);
  // The failed fox job gave its path up: a retry would render over cat's image.
  EXPECT_EQ(s->retry(first), 0);
  EXPECT_EQ(s->retry_jobs({s->list_jobs(first, std::nullopt)[0].id}), 0);
  EXPECT_EQ(s->list_jobs(first, std::nullopt)[0].state, JobState::kFailed);
  // The new owner's own failed job is retried as before.
  finish_next(*s, w, false);
  EXPECT_EQ(s->retry(taken.run_id), 1);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreForgetTest, ForgetRefusesARunInProgressAndReleasesOrHandsOnItsPaths) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const NewJob a = job("a", 1), b = job("b", 2);
  const int64_t first = s->submit({"r1", "{}", "/o"}, {a, b}).run_id;
  const auto busy = s->forget_run(first);
  EXPECT_TRUE(busy.found);
  EXPECT_EQ(busy.active, 2);
  EXPECT_EQ(s->list_jobs(first, std::nullopt).size(), 2u) << "nothing forgotten";
  finish_next(*s, w, true);
  finish_next(*s, w, true);
  // b resubmitted (the same image shares its path), and done too.
  const int64_t second = s->submit({"r2", "{}", "/o"}, {b}).run_id;
  finish_next(*s, w, true);
  const auto f = s->forget_run(first);
  EXPECT_TRUE(f.found);
  EXPECT_EQ(f.active, 0);
  EXPECT_EQ(f.jobs, 2);
  ASSERT_EQ(f.images.size(), 1u) << "b's image is run 2's too";
  EXPECT_EQ(f.images[0].path, a.output_path);
  EXPECT_FALSE(s->run(first));
  EXPECT_FALSE(s->forget_run(first).found);
  ASSERT_EQ(s->list_runs().size(), 1u);
  // a's path is free for any content, even without leave (no owner at all); b's is run 2's now.
  EXPECT_EQ(s->submit({"r3", "{}", "/o"}, {other_image_at(a, "c", false)}).inserted, 1u);
  try {
    s->submit({"r4", "{}", "/o"}, {other_image_at(b, "d", false)});
    FAIL() << "run 2's path was released";
  } catch (const OutputClashError& e) {
    EXPECT_EQ(e.clashes()[0].owner_run, second);
  }
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
