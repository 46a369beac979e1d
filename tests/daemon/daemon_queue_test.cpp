// rgbaqd's queue and files against careless and hostile use, as real processes on the tiny model: one
// daemon per data directory, a queue file that is not a queue, a data directory deleted under the
// daemon, output paths two jobs would share, numbers and sizes the daemon must refuse itself, a job
// that crashes the daemon every time, one the kernel kills at the same step every time and one it kills
// at steps that move, each next to healthy ones.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <fstream>
#include <functional>

#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

// One request on a raw connection, as a client that skips the CLI's own checks would send it.
json call_raw(const DaemonProcess& d, const std::string& method, const json& params) {
  sockaddr_un addr = unix_address(d.socket());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string frame = json({{"v", 1}, {"id", 1}, {"method", method}, {"params", params}}).dump() + "\n";
  EXPECT_EQ(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL), static_cast<ssize_t>(frame.size()));
  std::string reply;
  char c = 0;
  while (::recv(fd, &c, 1, 0) == 1 && c != '\n') reply += c;
  close(fd);
  return json::parse(reply);
}

TEST(DaemonQueue, ASecondDaemonOnTheSameDataDirectoryIsRefusedNamingTheHolder) {
  TempDir a, b;
  DaemonProcess first(kRgbaqd, model().dir(), a.path(), {});
  // Its own socket, the first one's data directory.
  DaemonProcess second(kRgbaqd, model().dir(), b.path(),
                       {.extra_args = {"--data-dir", first.data_dir().string()}, .wait_until_ready = false});
  EXPECT_EQ(second.wait_exit(), 1);
  const std::string log = read_text(second.log());
  EXPECT_NE(log.find("another rgbaqd (pid " + std::to_string(first.pid()) + ") is using the data directory"),
            std::string::npos) << log;
  EXPECT_TRUE(first.connectable());
  EXPECT_FALSE(fs::exists(second.socket())) << "the refused daemon removed its socket";
}

TEST(DaemonQueue, AnEmptyQueueFileIsRefusedUnlessAskedToCreateOne) {
  TempDir dir;
  fs::create_directories(dir.path() / "data");
  std::ofstream(dir.path() / "data" / "queue.db").close();
  DaemonProcess refused(kRgbaqd, model().dir(), dir.path(), {.wait_until_ready = false});
  EXPECT_EQ(refused.wait_exit(), 1);
  const std::string log = read_text(refused.log());
  EXPECT_NE(log.find((dir.path() / "data" / "queue.db").string() + ": exists but is not an rgbaq queue"), std::string::npos) << log;
  EXPECT_EQ(fs::file_size(dir.path() / "data" / "queue.db"), 0u);
  DaemonProcess created(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--create-queue"}});
  EXPECT_EQ(status(created)["jobs"]["queued"], 0);
}

TEST(DaemonQueue, ADeletedDataDirectoryRefusesSubmitsInsteadOfAcknowledgingThem) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  // One job through first: the worker and writer hold their stores before the directory goes.
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string(), "--wait"}, "prompt\nowl\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  fs::remove_all(d.data_dir());
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string()}, "prompt\nfox\n");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.err.find("queue.db: the queue database was deleted"), std::string::npos) << r.err << read_text(d.log());
  EXPECT_EQ(r.out.find("queued"), std::string::npos) << r.out;
}

TEST(DaemonQueue, AnOutputPathAnotherImageOwnsIsRefusedAtSubmit) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const std::string out = (dir.path() / "o").string();
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out}, "prompt,seed,name\nfox,1,hero\n").exit_code, 0);
  // The same image again shares its path (a resubmission); another image for it is refused.
  EXPECT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out}, "prompt,seed,name\nfox,1,hero\n").exit_code, 0);
  const auto clash = rgbaq(d, {"submit", "-", "--size", "128", "--out", out}, "prompt,seed,name\nowl,2,owl\ncat,1,hero\n");
  EXPECT_EQ(clash.exit_code, 2);
  EXPECT_NE(clash.err.find("<stdin>:3: output " + out + "/hero_1.png already belongs to another image (run 1)"),
            std::string::npos) << clash.err;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 2u) << "nothing of it was queued";
}

TEST(DaemonQueue, TheDaemonChecksNumbersSizesAndPromptsItself) {
  TempDir dir;
  // Request lines up to 64 MiB, so the 40-million-byte prompt below reaches the prompt check (the
  // default 16 MiB frame limit would refuse its line first).
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--max-frame-mb", "64"}});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const json base = {{"file", "prompt\nfox\n"}, {"out_dir", (dir.path() / "o").string()}};
  for (const json& priority : {json(1099511627777LL), json(-2147483649LL), json(1.5)}) {
    json p = base;
    p["defaults"] = {{"priority", priority}};
    const json r = call_raw(d, "submit", p);
    ASSERT_FALSE(r["ok"].get<bool>()) << r.dump();
    EXPECT_EQ(r["error"]["code"], "bad_request") << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find("defaults.priority\" must be an integer in -1000000..1000000"),
              std::string::npos) << r.dump();
  }
  json sized = base;
  sized["file"] = "prompt,size\nfox,65536x16\n";
  const json s = call_raw(d, "submit", sized);
  ASSERT_FALSE(s["ok"].get<bool>());
  EXPECT_NE(s["error"]["details"][0]["text"].get<std::string>().find(":2:"), std::string::npos) << s.dump();
  EXPECT_NE(s.dump().find("RoPE position -2048"), std::string::npos) << s.dump();
  json huge = base;
  huge["file"] = "prompt\n" + std::string(40'000'000, 'a') + "\n";
  const json h = call_raw(d, "submit", huge);
  EXPECT_NE(h.dump().find("40000000 bytes"), std::string::npos) << h.dump().substr(0, 400);
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 0u);
}

// The daemon on `dir`, started again each time it dies as a service manager would, until its queue
// holds nothing queued or running; the first start submits `file` (a CSV); start k (from 0) runs with
// `opts(k)`. Returns how many times it died; each death must be `signal`'s.
int restarts_until_done(const TempDir& dir, const std::function<DaemonProcess::Options(int)>& opts, const std::string& file,
                        int signal) {
  bool submitted = false;
  int deaths = 0;
  for (int start = 0; start < 12; ++start) {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), opts(start));
    if (!submitted) {
      const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string()}, file);
      EXPECT_EQ(r.exit_code, 0) << r.err;
      submitted = true;
    }
    int code = -1;
    bool finished = false;
    for (int i = 0; i < 120 && code == -1 && !finished; ++i) {
      code = d.wait_exit(std::chrono::seconds(1));
      if (code == -1) {
        const auto r = rgbaq(d, {"status", "--json"});
        if (r.exit_code == 0) {
          const json s = json::parse(r.out);
          finished = s["jobs"]["queued"] == 0 && s["jobs"]["running"] == 0;
        }
      }
    }
    if (finished) return deaths;
    EXPECT_EQ(code, 128 + signal) << log_tail(d);
    if (code != 128 + signal) return -1;
    ++deaths;
  }
  return deaths;
}

int restarts_until_done(const TempDir& dir, const DaemonProcess::Options& opts, const std::string& file, int signal) {
  return restarts_until_done(dir, [&](int) { return opts; }, file, signal);
}

// Once the restarts are over: run 1 finished with its four healthy jobs done and one failed, that one.
json the_failed_job(const TempDir& dir, const DaemonProcess::Options& opts) {
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), opts);
  rgbaq(d, {"watch", "1"});
  const json s = status(d);
  EXPECT_EQ(s["jobs"]["done"], 4) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 1) << s.dump();
  const auto failed = json::parse(rgbaq(d, {"ls", "jobs", "--state", "failed", "--json"}).out)["jobs"];
  EXPECT_EQ(failed.size(), 1u);
  return failed.empty() ? json::object() : failed[0];
}

TEST(DaemonQueue, AJobThatCrashesTheDaemonFailsAfterItsAttemptsAndHealthyJobsAreDone) {
  TempDir dir;
  const DaemonProcess::Options opts{.env = {{"RGBAQ_TEST_ABORT_ON_PROMPT", "poison"}}};
  ASSERT_EQ(restarts_until_done(dir, opts, "prompt,seed\nfox,1-2\npoison,1\nowl,1-2\n", SIGABRT), 3)
      << "three crashes, then the job fails";
  const json failed = the_failed_job(dir, opts);
  EXPECT_EQ(failed["prompt"], "poison");
  EXPECT_EQ(failed["error"], "crashed the daemon 3 times");
}

// The kernel killing the daemon at step 3 of one job on every try (what the OOM killer does to a job
// whose size exhausts memory), the daemon restarted each time: the first two kills are interruptions
// like any SIGKILL, from the third in a row at that step each counts as a crash; the job fails at the
// attempt limit saying where it died, and the other jobs are done.
TEST(DaemonQueue, AJobKilledAtTheSameStepEveryTryFailsSayingWhereAndTheOthersAreDone) {
  TempDir dir;
  const DaemonProcess::Options opts{.env = {{"RGBAQ_TEST_SIGKILL_AT_STEP", "3:too big"}}};
  ASSERT_EQ(restarts_until_done(dir, opts, "prompt,seed\nfox,1-2\ntoo big,1\nowl,1-2\n", SIGKILL), 5)
      << "two interruptions, then three tries that count";
  const json failed = the_failed_job(dir, opts);
  EXPECT_EQ(failed["prompt"], "too big");
  EXPECT_EQ(failed["error"], "the daemon died at step 3 on each of its last tries (out of memory?)");
  EXPECT_EQ(failed["attempts"], 3);
}

// The daemon SIGKILLed whenever one job reaches step 3 or a little later (an OOM killer, a watchdog:
// step 3 on some tries, 8 or 5 on others), restarted each time: never three kills in a row at one step,
// yet five deaths in a row with that job in hand and no other job finishing in between fail it, naming
// the steps; the other jobs are done.
TEST(DaemonQueue, AJobTheDaemonDiesWithAtMovingStepsFailsAfterFiveDeathsNamingThem) {
  TempDir dir;
  // After the first start (the submit), each dies soon after it starts, maybe before a readiness check.
  const auto killed_at = [](int start) {
    const int steps[] = {3, 8, 3, 5, 4};
    return DaemonProcess::Options{.env = {{"RGBAQ_TEST_SIGKILL_AT_STEP", std::to_string(steps[start % 5]) + ":too big"}},
                                  .wait_until_ready = start == 0};
  };
  // It comes first: a job before it could still be in the writer's hands at its first death and finish
  // after it, which rightly starts a new row.
  ASSERT_EQ(restarts_until_done(dir, killed_at, "prompt,seed\ntoo big,1\nfox,1-2\nowl,1-2\n", SIGKILL), 5)
      << "five deaths in a row with the job in hand, then it fails";
  const json failed = the_failed_job(dir, {});
  EXPECT_EQ(failed["prompt"], "too big");
  EXPECT_EQ(failed["error"],
            "the daemon died 5 times with this job in hand, no other job finishing in between (at steps 3, 8, 3, 5, 4)");
}

}  // namespace
}  // namespace rgbaq
