// The queue store: every state transition, ordering and preference, resubmission, pause, recovery;
// a crash test that SIGKILLs a real process 60 times; and several processes submitting and claiming.
#include "storage/queue_store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

NewJob job(const std::string& prompt, uint64_t seed, int priority = 0) {
  NewJob j;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.priority = priority;
  j.output_path = "/out/" + prompt + "_" + std::to_string(seed) + ".png";
  j.content_key = std::hash<std::string>{}(prompt + "|" + std::to_string(seed));
  j.prompt_key = std::hash<std::string>{}(prompt);
  return j;
}

int64_t count(QueueStore& s, JobState st, std::optional<int64_t> run = std::nullopt) { return s.counts(run)[static_cast<int>(st)]; }

TEST(QueueStore, SubmitClaimCompleteAndCounters) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db", {.max_attempts = 3, .backoff_seconds = 0});
  EXPECT_EQ(s.schema_version(), QueueStore::kSchemaVersion);
  const auto r = s.submit({"first", "{\"size\": 256}", "/out"}, {job("a", 1), job("b", ~0ull), job("c", 3)});
  EXPECT_EQ(r.inserted, 3u);
  auto j = s.claim("w1");
  ASSERT_TRUE(j);
  EXPECT_EQ(j->prompt, "a");
  EXPECT_EQ(j->state, JobState::kRunning);
  EXPECT_EQ(j->attempts, 1);
  EXPECT_EQ(j->worker, "w1");
  EXPECT_TRUE(s.complete(j->id, "/out/a.png", "{\"k\": 1}"));
  EXPECT_FALSE(s.complete(j->id, "/out/a.png", "{}")) << "done is final";
  const auto b = s.claim("w1");
  EXPECT_EQ(b->seed, ~0ull) << "uint64 seeds survive SQLite's int64";
  const auto done = s.job(j->id);
  EXPECT_EQ(done->state, JobState::kDone);
  EXPECT_EQ(done->metadata_json, "{\"k\": 1}");
  EXPECT_EQ(count(s, JobState::kDone, r.run_id), 1);
  EXPECT_EQ(count(s, JobState::kRunning, r.run_id), 1);
  EXPECT_EQ(count(s, JobState::kQueued, r.run_id), 1);
  const auto runs = s.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].name, "first");
  EXPECT_EQ(runs[0].total(), 3);
  EXPECT_EQ(s.list_jobs(r.run_id, JobState::kQueued).size(), 1u);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStore, PriorityThenSubmitOrderThenCachedPrompt) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db");
  s.submit({"r1", "{}", "/o"}, {job("low", 1, 0), job("high", 2, 5), job("high2", 3, 5)});
  s.submit({"r2", "{}", "/o"}, {job("cached", 4, 5), job("cached", 5, 0)});
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 4u) << "a cached prompt goes first within the top priority";
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 2u) << "but never ahead of a higher priority";
  EXPECT_EQ(s.claim("w")->seed, 3u);
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 5u) << "among equals, the cached prompt first";
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("cached")})->seed, 1u);
  EXPECT_FALSE(s.claim("w"));
}

TEST(QueueStore, FailRetriesWithBackoffThenFails) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db", {.max_attempts = 2, .backoff_seconds = 0.2});
  const auto r = s.submit({"r", "{}", "/o"}, {job("a", 1)});
  const auto j = s.claim("w");
  EXPECT_EQ(s.fail(j->id, "disk full"), JobState::kQueued);
  EXPECT_FALSE(s.claim("w")) << "backing off";
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const auto again = s.claim("w");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->attempts, 2);
  EXPECT_EQ(s.fail(again->id, "disk still full"), JobState::kFailed);
  const auto failed = s.job(j->id);
  EXPECT_EQ(failed->error, "disk still full");
  const auto history = nlohmann::json::parse(failed->errors_json);
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0]["reason"], "disk full");
  EXPECT_EQ(history[1]["attempt"], 2);
  EXPECT_EQ(s.retry(r.run_id), 1);
  const auto retried = s.claim("w");
  EXPECT_EQ(retried->attempts, 1);
  EXPECT_EQ(nlohmann::json::parse(retried->errors_json).size(), 2u) << "the history is kept";
}

TEST(QueueStore, CancelPauseRequeuePrioritize) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db");
  const auto r1 = s.submit({"r1", "{}", "/o"}, {job("a", 1), job("a", 2), job("a", 3)});
  const auto r2 = s.submit({"r2", "{}", "/o"}, {job("b", 1)});
  const auto running = s.claim("w");
  EXPECT_EQ(s.cancel_run(r1.run_id), 3);
  EXPECT_EQ(count(s, JobState::kCanceled, r1.run_id), 2);
  EXPECT_TRUE(s.cancel_requested(running->id));
  EXPECT_TRUE(s.finish_canceled(running->id));
  EXPECT_EQ(s.job(running->id)->state, JobState::kCanceled);
  s.set_paused(true);
  EXPECT_TRUE(s.paused());
  EXPECT_FALSE(s.claim("w"));
  s.set_paused(false);
  const auto b = s.claim("w");
  EXPECT_EQ(b->run_id, r2.run_id);
  EXPECT_TRUE(s.requeue(b->id));
  EXPECT_EQ(s.job(b->id)->attempts, 0) << "a clean shutdown does not spend an attempt";
  const auto r3 = s.submit({"r3", "{}", "/o"}, {job("c", 1)});
  EXPECT_EQ(s.prioritize_run(r3.run_id, 10), 1);
  EXPECT_EQ(s.claim("w")->run_id, r3.run_id);
  EXPECT_TRUE(s.cancel_job(b->id));
  EXPECT_EQ(s.retry(r2.run_id, true), 1);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStore, RecoverRequeuesOrFailsInterruptedJobs) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db", {.max_attempts = 2});
  s.submit({"r", "{}", "/o"}, {job("a", 1), job("b", 2)});
  auto a = s.claim("w");
  EXPECT_EQ(s.recover().requeued, 1);
  a = s.claim("w");  // the same job, second attempt
  EXPECT_EQ(a->attempts, 2);
  const auto res = s.recover();
  EXPECT_EQ(res.failed, 1);
  EXPECT_EQ(s.job(a->id)->error, "interrupted 2 times");
  EXPECT_EQ(s.job(a->id)->state, JobState::kFailed);
}

TEST(QueueStore, ResubmissionIsDetectedAndSkippedOnRequest) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db");
  s.submit({"r", "{}", "/o"}, {job("a", 1), job("a", 2)});
  const auto again = s.submit({"r", "{}", "/o", true}, {job("a", 1), job("a", 2), job("a", 3)});
  EXPECT_EQ(again.inserted, 1u);
  EXPECT_EQ(again.skipped, 2u);
  const auto forced = s.submit({"r", "{}", "/o", false}, {job("a", 1)});
  EXPECT_EQ(forced.inserted, 1u);
}

TEST(QueueStore, NewerSchemaIsRefused) {
  TempDir dir;
  { QueueStore s(dir.path() / "q.db"); }
  {
    SQLite::Database db((dir.path() / "q.db").string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE schema_version SET version = 99");
  }
  try {
    QueueStore s(dir.path() / "q.db");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("schema version 99; this rgbaq knows versions up to 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(QueueStore(dir.path() / "no" / "dir" / "q.db"), std::runtime_error);
}

// ---- real processes ----

const std::string kWorker = QUEUE_WORKER_PATH;

struct Child {
  pid_t pid = -1;
  int out = -1;
};

Child spawn(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

TEST(QueueStoreProcesses, SigkillAtRandomMomentsLosesNothingAndNeverCompletesTwice) {
  TempDir dir;
  const auto db = (dir.path() / "q.db").string();
  std::mt19937 rng(20261130);
  std::map<int64_t, int64_t> acknowledged_runs;  // run -> jobs
  std::set<int64_t> acknowledged_done;
  std::map<int64_t, double> finished_at;  // every done job seen, with its completion time
  int kills = 0;
  for (int round = 0; round < 60; ++round) {
    Child c = spawn({kWorker, "crash", db, std::to_string(rng())});
    std::this_thread::sleep_for(std::chrono::microseconds(2000 + rng() % 40000));
    kill(c.pid, SIGKILL);
    int status = 0;
    waitpid(c.pid, &status, 0);
    kills += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    std::istringstream lines(read_all(c.out));
    std::string kind;
    int64_t a = 0, b = 0;
    while (lines >> kind) {
      if (kind == "S" && lines >> a >> b) acknowledged_runs[a] = b;
      if (kind == "C" && lines >> a) acknowledged_done.insert(a);
    }
    QueueStore s(db);
    ASSERT_EQ(s.integrity_check(), "ok") << "round " << round;
    s.recover();
    for (const auto& [run, jobs] : acknowledged_runs) {
      const auto r = s.run(run);
      ASSERT_TRUE(r) << "acknowledged run " << run << " lost";
      ASSERT_EQ(r->total(), jobs) << "run " << run;
      ASSERT_EQ(static_cast<int64_t>(s.list_jobs(run, std::nullopt).size()), jobs);
    }
    for (int64_t id : acknowledged_done) ASSERT_EQ(s.job(id)->state, JobState::kDone) << "job " << id;
    for (const auto& j : s.list_jobs(std::nullopt, JobState::kDone, 1000000)) {
      const auto [it, fresh] = finished_at.emplace(j.id, j.finished_at);
      ASSERT_EQ(it->second, j.finished_at) << "job " << j.id << " was completed a second time";
    }
    for (const auto& [id, t] : finished_at) ASSERT_EQ(s.job(id)->state, JobState::kDone) << "done job " << id << " changed";
    ASSERT_EQ(s.counts()[static_cast<int>(JobState::kRunning)], 0);
  }
  EXPECT_GE(kills, 50);
  EXPECT_GT(acknowledged_runs.size(), 60u);
  EXPECT_GT(acknowledged_done.size(), 60u);
  std::cout << "kills " << kills << ", runs " << acknowledged_runs.size() << ", completions " << acknowledged_done.size() << "\n";
}

TEST(QueueStoreProcesses, ConcurrentSubmittersAndClaimersClaimEveryJobExactlyOnce) {
  TempDir dir;
  const auto db = (dir.path() / "q.db").string(), stop = (dir.path() / "stop").string();
  { QueueStore init(db); }
  std::vector<Child> submitters, claimers;
  for (int i = 0; i < 3; ++i) submitters.push_back(spawn({kWorker, "submit", db, "20", "25"}));
  for (int i = 0; i < 2; ++i) claimers.push_back(spawn({kWorker, "claim", db, stop}));
  int64_t submitted = 0;
  for (auto& c : submitters) {
    std::istringstream lines(read_all(c.out));
    std::string kind;
    int64_t run = 0, n = 0;
    while (lines >> kind >> run >> n) submitted += n;
    int status = 0;
    waitpid(c.pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::ofstream(stop) << "stop";
  std::multiset<int64_t> claimed;
  for (auto& c : claimers) {
    std::istringstream lines(read_all(c.out));
    std::string kind;
    int64_t id = 0;
    while (lines >> kind >> id) claimed.insert(id);
    int status = 0;
    waitpid(c.pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(submitted, 3 * 20 * 25);
  EXPECT_EQ(static_cast<int64_t>(claimed.size()), submitted);
  EXPECT_EQ(std::set<int64_t>(claimed.begin(), claimed.end()).size(), claimed.size()) << "a job was claimed twice";
  QueueStore s(db);
  EXPECT_EQ(s.counts()[static_cast<int>(JobState::kDone)], submitted);
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
