// The queue store with real processes: a crash test that SIGKILLs a writer 60 times, and several
// processes submitting while others claim. Slow (CTest label "slow").
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

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
    // Kill at a random moment once the child is at work (its first acknowledgement), however slow
    // it is to start (under the sanitizers, much slower).
    std::string head;
    for (pollfd p{c.out, POLLIN, 0}; head.find('\n') == std::string::npos && poll(&p, 1, 5000) > 0;) {
      char buf[256];
      const ssize_t n = read(c.out, buf, sizeof buf);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 30000));
    kill(c.pid, SIGKILL);
    int status = 0;
    waitpid(c.pid, &status, 0);
    kills += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    std::istringstream lines(head + read_all(c.out));
    std::string kind;
    int64_t a = 0, b = 0;
    while (lines >> kind) {
      if (kind == "S" && lines >> a >> b) acknowledged_runs[a] = b;
      if (kind == "C" && lines >> a) acknowledged_done.insert(a);
    }
    SqliteQueueStore s(db);
    s.recover();  // the killed worker's leases (of 0 s) have run out
    ASSERT_EQ(s.integrity_check(), "ok") << "round " << round;
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
  EXPECT_GE(acknowledged_runs.size(), 60u);  // each round got to work before its kill
  EXPECT_GT(acknowledged_done.size(), 60u);
  std::cout << "kills " << kills << ", runs " << acknowledged_runs.size() << ", completions " << acknowledged_done.size() << "\n";
}

TEST(QueueStoreProcesses, ConcurrentSubmittersAndClaimersClaimEveryJobExactlyOnce) {
  TempDir dir;
  const auto db = (dir.path() / "q.db").string(), stop = (dir.path() / "stop").string();
  { SqliteQueueStore init(db); }
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
  SqliteQueueStore s(db);
  EXPECT_EQ(s.counts()[static_cast<int>(JobState::kDone)], submitted);
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
