// A connection that drops after the server committed but before the reply arrived (the ambiguous
// commit): the store runs the write again on a new connection, and it must not apply twice. The drop is
// made in pg::Connection right after the statement the server carried out, on a real server.
#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "storage/postgres/pg_connection.h"
#include "tests/storage/queue_store_backends.h"

namespace rgbaq::storage {
namespace {

// Drops the connection once, after the first statement that `matches`; counts the drops.
class DropOnce {
 public:
  explicit DropOnce(std::string prefix) : prefix_(std::move(prefix)) {
    pg::drop_after_statement_for_test([this](const std::string& sql) {
      if (sql.rfind(prefix_, 0) != 0 || !armed_.exchange(false)) return false;
      ++drops_;
      return true;
    });
  }
  ~DropOnce() { pg::drop_after_statement_for_test({}); }
  DropOnce(const DropOnce&) = delete;
  DropOnce& operator=(const DropOnce&) = delete;
  void arm() { armed_ = true; }
  int drops() const { return drops_; }

 private:
  std::string prefix_;
  std::atomic<bool> armed_{false};
  std::atomic<int> drops_{0};
};

std::vector<NewJob> jobs(int n, int first_seed = 0) {
  std::vector<NewJob> out;
  for (int i = first_seed; i < first_seed + n; ++i) {
    NewJob j;
    j.line = i + 2;
    j.prompt = "a fox " + std::to_string(i % 3);
    j.seed = static_cast<uint64_t>(i);
    j.width = j.height = 64;
    j.output_path = "/o/" + std::to_string(i) + ".png";
    j.content_key = static_cast<uint64_t>(i) + 1000;
    j.prompt_key = static_cast<uint64_t>(i % 3);
    out.push_back(j);
  }
  return out;
}

int64_t in_state(QueueStore& s, JobState state) { return s.counts()[static_cast<int>(state)]; }

class AmbiguousCommit : public QueueStoreTest<PostgresBackend> {};

TEST_F(AmbiguousCommit, ABatchWhoseCommitLooksFailedIsInsertedOnce) {
  auto s = open();
  DropOnce drop("COMMIT");
  const RunOptions run{"r", "{}", "/o"};
  const int64_t id = s->begin_run(run);
  EXPECT_EQ(s->append_jobs(id, run, jobs(40)).inserted, 40u);
  drop.arm();
  const auto second = s->append_jobs(id, run, jobs(30, 40));
  ASSERT_EQ(drop.drops(), 1) << "the second batch's COMMIT reached the server, its reply did not";
  EXPECT_EQ(second.inserted, 30u) << "the first run's result, read back";
  s->publish_run(id, 70);
  EXPECT_EQ(s->list_jobs(id, std::nullopt).size(), 70u) << "no batch inserted twice";
  EXPECT_EQ(in_state(*s, JobState::kQueued), 70);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(AmbiguousCommit, APublishWhoseCommitLooksFailedCountsItsJobsOnce) {
  auto s = open();
  DropOnce drop("COMMIT");
  const RunOptions run{"r", "{}", "/o"};
  const int64_t id = s->begin_run(run);
  const auto added = s->append_jobs(id, run, jobs(25));
  drop.arm();
  s->publish_run(id, added.inserted);
  ASSERT_EQ(drop.drops(), 1);
  EXPECT_EQ(in_state(*s, JobState::kQueued), 25);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(AmbiguousCommit, AClaimWhoseReplyIsLostTakesOneJob) {
  auto s = open();
  s->submit({"r", "{}", "/o"}, jobs(10));
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  DropOnce drop("WITH top AS");  // the claim, a statement of its own (no BEGIN ... COMMIT)
  drop.arm();
  const auto job = s->claim(w, {2});
  ASSERT_EQ(drop.drops(), 1);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->seed, 2u) << "the first job of the cached prompt";
  EXPECT_EQ(job->worker_id, w);
  const auto running = s->list_jobs(std::nullopt, JobState::kRunning);
  ASSERT_EQ(running.size(), 1u) << "the claim did not run twice";
  EXPECT_EQ(running[0].id, job->id);
  EXPECT_EQ(in_state(*s, JobState::kQueued), 9);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(AmbiguousCommit, ACompleteAndClaimWhoseCommitLooksFailedCompletesOneAndClaimsOne) {
  auto s = open();
  s->submit({"r", "{}", "/o"}, jobs(10));
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  const auto first = s->claim(w);
  ASSERT_TRUE(first);
  DropOnce drop("WITH done AS");  // complete and claim: one statement, committed on its own
  drop.arm();
  const auto next = s->complete_and_claim(first->id, first->output_path, "{}", w);
  ASSERT_EQ(drop.drops(), 1);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->seed, 1u);
  const auto running = s->list_jobs(std::nullopt, JobState::kRunning);
  ASSERT_EQ(running.size(), 1u) << "one job claimed, not two";
  EXPECT_EQ(running[0].id, next->id);
  EXPECT_EQ(s->job(first->id)->state, JobState::kDone);
  EXPECT_EQ(in_state(*s, JobState::kDone), 1);
  EXPECT_EQ(in_state(*s, JobState::kQueued), 8);
  EXPECT_EQ(s->list_workers().at(0).images_done, 1);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(AmbiguousCommit, ACompleteWhoseReplyIsLostStillReportsItsJobDone) {
  auto s = open();
  s->submit({"r", "{}", "/o"}, jobs(3));
  const int64_t w = s->register_worker({"h", "b", 1, "cpu", "cpu"});
  const auto job = s->claim(w);
  ASSERT_TRUE(job);
  DropOnce drop("WITH done AS");  // the complete, a statement of its own
  drop.arm();
  EXPECT_TRUE(s->complete(job->id, w, job->output_path, "{}")) << "the first run committed: done by this worker";
  ASSERT_EQ(drop.drops(), 1);
  EXPECT_EQ(s->job(job->id)->state, JobState::kDone);
  EXPECT_EQ(s->list_workers().at(0).images_done, 1) << "counted once";
  EXPECT_FALSE(s->complete(job->id, w + 1, job->output_path, "{}")) << "not another worker's";
  EXPECT_EQ(s->integrity_check(), "ok");
}

TEST_F(AmbiguousCommit, ABatchForADiscardedRunIsRefusedAndLeavesNothing) {
  auto s = open();
  const RunOptions run{"r", "{}", "/o"};
  const int64_t id = s->begin_run(run);
  s->append_jobs(id, run, jobs(5));
  EXPECT_EQ(s->discard_run(id), 5);
  try {
    s->append_jobs(id, run, jobs(5, 5));
    FAIL() << "a batch for a discarded run was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("run " + std::to_string(id) + " is not being submitted"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(s->list_jobs(std::nullopt, std::nullopt).empty());
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
