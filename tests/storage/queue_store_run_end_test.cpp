// Run ends and what they owe (issue 41), on both stores: an end recorded once, by the transition that
// leaves a run with no queued or running job (a completion, a failure for good, a cancel, a recovery, the
// publish of an empty run, a recovery that cancels a job whose cancel was requested), never by one that
// re-seeds; an end a crash missed recorded by the next recovery; two daemons finishing a run's last two
// jobs at once record its end once; a retry reopens the run and its next end is a new one; the hook and
// webhook owed when any registered daemon (or the one recording the end) can run them, whichever daemon
// finished the last job; an owed hook given to exactly one of two daemons claiming at once; a webhook's
// lease, retries and outcome, an attempt recorded only under the claim it was made under; a hook whose
// daemon went away declared lost by recovery; and a run not forgotten while an end of it still owes
// something, its ends gone with it once forgotten.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "tests/storage/queue_store_backends.h"
#include "tests/storage/two_worker_jobs.h"

namespace rgbaq::storage {
namespace {

double wall_clock() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

constexpr StoreOptions kOwing{.owe_hook = true, .owe_webhook = true};

template <class Backend>
class QueueStoreRunEndTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreRunEndTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreRunEndTest, TheLastCompletionRecordsTheEndOnceWithWhatItOwes) {
  auto s = this->open(kOwing);
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  const auto a = s->claim(w), b = s->claim(w);
  ASSERT_TRUE(s->complete(a->id, w, a->output_path, "{}"));
  EXPECT_TRUE(s->run_ends(run.run_id).empty()) << "b still runs";
  EXPECT_FALSE(s->run(run.run_id)->last_end);
  const double before = wall_clock();
  const auto next = s->complete_and_claim(b->id, b->output_path, "{}", w);
  EXPECT_FALSE(next);
  const auto ends = s->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 1u);
  const RunEnd& e = ends[0];
  EXPECT_EQ(e.run_id, run.run_id);
  EXPECT_EQ(std::tuple(e.done, e.failed, e.canceled), std::tuple(2, 0, 0));
  EXPECT_GE(e.ended_at, before - 1);  // PostgreSQL's clock is the server's, on this host
  EXPECT_LE(e.ended_at, wall_clock() + 1);
  EXPECT_EQ(std::tuple(e.hook_state, e.hook_outcome, e.hook_worker_id, e.hook_pid), std::tuple("owed", "", 0, 0));
  EXPECT_EQ(std::tuple(e.webhook_state, e.webhook_attempts, e.webhook_next_at), std::tuple("owed", 0, 0.0));
  EXPECT_EQ(nlohmann::json::parse(e.webhook_log_json), nlohmann::json::array());
  const auto listed = s->run(run.run_id);
  ASSERT_TRUE(listed->last_end);
  EXPECT_EQ(listed->last_end->id, e.id);
  // A refused completion of the ended run records nothing more.
  EXPECT_FALSE(s->complete(b->id, w, b->output_path, "{}"));
  EXPECT_EQ(s->run_ends(run.run_id).size(), 1u);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, TwoDaemonsFinishingARunsLastJobsAtOnceRecordItsEndOnce) {
  constexpr int kRuns = 30;
  auto setup = this->open(kOwing);
  // Each daemon holds one of the two jobs of every run, and they complete them, in run order, at once.
  const int64_t workers[2] = {setup->register_worker(worker_info("a")), setup->register_worker(worker_info("b"))};
  std::vector<Job> held[2];
  for (int i = 0; i < kRuns; ++i) {
    setup->submit({"r", "{}", "/o"}, {job("a" + std::to_string(i), 1), job("b" + std::to_string(i), 1)});
    for (int k = 0; k < 2; ++k) held[k].push_back(*setup->claim(workers[k]));
  }
  std::atomic<int> ready{0};
  auto daemon = [&](int k) {
    auto s = this->open(kOwing);  // its own connection
    for (++ready; ready < 2;) std::this_thread::yield();
    for (const Job& j : held[k]) EXPECT_TRUE(s->complete(j.id, workers[k], j.output_path, "{}"));
  };
  std::thread a(daemon, 0), b(daemon, 1);
  a.join();
  b.join();
  const auto runs = setup->list_runs();
  ASSERT_EQ(runs.size(), static_cast<size_t>(kRuns));
  for (const Run& r : runs) {
    const auto ends = setup->run_ends(r.id);
    ASSERT_EQ(ends.size(), 1u) << "run " << r.id;
    EXPECT_EQ(ends[0].done, 2);
  }
  EXPECT_EQ(setup->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, ACompletionThatReseedsDoesNotEndTheRun) {
  auto s = this->open(kOwing);
  const int64_t w = s->register_worker(worker_info("h"));
  NewJob first = job("icon", 1);
  first.row_key = 5;
  first.reseed_on = "cut_off";
  first.reseed_max = 1;
  NewJob again = first;
  again.seed = 2;
  again.output_path = "/o/icon_2.png";
  again.content_key = 2;
  const auto run = s->submit({"r", "{}", "/o"}, {first});
  const auto j = s->claim(w);
  const auto next = s->complete_and_claim(
      j->id, {.output_path = j->output_path, .metadata_json = "{}", .qa_flags = "cut_off", .reseed_candidates = {again}}, w);
  EXPECT_TRUE(s->run_ends(run.run_id).empty()) << "the re-seeded job is queued";
  const auto& r = next;  // the claim, after the complete in the same transaction, takes it
  ASSERT_TRUE(r);
  EXPECT_EQ(r->replaces, j->id);
  ASSERT_TRUE(s->complete(r->id, w, {.output_path = r->output_path, .metadata_json = "{}", .qa_flags = "ok"}));
  const auto ends = s->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].done, 2);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, EachTransitionThatEndsARunRecordsItsEndAndOnlyThose) {
  auto s = this->open({.max_attempts = 2, .backoff_seconds = 0, .lease_seconds = 0.3});
  const int64_t w = s->register_worker(worker_info("h"));
  auto ends_of = [&](int64_t run) { return s->run_ends(run).size(); };
  // A failure for good ends it; one that queues the job again does not.
  const auto failing = s->submit({"failing", "{}", "/o"}, {job("f", 1)});
  auto j = s->claim(w);
  EXPECT_EQ(s->fail(j->id, w, "boom"), JobState::kQueued);
  EXPECT_EQ(ends_of(failing.run_id), 0u);
  j = s->claim(w);
  EXPECT_EQ(s->fail(j->id, w, "boom again"), JobState::kFailed);
  ASSERT_EQ(ends_of(failing.run_id), 1u);
  EXPECT_EQ(s->run_ends(failing.run_id)[0].failed, 1);
  EXPECT_EQ(s->run_ends(failing.run_id)[0].hook_state, "") << "nothing owed: the options owe nothing";
  EXPECT_EQ(s->run_ends(failing.run_id)[0].webhook_state, "");

  // A cancel of queued jobs ends it at once; with a job running, its end waits for the job.
  const auto canceled = s->submit({"canceled", "{}", "/o"}, {job("c", 1), job("c", 2)});
  const auto running = s->claim(w);
  EXPECT_EQ(s->cancel_run(canceled.run_id).stopping, 1);
  EXPECT_EQ(ends_of(canceled.run_id), 0u);
  EXPECT_TRUE(s->finish_canceled(running->id, w));
  ASSERT_EQ(ends_of(canceled.run_id), 1u);
  EXPECT_EQ(s->run_ends(canceled.run_id)[0].canceled, 2);
  const auto one = s->submit({"one", "{}", "/o"}, {job("o", 1)});
  EXPECT_TRUE(s->cancel_job(s->list_jobs(one.run_id, std::nullopt)[0].id));
  EXPECT_EQ(ends_of(one.run_id), 1u);

  // A recovery that fails the crashed job ends its run; one that requeues does not.
  const auto crashing = s->submit({"crashing", "{}", "/o"}, {job("x", 1)});
  for (int attempt = 1; attempt <= 2; ++attempt) {
    const auto c = s->claim(w);
    ASSERT_TRUE(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // its lease runs out
    ASSERT_TRUE(s->heartbeat(w, {}));
    const auto r = s->recover(c->id);
    EXPECT_EQ(r.failed, attempt == 2 ? 1 : 0);
    EXPECT_EQ(ends_of(crashing.run_id), attempt == 2 ? 1u : 0u);
  }

  // A submit whose every job is a duplicate publishes a run with nothing to run: it ends then.
  const auto waiting = s->submit({"waiting", "{}", "/o"}, {job("q", 1)});
  const auto empty = s->submit({"dup", "{}", "/o", true}, {job("q", 1)});
  EXPECT_EQ(empty.inserted, 0u);
  EXPECT_EQ(ends_of(empty.run_id), 1u);
  EXPECT_EQ(ends_of(waiting.run_id), 0u);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, ARetryReopensTheRunAndItsNextEndIsANewOneOwingWhatTheOptionsSayThen) {
  auto quiet = this->open();  // a daemon with no hook configured
  const int64_t w = quiet->register_worker(worker_info("h"));
  const auto run = quiet->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  for (int i = 0; i < 2; ++i) {
    const auto j = quiet->claim(w);
    ASSERT_EQ(quiet->fail(j->id, w, "no", Failure::kPermanent), JobState::kFailed);
  }
  ASSERT_EQ(quiet->run_ends(run.run_id).size(), 1u);
  EXPECT_EQ(quiet->run_ends(run.run_id)[0].hook_state, "");

  auto owing = this->open(kOwing);  // restarted with --on-run-done and --webhook
  EXPECT_EQ(owing->retry(run.run_id), 2);
  EXPECT_EQ(owing->integrity_check(), "ok") << "open again";
  const auto first = owing->claim(w);
  ASSERT_TRUE(owing->complete(first->id, w, first->output_path, "{}"));
  EXPECT_EQ(owing->run_ends(run.run_id).size(), 1u);
  const auto second = owing->claim(w);
  ASSERT_EQ(owing->fail(second->id, w, "still no", Failure::kPermanent), JobState::kFailed);
  auto ends = owing->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_LT(ends[0].id, ends[1].id);
  EXPECT_EQ(std::tuple(ends[1].done, ends[1].failed, ends[1].hook_state, ends[1].webhook_state),
            std::tuple(1, 1, "owed", "owed"));
  EXPECT_EQ(owing->run(run.run_id)->last_end->id, ends[1].id);

  // retry_jobs reopens too.
  EXPECT_EQ(quiet->retry_jobs({second->id}), 1);
  EXPECT_EQ(quiet->integrity_check(), "ok");
  const auto third = quiet->claim(w);
  ASSERT_TRUE(quiet->complete(third->id, w, third->output_path, "{}"));
  ends = quiet->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_EQ(std::tuple(ends[2].done, ends[2].failed, ends[2].hook_state), std::tuple(2, 0, ""));
  EXPECT_EQ(quiet->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, AnOwedHookGoesToExactlyOneOfTwoDaemonsClaimingAtOnce) {
  constexpr int kRuns = 12;
  auto s = this->open(kOwing);
  const int64_t w = s->register_worker(worker_info("h"));
  for (int i = 0; i < kRuns; ++i) {
    s->submit({"r", "{}", "/o"}, {job("p" + std::to_string(i), 1)});
    const auto j = s->claim(w);
    ASSERT_TRUE(s->complete(j->id, w, j->output_path, "{}"));
  }
  EXPECT_FALSE(s->claim_run_hook(w + 100, 1)) << "no worker of that id: its hook would be declared lost";
  std::vector<RunEnd> claimed[2];
  auto daemon = [&](int k) {
    auto mine = this->open(kOwing);  // its own connection
    const int64_t me = mine->register_worker(worker_info("d" + std::to_string(k)));
    while (auto end = mine->claim_run_hook(me, 4000 + k)) claimed[k].push_back(*end);
  };
  std::thread a(daemon, 0), b(daemon, 1);
  a.join();
  b.join();
  std::set<int64_t> ids;
  for (int k = 0; k < 2; ++k) {
    for (const RunEnd& e : claimed[k]) {
      EXPECT_TRUE(ids.insert(e.id).second) << "end " << e.id << " claimed twice";
      EXPECT_EQ(e.hook_state, "running");
      EXPECT_EQ(e.hook_pid, 4000 + k);
      EXPECT_GT(e.hook_started_at, 0);
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kRuns));
  EXPECT_FALSE(s->claim_run_hook(w, 1)) << "none left";

  const RunEnd& e = claimed[0].empty() ? claimed[1][0] : claimed[0][0];
  EXPECT_TRUE(s->finish_run_hook(e.id, "exit 3"));
  EXPECT_FALSE(s->finish_run_hook(e.id, "exit 0")) << "done once";
  const RunEnd done = s->run_ends(e.run_id).at(0);
  EXPECT_EQ(std::tuple(done.hook_state, done.hook_outcome), std::tuple("done", "exit 3"));
  EXPECT_GE(done.hook_finished_at, done.hook_started_at);
}

TYPED_TEST(QueueStoreRunEndTest, AHookWhoseDaemonIsGoneIsLostOnRecoveryAndNeverOwedAgain) {
  auto s = this->open(kOwing);
  const int64_t gone = s->register_worker(worker_info("gone")), live = s->register_worker(worker_info("live"));
  for (int i = 0; i < 2; ++i) {
    s->submit({"r", "{}", "/o"}, {job("p" + std::to_string(i), 1)});
    const auto j = s->claim(live);
    ASSERT_TRUE(s->complete(j->id, live, j->output_path, "{}"));
  }
  const auto lost = s->claim_run_hook(gone, 11);
  const auto kept = s->claim_run_hook(live, 12);
  ASSERT_TRUE(lost && kept);
  EXPECT_EQ(s->expire_worker(gone), 0);  // its process is known dead
  s->recover();
  EXPECT_EQ(s->run_ends(lost->run_id).at(0).hook_state, "lost");
  EXPECT_EQ(s->run_ends(kept->run_id).at(0).hook_state, "running") << "a live daemon's hook is left alone";
  EXPECT_FALSE(s->claim_run_hook(live, 12)) << "a lost hook is not owed again";
  // The live one finishes; a lost one whose daemon lived on after all may still say how it went.
  EXPECT_TRUE(s->finish_run_hook(kept->id, "exit 0"));
  EXPECT_TRUE(s->finish_run_hook(lost->id, "signal 9"));
  EXPECT_EQ(s->run_ends(lost->run_id).at(0).hook_outcome, "signal 9");
}

TYPED_TEST(QueueStoreRunEndTest, AWebhookIsLeasedRetriedWhenDueAndEndsDeliveredOrGivenUp) {
  auto s = this->open({.lease_seconds = 0.3, .owe_webhook = true});
  const int64_t w = s->register_worker(worker_info("a"));
  int64_t runs[2];
  for (int i = 0; i < 2; ++i) {
    runs[i] = s->submit({"r", "{}", "/o"}, {job("p" + std::to_string(i), 1)}).run_id;
    const auto j = s->claim(w);
    ASSERT_TRUE(s->complete(j->id, w, j->output_path, "{}"));
  }
  EXPECT_EQ(s->run_ends(runs[0]).at(0).hook_state, "") << "no hook owed";
  const double now = wall_clock();
  const auto first = s->claim_webhook(w, now);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->run_id, runs[0]);
  EXPECT_EQ(first->webhook_state, "sending");
  EXPECT_EQ(first->webhook_worker_id, w);
  EXPECT_NEAR(first->webhook_lease_expires, now + 0.3, 1.0);

  // Its sender stalls past the lease: recovery makes it owed again and another takes it.
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  const int64_t w2 = s->register_worker(worker_info("b"));
  s->recover();
  EXPECT_EQ(s->run_ends(runs[0]).at(0).webhook_state, "owed");
  const auto again = s->claim_webhook(w2, wall_clock());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->id, first->id);
  EXPECT_FALSE(s->record_webhook_attempt(*first, "HTTP 200", true, std::nullopt)) << "not a's any more";

  // A 500: owed again, due at the time given; not before.
  const double retry_at = wall_clock() + 100;
  EXPECT_TRUE(s->record_webhook_attempt(*again, "HTTP 500", false, retry_at));
  auto e = s->run_ends(runs[0]).at(0);
  EXPECT_EQ(std::tuple(e.webhook_state, e.webhook_attempts, e.webhook_next_at), std::tuple("owed", 1, retry_at));
  const auto other = s->claim_webhook(w2, wall_clock());
  ASSERT_TRUE(other);
  EXPECT_EQ(other->run_id, runs[1]) << "the first is not due";
  EXPECT_FALSE(s->claim_webhook(w2, wall_clock()));
  const auto due = s->claim_webhook(w2, retry_at + 1);
  ASSERT_TRUE(due);
  EXPECT_EQ(due->id, again->id);
  EXPECT_TRUE(s->record_webhook_attempt(*due, "HTTP 200", true, std::nullopt));
  EXPECT_FALSE(s->record_webhook_attempt(*due, "HTTP 200", true, std::nullopt)) << "recorded once";
  e = s->run_ends(runs[0]).at(0);
  EXPECT_EQ(std::tuple(e.webhook_state, e.webhook_attempts), std::tuple("delivered", 2));
  const nlohmann::json log = nlohmann::json::parse(e.webhook_log_json);
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0]["outcome"], "HTTP 500");
  EXPECT_EQ(log[1]["outcome"], "HTTP 200");
  EXPECT_LE(log[0]["at"].get<double>(), log[1]["at"].get<double>());

  // A network error with no retry left: given up.
  EXPECT_TRUE(s->record_webhook_attempt(*other, "connection refused", false, std::nullopt));
  EXPECT_EQ(s->run_ends(runs[1]).at(0).webhook_state, "gave_up");
  EXPECT_FALSE(s->claim_webhook(w2, retry_at + 1000));
}

TYPED_TEST(QueueStoreRunEndTest, AWebhookAttemptIsRecordedOnlyUnderTheClaimItWasMadeUnder) {
  auto s = this->open({.lease_seconds = 0.3, .owe_webhook = true});
  const int64_t w = s->register_worker(worker_info("a"));
  const auto run = s->submit({"r", "{}", "/o"}, {job("p", 1)});
  const auto j = s->claim(w);
  ASSERT_TRUE(s->complete(j->id, w, j->output_path, "{}"));
  const auto stale = s->claim_webhook(w, wall_clock());
  ASSERT_TRUE(stale);
  EXPECT_NE(stale->webhook_claim, 0);
  // Its attempt outlives the lease; recovery makes the delivery owed again and the same worker (its
  // sender's next round) claims it anew before the stale attempt is recorded.
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  ASSERT_TRUE(s->heartbeat(w, {}));
  s->recover();
  const auto fresh = s->claim_webhook(w, wall_clock());
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->id, stale->id);
  EXPECT_EQ(fresh->webhook_worker_id, stale->webhook_worker_id) << "the same worker";
  EXPECT_NE(fresh->webhook_claim, stale->webhook_claim);
  EXPECT_FALSE(s->record_webhook_attempt(*stale, "HTTP 500", false, wall_clock() + 60)) << "an earlier claim's attempt";
  auto e = s->run_ends(run.run_id).at(0);
  EXPECT_EQ(std::tuple(e.webhook_state, e.webhook_attempts), std::tuple("sending", 0));
  EXPECT_TRUE(s->record_webhook_attempt(*fresh, "HTTP 204", true, std::nullopt));
  e = s->run_ends(run.run_id).at(0);
  EXPECT_EQ(std::tuple(e.webhook_state, e.webhook_attempts), std::tuple("delivered", 1));
}

TYPED_TEST(QueueStoreRunEndTest, AnEndOwesWhatAnyRegisteredDaemonCanDoWhicheverFinishedTheLastJob) {
  // Two daemons on one queue: one runs hooks, the other nothing; the plain one finishes the last job.
  auto hooks = this->open({.owe_hook = true}), plain = this->open();
  const int64_t with_hook = hooks->register_worker(worker_info("hooks"));
  const int64_t w = plain->register_worker(worker_info("plain"));
  const auto first = plain->submit({"first", "{}", "/o"}, {job("a", 1)});
  const auto a = plain->claim(w);
  ASSERT_TRUE(plain->complete(a->id, w, a->output_path, "{}"));
  auto ends = plain->run_ends(first.run_id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(std::tuple(ends[0].hook_state, ends[0].webhook_state), std::tuple("owed", "")) << "no daemon sends webhooks";
  const auto claimed = hooks->claim_run_hook(with_hook, 77);
  ASSERT_TRUE(claimed);
  EXPECT_EQ(claimed->id, ends[0].id);
  // Once the hook daemon is gone, an end the plain one records owes nothing.
  hooks->unregister_worker(with_hook);
  const auto second = plain->submit({"second", "{}", "/o"}, {job("b", 1)});
  const auto b = plain->claim(w);
  ASSERT_TRUE(plain->complete(b->id, w, b->output_path, "{}"));
  ends = plain->run_ends(second.run_id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(std::tuple(ends[0].hook_state, ends[0].webhook_state), std::tuple("", ""));
}

TYPED_TEST(QueueStoreRunEndTest, RecoveryRecordsTheEndOfARunLeftOpenWithNothingToRun) {
  auto s = this->open({.owe_webhook = true});
  const int64_t w = s->register_worker(worker_info("h"));
  const auto missed = s->submit({"missed", "{}", "/o"}, {job("a", 1)});
  const auto busy = s->submit({"busy", "{}", "/o"}, {job("b", 1)});
  const auto a = s->claim(w);
  ASSERT_TRUE(s->complete(a->id, w, a->output_path, "{}"));
  // As if the end had been lost (a crash between the stores' writes, an older rgbaq): open, no end.
  this->backend().exec("DELETE FROM run_ends; UPDATE runs SET ended = FALSE WHERE id = " + std::to_string(missed.run_id));
  ASSERT_NE(s->integrity_check(), "ok");
  s->recover();
  const auto ends = s->run_ends(missed.run_id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(std::tuple(ends[0].done, ends[0].webhook_state), std::tuple(1, "owed"));
  EXPECT_TRUE(s->run_ends(busy.run_id).empty()) << "its job is still queued";
  s->recover();
  EXPECT_EQ(s->run_ends(missed.run_id).size(), 1u) << "recorded once";
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, RecoveryCancelsAnExpiredJobWhoseCancelWasRequestedAndEndsItsRun) {
  auto s = this->open({.lease_seconds = 0.3});
  const int64_t w = s->register_worker(worker_info("h"));
  const auto run = s->submit({"r", "{}", "/o"}, {job("a", 1), job("b", 1)});
  const auto a = s->claim(w), b = s->claim(w);
  ASSERT_TRUE(a && b);
  const auto other = s->submit({"other", "{}", "/o"}, {job("c", 1)});
  EXPECT_EQ(s->cancel_run(run.run_id).stopping, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the daemon died: both leases run out
  ASSERT_TRUE(s->heartbeat(w, {}));
  const auto r = s->recover();
  EXPECT_EQ(std::tuple(r.canceled, r.requeued, r.failed), std::tuple(2, 0, 0));
  EXPECT_EQ(s->job(a->id)->state, JobState::kCanceled);
  EXPECT_EQ(s->job(b->id)->state, JobState::kCanceled);
  EXPECT_EQ(s->job(a->id)->attempts, 1) << "no death or interruption counted";
  EXPECT_EQ(s->job(a->id)->deaths_in_row, 0);
  const auto ends = s->run_ends(run.run_id);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(std::tuple(ends[0].done, ends[0].canceled), std::tuple(0, 2));
  EXPECT_TRUE(s->run_ends(other.run_id).empty());
  EXPECT_EQ(s->list_jobs(other.run_id, JobState::kQueued).size(), 1u);
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreRunEndTest, ARunIsForgottenOnlyOnceItsEndsOweNothingAndItsEndsGoWithIt) {
  auto s = this->open(kOwing);
  const int64_t w = s->register_worker(worker_info("h"));
  const auto gone = s->submit({"gone", "{}", "/o"}, {job("a", 1)});
  const auto kept = s->submit({"kept", "{}", "/o"}, {job("b", 1)});
  for (int i = 0; i < 2; ++i) {
    const auto j = s->claim(w);
    ASSERT_TRUE(s->complete(j->id, w, j->output_path, "{}"));
  }
  // Owed, then running (the hook), then sending (the webhook): each keeps the run.
  auto refused = [&] {
    const auto f = s->forget_run(gone.run_id);
    return f.found && f.active == 0 && f.owed_hooks == 1 && f.jobs == 0 && s->run(gone.run_id).has_value() &&
           s->run_ends(gone.run_id).size() == 1;
  };
  EXPECT_TRUE(refused()) << "hook and webhook owed";
  const auto hook = s->claim_run_hook(w, 1);
  ASSERT_TRUE(hook);
  ASSERT_EQ(hook->run_id, gone.run_id);
  ASSERT_TRUE(s->finish_run_hook(hook->id, "exit 0"));
  EXPECT_TRUE(refused()) << "the webhook still owed";
  const auto hook2 = s->claim_run_hook(w, 2);  // the kept run's
  ASSERT_TRUE(hook2 && hook2->run_id == kept.run_id);
  const auto webhook = s->claim_webhook(w, wall_clock());
  ASSERT_TRUE(webhook);
  ASSERT_EQ(webhook->run_id, gone.run_id);
  EXPECT_TRUE(refused()) << "the webhook being sent";
  ASSERT_TRUE(s->record_webhook_attempt(*webhook, "HTTP 200", true, std::nullopt));
  const auto f = s->forget_run(gone.run_id);
  EXPECT_TRUE(f.found);
  EXPECT_EQ(std::tuple(f.active, f.owed_hooks, f.jobs), std::tuple(0, 0, 1));
  EXPECT_TRUE(s->run_ends(gone.run_id).empty());
  EXPECT_FALSE(s->run(gone.run_id));
  EXPECT_EQ(s->run_ends(kept.run_id).size(), 1u);
  EXPECT_EQ(s->forget_run(kept.run_id).owed_hooks, 1) << "its hook running, its webhook owed";
  EXPECT_EQ(s->integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
