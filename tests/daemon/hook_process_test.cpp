// The hook's process (daemon/hooks/hook_process.h) as the shell runs it, and the webhook's body and
// retry times (daemon/hooks/webhook_sender.h) against values worked out by hand.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/hooks/hook_process.h"
#include "daemon/hooks/webhook_sender.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using daemon::hooks::HookProcess;
using daemon::hooks::hook_environment;
namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Ran {
  std::optional<std::string> outcome;
  std::vector<std::string> lines;
};

Ran run(const std::string& command, const fs::path& output, std::vector<std::pair<std::string, std::string>> vars = {},
        std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  HookProcess p(command, hook_environment(vars), output);
  Ran r;
  r.outcome = p.wait(limit, [&](const std::string& line) { r.lines.push_back(line); }, [] { return false; });
  return r;
}

bool alive(pid_t pid) {
  // Not there, or a zombie (killed, not yet reaped by whoever adopted it).
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return false;
  const auto close_paren = stat.rfind(')');
  return !(close_paren != std::string::npos && close_paren + 2 < stat.size() && stat[close_paren + 2] == 'Z');
}

TEST(HookProcess, TheEnvironmentHoldsTextLiterallyAndTheShellRunsNothingOfIt) {
  TempDir dir;
  const std::string hostile = "$(touch pwned) `touch pwned2` \"q\" 'x' ; touch pwned3 \\ $HOME";
  const auto r = run("cd '" + dir.path().string() + "' && printf '%s' \"$RGBAQ_RUN_NAME\" > name.txt", dir.path() / "out",
                     {{"RGBAQ_RUN_NAME", hostile}});
  EXPECT_EQ(r.outcome, "exit 0");
  EXPECT_EQ(read_text(dir.path() / "name.txt"), hostile);
  for (const char* f : {"pwned", "pwned2", "pwned3"}) EXPECT_FALSE(fs::exists(dir.path() / f)) << f;
}

TEST(HookProcess, TheDaemonsOwnVariablesArePassedAndOnesGivenWin) {
  TempDir dir;
  setenv("RGBAQ_HOOK_TEST_INHERITED", "kept", 1);
  setenv("RGBAQ_RUN", "stale", 1);
  const auto r = run("echo \"$RGBAQ_HOOK_TEST_INHERITED $RGBAQ_RUN\"", dir.path() / "out", {{"RGBAQ_RUN", "12"}});
  unsetenv("RGBAQ_HOOK_TEST_INHERITED");
  unsetenv("RGBAQ_RUN");
  EXPECT_EQ(r.lines, std::vector<std::string>({"kept 12"}));
}

TEST(HookProcess, OutputComesLineByLineStdoutAndStderrBothLongLinesInPieces) {
  TempDir dir;
  const auto r = run("echo one; echo two >&2; echo; head -c 10000 /dev/zero | tr '\\0' x; echo; printf 'no end'", dir.path() / "out");
  EXPECT_EQ(r.outcome, "exit 0");
  ASSERT_EQ(r.lines.size(), 7u);
  EXPECT_EQ(r.lines[0], "one");
  EXPECT_EQ(r.lines[1], "two");
  EXPECT_EQ(r.lines[2], "");
  EXPECT_EQ(r.lines[3], std::string(4096, 'x'));
  EXPECT_EQ(r.lines[4], std::string(4096, 'x'));
  EXPECT_EQ(r.lines[5], std::string(10000 - 2 * 4096, 'x'));
  EXPECT_EQ(r.lines[6], "no end");
  EXPECT_EQ(read_text(dir.path() / "out").size(), 4 + 4 + 1 + 10000 + 1 + 6u);
}

TEST(HookProcess, ItsExitStatusOrSignalIsTheOutcome) {
  TempDir dir;
  EXPECT_EQ(run("exit 7", dir.path() / "out").outcome, "exit 7");
  EXPECT_EQ(run("kill -TERM $$", dir.path() / "out").outcome, "signal 15");
  EXPECT_EQ(run("exec /nonexistent/hook", dir.path() / "out").outcome, "exit 127");
}

TEST(HookProcess, AtItsLimitTheWholeProcessGroupIsKilled) {
  TempDir dir;
  const auto pid_file = dir.path() / "bg.pid";
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run("sleep 60 & echo $! > '" + pid_file.string() + "'; wait", dir.path() / "out", {}, std::chrono::milliseconds(1500));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.outcome, "killed at the 1.5 s limit");
  EXPECT_GE(took, 1.5);
  EXPECT_LT(took, 10.0);
  const pid_t background = std::stoi(read_text(pid_file));
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = !alive(background);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "the hook's background child " << background << " outlived the limit";
}

TEST(HookProcess, ItRunsInASessionOfItsOwnWithNoDescriptorOfTheDaemon) {
  TempDir dir;
  const int leaked = ::open("/dev/null", O_RDONLY);  // not close-on-exec, as a library's descriptor may be
  ASSERT_GE(leaked, 3);
  const auto pid_file = dir.path() / "pid";
  HookProcess p("echo $$ > '" + pid_file.string() + "'; if [ -e /proc/self/fd/" + std::to_string(leaked) +
                    " ]; then echo leaked; else echo clean; fi; sleep 0.3",
                hook_environment({}), dir.path() / "out");
  pid_t pid = 0;
  for (int i = 0; i < 200 && read_text(pid_file).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  pid = std::stoi(read_text(pid_file));
  EXPECT_EQ(pid, p.pid());
  EXPECT_EQ(::getsid(pid), pid) << "the hook leads a session of its own";
  EXPECT_NE(::getsid(pid), ::getsid(0));
  std::vector<std::string> lines;
  EXPECT_EQ(p.wait(std::chrono::seconds(20), [&](const std::string& l) { lines.push_back(l); }, [] { return false; }), "exit 0");
  EXPECT_EQ(lines, std::vector<std::string>({"clean"}));
  ::close(leaked);
}

TEST(HookProcess, ADaemonThatStopsLeavesItRunning) {
  TempDir dir;
  const auto done = dir.path() / "done";
  std::optional<std::string> outcome = "not waited";
  {
    HookProcess p("sleep 0.5; echo finished > '" + done.string() + "'", hook_environment({}), dir.path() / "out");
    outcome = p.wait(std::chrono::seconds(20), [](const std::string&) {}, [] { return true; });
  }
  EXPECT_EQ(outcome, std::nullopt);
  for (int i = 0; i < 500 && read_text(done).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(read_text(done), "finished\n");
}

// The body: compact JSON, keys in order (nlohmann's), as written out here by hand.
TEST(WebhookBody, IsTheRunsSummaryAndNullsForARunForgotten) {
  storage::RunEnd end;
  end.id = 7;
  end.run_id = 3;
  end.ended_at = 12.25;
  end.done = 2;
  end.failed = 1;
  end.canceled = 0;
  storage::Run run;
  run.id = 3;
  run.name = "icons \"v2\"";
  run.out_dir = "/o";
  run.created_at = 5.5;
  EXPECT_EQ(daemon::hooks::webhook_body(end, run),
            R"({"canceled":0,"created_at":5.5,"done":2,"end":7,"ended_at":12.25,"event":"run_end","failed":1,"name":"icons \"v2\"","out_dir":"/o","run":3})");
  EXPECT_EQ(daemon::hooks::webhook_body(end, std::nullopt),
            R"({"canceled":0,"created_at":null,"done":2,"end":7,"ended_at":12.25,"event":"run_end","failed":1,"name":null,"out_dir":null,"run":3})");
}

// 10 s, 20 s, 40 s, ... at most 600 s; none past an hour after the end.
TEST(WebhookRetry, DoublesFromTheFirstWaitUpToTenMinutesAndStopsAnHourAfterTheEnd) {
  using daemon::hooks::webhook_retry_at;
  EXPECT_EQ(webhook_retry_at(1000, 1, 1000, 10), 1010);
  EXPECT_EQ(webhook_retry_at(1000, 2, 1011, 10), 1031);
  EXPECT_EQ(webhook_retry_at(1000, 3, 1031, 10), 1071);
  EXPECT_EQ(webhook_retry_at(1000, 7, 1500, 10), 2100);   // 640 s capped at 600
  EXPECT_EQ(webhook_retry_at(1000, 30, 2000, 10), 2600);  // no overflow far along
  EXPECT_EQ(webhook_retry_at(1000, 9, 4000, 10), 4600);   // exactly an hour after the end: still tried
  EXPECT_EQ(webhook_retry_at(1000, 9, 4001, 10), std::nullopt);
  EXPECT_EQ(webhook_retry_at(1000, 1, 4595, 10), std::nullopt);
  EXPECT_EQ(webhook_retry_at(1000, 2, 1000.5, 0.25), 1001);
}

}  // namespace
}  // namespace rgbaq
