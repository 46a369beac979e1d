// Marks (star, reject) in the queue, on both stores: set and cleared with who and when, read on another
// connection, counted only where they change; a list naming a job that is not there changes nothing, even
// when the bad id is in the last of several statements; listings by mark (and pages after an id); retries of a list of jobs; a
// mark kept when its job is retried, recovered and rendered again; and a queue from before the marks
// migrated forward.
#include <gtest/gtest.h>

#include <chrono>
#include <ostream>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {

// For gtest's messages: found by argument-dependent lookup in Mark's own namespace (in an unnamed one
// it was never used).
void PrintTo(Mark m, std::ostream* os) { *os << (m == Mark::kNone ? "no mark" : mark_name(m)); }

namespace {

double wall_clock() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

std::vector<int64_t> ids_of(const std::vector<Job>& jobs) {
  std::vector<int64_t> ids;
  for (const auto& j : jobs) ids.push_back(j.id);
  return ids;
}

template <class Backend>
class QueueStoreMarksTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreMarksTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreMarksTest, MarksAreSetAndClearedWithWhoAndWhenAndCountedWhereTheyChange) {
  auto s = this->open(), other = this->open();  // the gallery's host and the CLI's
  const auto r = s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2), job("c", 3)});
  const auto jobs = s->list_jobs(r.run_id, std::nullopt);
  ASSERT_EQ(jobs.size(), 3u);
  const int64_t a = jobs[0].id, b = jobs[1].id, c = jobs[2].id;
  EXPECT_EQ(jobs[0].mark, Mark::kNone);
  EXPECT_EQ(jobs[0].marked_at, 0);
  EXPECT_EQ(jobs[0].marked_by, "");

  const double before = wall_clock();
  EXPECT_EQ(s->set_marks({a, b}, Mark::kStar, "uid 1000 (ann)"), 2);
  const double after = wall_clock();
  const auto starred = other->job(a);
  EXPECT_EQ(starred->mark, Mark::kStar);
  EXPECT_EQ(starred->marked_by, "uid 1000 (ann)");
  EXPECT_GE(starred->marked_at, before - 1);  // PostgreSQL's clock is the server's, on this host
  EXPECT_LE(starred->marked_at, after + 1);
  EXPECT_EQ(other->job(c)->mark, Mark::kNone);

  // The same mark again changes nothing: neither counted nor re-stamped.
  EXPECT_EQ(other->set_marks({a, a, b}, Mark::kStar, "http"), 0);
  EXPECT_EQ(s->job(a)->marked_by, "uid 1000 (ann)");
  EXPECT_EQ(s->job(a)->marked_at, starred->marked_at);
  // Another mark replaces it; clearing leaves no trace of who or when.
  EXPECT_EQ(other->set_marks({a, c}, Mark::kReject, "http"), 2);
  EXPECT_EQ(s->job(a)->mark, Mark::kReject);
  EXPECT_EQ(s->job(a)->marked_by, "http");
  EXPECT_EQ(s->set_marks({b, c}, Mark::kNone, "uid 1000 (ann)"), 2);
  EXPECT_EQ(s->set_marks({b}, Mark::kNone, "http"), 0) << "nothing to clear";
  const auto cleared = other->job(b);
  EXPECT_EQ(cleared->mark, Mark::kNone);
  EXPECT_EQ(cleared->marked_at, 0);
  EXPECT_EQ(cleared->marked_by, "");
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreMarksTest, AListNamingAMissingJobChangesNothingAndNamesTheFirst) {
  auto s = this->open();
  // More jobs than one statement takes (10,000 ids): the bad ids come after two whole slices.
  std::vector<NewJob> many;
  for (uint64_t seed = 0; seed < 25000; ++seed) many.push_back(job("p", seed));
  const auto r = s->submit({"r", "{}", "/o"}, many);
  ASSERT_EQ(r.inserted, 25000u);
  std::vector<int64_t> ids = ids_of(s->list_jobs(r.run_id, std::nullopt, 30000));
  ASSERT_EQ(ids.size(), 25000u);
  const int64_t last = ids.back();
  ids.push_back(last + 7);
  ids.push_back(last + 3);  // also missing, but later in the list
  try {
    s->set_marks(ids, Mark::kStar, "http");
    FAIL() << "a missing job was not refused";
  } catch (const NoSuchJobError& e) {
    EXPECT_EQ(e.job(), last + 7);
    EXPECT_EQ(std::string(e.what()), "there is no job " + std::to_string(last + 7));
  }
  EXPECT_TRUE(s->list_jobs({.marked = MarkFilter::kAnyMark}).empty()) << "nothing of the first slices was kept";
  ids.resize(25000);
  EXPECT_EQ(s->set_marks(ids, Mark::kStar, "http"), 25000);
  EXPECT_EQ(s->list_jobs({.marked = MarkFilter::kStar, .limit = 30000}).size(), 25000u);
  EXPECT_EQ(s->set_marks(ids, Mark::kNone, "http"), 25000);
  EXPECT_TRUE(s->list_jobs({.marked = MarkFilter::kAnyMark}).empty());
}

TYPED_TEST(QueueStoreMarksTest, ListingsSelectByMarkWithRunStateAndPage) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info("h"));
  const auto r1 = s->submit({"r1", "{}", "/o"}, {job("a", 1), job("b", 2), job("c", 3), job("d", 4)});
  const auto r2 = s->submit({"r2", "{}", "/o"}, {job("e", 5), job("f", 6)});
  const auto j1 = s->list_jobs(r1.run_id, std::nullopt), j2 = s->list_jobs(r2.run_id, std::nullopt);
  const auto done = s->claim(w);  // a, done
  ASSERT_TRUE(done && done->id == j1[0].id);
  ASSERT_TRUE(s->complete(done->id, w, "/o/a_1.png", "{}"));
  EXPECT_EQ(s->set_marks({j1[0].id, j1[2].id, j2[1].id}, Mark::kStar, "http"), 3);
  EXPECT_EQ(s->set_marks({j1[1].id}, Mark::kReject, "http"), 1);

  using V = std::vector<int64_t>;
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kStar})), (V{j1[0].id, j1[2].id, j2[1].id}));
  EXPECT_EQ(ids_of(s->list_jobs({.run = r1.run_id, .marked = MarkFilter::kStar})), (V{j1[0].id, j1[2].id}));
  EXPECT_EQ(ids_of(s->list_jobs({.run = r1.run_id, .state = JobState::kQueued, .marked = MarkFilter::kStar})), (V{j1[2].id}));
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kReject})), (V{j1[1].id}));
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kUnmarked})), (V{j1[3].id, j2[0].id}));
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kAnyMark, .limit = 2, .offset = 1})), (V{j1[1].id, j1[2].id}));
  EXPECT_EQ(ids_of(s->list_jobs(r2.run_id, std::nullopt)), (V{j2[0].id, j2[1].id})) << "no filter: every job";
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kAnyMark, .after_id = j1[1].id})), (V{j1[2].id, j2[1].id}))
      << "a page after an id";
}

TYPED_TEST(QueueStoreMarksTest, RetryJobsRequeuesFailedAndCanceledOnesAndEveryMarkStaysThroughRenders) {
  auto s = this->open({.max_attempts = 1, .backoff_seconds = 0});
  const int64_t w = s->register_worker(worker_info("h"));
  const auto r = s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2), job("c", 3), job("d", 4)});
  const auto ids = ids_of(s->list_jobs(r.run_id, std::nullopt));
  const int64_t a = ids[0], b = ids[1], c = ids[2], d = ids[3];
  const auto ja = s->claim(w);
  ASSERT_EQ(ja->id, a);
  ASSERT_EQ(s->fail(a, w, "out of memory"), JobState::kFailed);
  ASSERT_TRUE(s->cancel_job(b));
  const auto jc = s->claim(w);
  ASSERT_EQ(jc->id, c);
  ASSERT_TRUE(s->complete(c, w, "/o/c_3.png", "{}"));
  ASSERT_EQ(s->set_marks({a, c}, Mark::kStar, "uid 7 (bo)"), 2);
  ASSERT_EQ(s->set_marks({b, d}, Mark::kReject, "http"), 2);
  const auto marked_a = s->job(a);

  // Failed a and canceled b go back; done c and queued d, and an id of no job, are left as they are.
  EXPECT_EQ(s->retry_jobs({a, b, c, d, d + 1000}), 2);
  const auto ra = s->job(a), rb = s->job(b);
  EXPECT_EQ(ra->state, JobState::kQueued);
  EXPECT_EQ(ra->attempts, 0);
  EXPECT_EQ(ra->error, "");
  EXPECT_EQ(rb->state, JobState::kQueued);
  EXPECT_EQ(s->job(c)->state, JobState::kDone);
  EXPECT_EQ(s->retry_jobs({a, b}), 0) << "queued now: nothing to retry";
  EXPECT_EQ(s->counts(r.run_id)[static_cast<int>(JobState::kQueued)], 3);

  // a is rendered again: its lease runs out (interrupted), it is recovered, claimed and completed.
  const auto again = s->claim(w);
  ASSERT_EQ(again->id, a);
  EXPECT_EQ(again->mark, Mark::kStar) << "the claim's own row";
  EXPECT_EQ(s->expire_worker(w), 1);
  EXPECT_EQ(s->recover().requeued, 1);
  const int64_t w2 = s->register_worker(worker_info("h"));
  ASSERT_EQ(s->claim(w2)->id, a);
  ASSERT_TRUE(s->complete(a, w2, "/o/a_1.png", "{}"));
  for (const int64_t id : {a, c}) {
    const auto j = s->job(id);
    EXPECT_EQ(j->mark, Mark::kStar) << id;
    EXPECT_EQ(j->marked_by, "uid 7 (bo)") << id;
  }
  EXPECT_EQ(s->job(a)->state, JobState::kDone);
  EXPECT_EQ(s->job(a)->marked_at, marked_a->marked_at);
  // The whole run retried (retry) and b rendered: its reject stays too.
  ASSERT_TRUE(s->cancel_job(b));
  EXPECT_EQ(s->retry(r.run_id, true), 1);
  ASSERT_EQ(s->claim(w2)->id, b);
  ASSERT_TRUE(s->complete(b, w2, "/o/b_2.png", "{}"));
  EXPECT_EQ(s->job(b)->mark, Mark::kReject);
  EXPECT_EQ(s->job(d)->mark, Mark::kReject);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreMarksTest, AQueueFromBeforeTheMarksMigratesForwardWithNoMarks) {
  const int known = this->backend().known_schema_version();
  {
    auto s = this->open();
    s->submit({"r", "{}", "/o"}, {job("old", 1)});
  }
  this->backend().exec(std::string(kDropV9Schema) + kDropDeathColumns + kDropMarkColumns +
                       "ALTER TABLE jobs DROP COLUMN interrupted_at_step; ALTER TABLE jobs DROP COLUMN interruptions_at_step");
  // Both stores' version before the marks (v6), the same-step kills (v7) and the deaths in a row (v8).
  this->backend().set_schema_version(5);
  auto s = this->open();
  EXPECT_EQ(s->schema_version(), known);
  const auto old = s->list_jobs(std::nullopt, std::nullopt);
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].mark, Mark::kNone);
  EXPECT_EQ(s->set_marks({old[0].id}, Mark::kStar, "http"), 1);
  EXPECT_EQ(ids_of(s->list_jobs({.marked = MarkFilter::kStar})), std::vector<int64_t>{old[0].id});
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
