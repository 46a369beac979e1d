// rgbaqd --on-run-done (issue 41) with real processes: a hook command that appends its environment to a
// file runs exactly once per run end across a SIGKILL of the daemon before the run ends, after it ended
// and before its hook ran (the fault seam RGBAQ_TEST_SIGKILL_AT_RUN_END), after its manifest was written
// and before its claim (RGBAQ_TEST_SIGKILL_BEFORE_HOOK_CLAIM), and while the hook runs (it
// finishes alone; the restart records it lost and never runs it again); job text reaches the hook only
// as environment values and the manifest, never the shell; a hook that hangs is killed at its limit
// while the daemon renders on; two daemons on one PostgreSQL queue run each end's hook once between
// them.
#include <sys/stat.h>

#include <map>
#include <set>

#include "storage/open_queue_store.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/http_client.h"
#include "tests/postgres_server.h"

namespace rgbaq {
namespace {

using Env = std::map<std::string, std::string>;

// The hook under test: appends the RGBAQ_ variables it was given, one NAME=value line each, then "----".
std::string record_command(const fs::path& log) {
  return "{ env | grep '^RGBAQ_' | LC_ALL=C sort; echo ----; } >> '" + log.string() + "'";
}

std::vector<Env> hook_records(const fs::path& log) {
  std::vector<Env> out(1);
  std::istringstream in(read_text(log));
  for (std::string line; std::getline(in, line);) {
    if (line == "----") {
      out.emplace_back();
      continue;
    }
    const auto eq = line.find('=');
    if (eq != std::string::npos) out.back()[line.substr(0, eq)] = line.substr(eq + 1);
  }
  out.pop_back();  // the one after the last "----" (empty unless a record was cut off)
  return out;
}

int64_t lines_in(const fs::path& file) {
  const std::string text = read_text(file);
  return std::count(text.begin(), text.end(), '\n');
}

// `rgbaq ls runs --json`'s run `id` ("end" holds its last end).
json listed_run(const DaemonProcess& d, int64_t id) {
  const auto r = rgbaq(d, {"ls", "runs", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json listing = json::parse(r.out);
  for (const auto& run : listing["runs"]) {
    if (run["id"] == id) return run;
  }
  return nullptr;
}

// The run's last end once its hook is in `state`.
json end_with_hook(const DaemonProcess& d, int64_t run, const std::string& state) {
  json end;
  const bool reached = eventually([&] {
    const json r = listed_run(d, run);
    end = r.is_object() ? r["end"] : json(nullptr);
    return end.is_object() && end["hook"].is_object() && end["hook"]["state"] == state;
  });
  EXPECT_TRUE(reached) << "run " << run << "'s hook never reached \"" << state << "\": " << end.dump() << "\n" << log_tail(d);
  return end;
}

ProcessResult submit(const DaemonProcess& d, const fs::path& out, const std::string& csv, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"submit", "-", "--size", "128", "--out", out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  return rgbaq(d, args, csv);
}

// What the queue says of a run's ends, read straight from the data directory's database.
std::vector<storage::RunEnd> queue_ends(const fs::path& data_dir, int64_t run) {
  return storage::open_queue_store((data_dir / "queue.db").string(), {})->run_ends(run);
}

TEST(DaemonRunHook, RunsOnceWithTheRunInItsEnvironmentItsOutputLoggedItsExitRecorded) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(),
                  {.extra_args = with_http({"--on-run-done", record_command(log) + "; echo \"said $RGBAQ_DONE of run $RGBAQ_RUN\"; exit 3"})});
  const auto out = dir.path() / "out";
  const auto r = submit(d, out, "prompt,seed\nfox,1-2\n", {"--name", "foxes", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json end = end_with_hook(d, 1, "done");
  EXPECT_EQ(end["hook"]["outcome"], "exit 3");
  EXPECT_EQ(end["done"], 2);
  const auto records = hook_records(log);
  ASSERT_EQ(records.size(), 1u) << read_text(log);
  const Env& env = records[0];
  EXPECT_EQ(env.at("RGBAQ_RUN"), "1");
  EXPECT_EQ(env.at("RGBAQ_RUN_NAME"), "foxes");
  EXPECT_EQ(env.at("RGBAQ_OUT"), listed_run(d, 1)["out_dir"]);
  EXPECT_EQ(fs::path(env.at("RGBAQ_OUT")), fs::absolute(out));
  EXPECT_EQ(env.at("RGBAQ_DONE"), "2");
  EXPECT_EQ(env.at("RGBAQ_FAILED"), "0");
  EXPECT_EQ(env.at("RGBAQ_CANCELED"), "0");
  EXPECT_EQ(env.at("RGBAQ_SOCKET"), d.socket().string());
  // The manifest is the run's JSONL export, byte for byte, private to the daemon's user.
  const fs::path manifest = env.at("RGBAQ_MANIFEST");
  EXPECT_EQ(manifest, d.data_dir() / "manifests" / "run-1.jsonl");
  const auto exported = rgbaq(d, {"export", "1", "--format", "jsonl"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(read_text(manifest), exported.out);
  EXPECT_EQ(std::count(exported.out.begin(), exported.out.end(), '\n'), 2);
  struct stat st {};
  ASSERT_EQ(stat(manifest.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Its output in the daemon's log, a line at a time under the run's name; its exit in ls runs and status.
  EXPECT_NE(read_text(d.log()).find("hook of run 1 | said 2 of run 1"), std::string::npos) << log_tail(d);
  const auto listing = rgbaq(d, {"ls", "runs"});
  EXPECT_NE(listing.out.find("hook: exit 3"), std::string::npos) << listing.out;
  const json s = status(d);
  EXPECT_EQ(s["run_ends"]["hook"], true);
  EXPECT_EQ(s["run_ends"]["webhook"], false);
  EXPECT_EQ(s["run_ends"]["last"]["run"], 1);
  EXPECT_EQ(s["run_ends"]["last"]["hook"]["outcome"], "exit 3");
  const auto http = http_request(http_port(d), "GET", "/api/v1/runs/1", {{"Authorization", "Bearer " + http_token(d)}});
  ASSERT_EQ(http.status, 200) << http.body;
  EXPECT_EQ(http.json_body()["end"]["hook"]["outcome"], "exit 3");
  EXPECT_EQ(http.json_body()["end"]["hook"]["state"], "done");
}

TEST(DaemonRunHook, KilledBeforeTheRunEndsTheHookRunsOnceAfterTheRestart) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  const std::vector<std::string> hook = {"--on-run-done", record_command(log)};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook, .env = {{"RGBAQ_TEST_SIGKILL_AT_STEP", "2:fox"}}});
    ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nowl,1\nfox,1\n").exit_code, 0);
    ASSERT_EQ(d.wait_exit(std::chrono::seconds(60)), 128 + SIGKILL) << log_tail(d);
  }
  EXPECT_TRUE(hook_records(log).empty());
  EXPECT_TRUE(queue_ends(dir.path() / "data", 1).empty()) << "the run had not ended";
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
  EXPECT_EQ(end_with_hook(d, 1, "done")["hook"]["outcome"], "exit 0");
  const auto records = hook_records(log);
  ASSERT_EQ(records.size(), 1u) << read_text(log);
  EXPECT_EQ(records[0].at("RGBAQ_RUN"), "1");
  EXPECT_EQ(records[0].at("RGBAQ_DONE"), "2");
}

TEST(DaemonRunHook, KilledAfterTheRunEndedBeforeItsHookRanItRunsOnceAfterTheRestartAndNeverAgain) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  const std::vector<std::string> hook = {"--on-run-done", record_command(log)};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook, .env = {{"RGBAQ_TEST_SIGKILL_AT_RUN_END", "1"}}});
    ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nowl,1-2\n").exit_code, 0);
    ASSERT_EQ(d.wait_exit(std::chrono::seconds(60)), 128 + SIGKILL) << log_tail(d);
  }
  EXPECT_TRUE(hook_records(log).empty());
  const auto ends = queue_ends(dir.path() / "data", 1);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].hook_state, "owed") << "the end was committed owing its hook, which nothing had claimed";
  EXPECT_EQ(ends[0].done, 2);
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
    EXPECT_EQ(end_with_hook(d, 1, "done")["hook"]["outcome"], "exit 0");
  }
  ASSERT_EQ(hook_records(log).size(), 1u) << read_text(log);
  // Another start: nothing is owed, nothing runs again (it claims at once, and again every 2 s).
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const auto records = hook_records(log);
  ASSERT_EQ(records.size(), 1u) << read_text(log);
  EXPECT_EQ(records[0].at("RGBAQ_DONE"), "2");
  EXPECT_EQ(listed_run(d, 1)["end"]["hook"]["state"], "done");
}

// The manifest is written and the PNGs awaited before the claim: a kill there leaves the hook owed, not lost.
TEST(DaemonRunHook, KilledAfterItsManifestWasWrittenBeforeItsClaimItRunsOnceAfterTheRestart) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  const std::vector<std::string> hook = {"--on-run-done", record_command(log)};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook, .env = {{"RGBAQ_TEST_SIGKILL_BEFORE_HOOK_CLAIM", "1"}}});
    ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nowl,1-2\n").exit_code, 0);
    ASSERT_EQ(d.wait_exit(std::chrono::seconds(60)), 128 + SIGKILL) << log_tail(d);
  }
  EXPECT_TRUE(hook_records(log).empty());
  EXPECT_EQ(lines_in(dir.path() / "data" / "manifests" / "run-1.jsonl"), 2) << "its manifest, one line a job, came before the kill";
  const auto ends = queue_ends(dir.path() / "data", 1);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].hook_state, "owed") << "killed before its claim: owed still, not lost";
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
  EXPECT_EQ(end_with_hook(d, 1, "done")["hook"]["outcome"], "exit 0");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // another poll claims nothing more
  const auto records = hook_records(log);
  ASSERT_EQ(records.size(), 1u) << read_text(log);
  EXPECT_EQ(records[0].at("RGBAQ_DONE"), "2");
  EXPECT_EQ(lines_in(records[0].at("RGBAQ_MANIFEST")), 2);
}

TEST(DaemonRunHook, KilledWhileItRunsItFinishesAloneAndTheRestartRecordsItLostNotRunAgain) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  const auto started = dir.path() / "started";
  const std::vector<std::string> hook = {"--on-run-done", "echo $$ >> '" + started.string() + "'; sleep 3; " + record_command(log)};
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
    ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nowl,1\n").exit_code, 0);
    ASSERT_TRUE(eventually([&] { return !read_text(started).empty(); })) << log_tail(d);
    d.signal(SIGKILL);
    ASSERT_EQ(d.wait_exit(), 128 + SIGKILL);
  }
  // Restarted while the hook still sleeps: it holds nothing of the daemon's (the data directory's lock).
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = hook});
  const json end = end_with_hook(d, 1, "lost");
  EXPECT_TRUE(end["hook"]["outcome"].is_null()) << end.dump();
  ASSERT_TRUE(eventually([&] { return hook_records(log).size() == 1; })) << "the hook did not finish alone";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // a claim at start and another poll
  EXPECT_EQ(hook_records(log).size(), 1u) << read_text(log);
  EXPECT_EQ(lines_in(started), 1) << "the hook started twice";
  EXPECT_EQ(listed_run(d, 1)["end"]["hook"]["state"], "lost");
  EXPECT_NE(rgbaq(d, {"ls", "runs"}).out.find("hook: lost"), std::string::npos);
}

TEST(DaemonRunHook, JobTextReachesTheHookOnlyAsValuesNeverTheShell) {
  TempDir dir;
  const auto log = dir.path() / "hook.log";
  const auto copy = dir.path() / "manifest-copy.jsonl";
  const std::string nasty = "$(touch pwned) `touch pwned2` \"double\" 'single'; touch pwned3 && echo $HOME";
  std::string quoted;  // a CSV field
  for (char c : nasty) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(),
                  {.extra_args = {"--on-run-done", record_command(log) + "; cp \"$RGBAQ_MANIFEST\" '" + copy.string() + "'"}});
  const auto r = submit(d, dir.path() / "out", "prompt,seed\n\"" + quoted + "\",1\n", {"--name", nasty, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  end_with_hook(d, 1, "done");
  const auto records = hook_records(log);
  ASSERT_EQ(records.size(), 1u) << read_text(log);
  EXPECT_EQ(records[0].at("RGBAQ_RUN_NAME"), nasty);
  const json job = json::parse(read_text(copy));
  EXPECT_EQ(job["prompt"], nasty);
  for (const fs::path& root : {dir.path(), fs::current_path()}) {
    for (const auto& e : fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied)) {
      EXPECT_EQ(e.path().filename().string().rfind("pwned", 0), std::string::npos) << e.path();
    }
  }
}

TEST(DaemonRunHook, AHookThatHangsIsKilledAtItsLimitWhileTheDaemonRendersOn) {
  TempDir dir;
  const auto pids = dir.path() / "pids";
  // Run 1's hook hangs (and leaves a child of its own); run 2's returns.
  const std::string hang = "if [ \"$RGBAQ_RUN\" = 1 ]; then echo $$ >> '" + pids.string() + "'; sleep 120 & echo $! >> '" +
                           pids.string() + "'; wait; fi";
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--on-run-done", hang, "--hook-timeout-s", "5"}});
  ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nowl,1\n", {"--wait"}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return lines_in(pids) == 2; })) << log_tail(d);
  // While it hangs: another run is rendered, and its own hook waits its turn.
  ASSERT_EQ(submit(d, dir.path() / "out", "prompt,seed\nfox,1\n", {"--wait"}).exit_code, 0);
  const json first = end_with_hook(d, 1, "done");
  EXPECT_EQ(first["hook"]["outcome"], "killed at the 5 s limit");
  const double took = first["hook"]["finished_at"].get<double>() - first["hook"]["started_at"].get<double>();
  EXPECT_GE(took, 4.9);
  EXPECT_LT(took, 15.0);
  const json fox = jobs_of(d)[1];
  EXPECT_EQ(fox["state"], "done");
  EXPECT_LT(fox["finished_at"].get<double>(), first["hook"]["finished_at"].get<double>()) << "rendering waited for the hook";
  EXPECT_EQ(end_with_hook(d, 2, "done")["hook"]["outcome"], "exit 0");
  std::istringstream in(read_text(pids));
  for (pid_t pid; in >> pid;) {
    const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
    EXPECT_TRUE(stat.empty() || stat.find(") Z") != std::string::npos) << "pid " << pid << " of the hook's group lives on";
  }
  EXPECT_NE(read_text(d.log()).find("hook of run 1: killed at the 5 s limit"), std::string::npos);
}

// Two daemons (two hosts) on one PostgreSQL queue, both with the hook: each run's end runs it once.
TEST(DaemonRunHook, TwoDaemonsOnOnePostgresQueueRunEachEndsHookOnce) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  PostgresServer server;
  const std::string queue = server.create_database("hooks");
  TempDir a, b, shared;
  const auto out = shared.path() / "renders";
  fs::create_directories(out);
  const auto start = [&](const TempDir& dir, const std::string& host) {
    return std::make_unique<DaemonProcess>(
        kRgbaqd, model().dir(), dir.path(),
        DaemonProcess::Options{.extra_args = {"--queue", queue, "--host", host, "--on-run-done", record_command(dir.path() / "hook.log")}});
  };
  const auto da = start(a, "hosta");
  const auto db = start(b, "hostb");
  constexpr int kRuns = 4;
  for (int i = 0; i < kRuns; ++i) {
    const auto r = submit(i % 2 ? *db : *da, out, "prompt,seed\nowl" + std::to_string(i) + ",1-2\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  for (int run = 1; run <= kRuns; ++run) end_with_hook(*da, run, "done");
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // each daemon's next poll finds nothing owed
  std::map<std::string, int> runs;
  int by_a = 0;
  for (const TempDir* dir : {&a, &b}) {
    for (const auto& env : hook_records(dir->path() / "hook.log")) {
      ++runs[env.at("RGBAQ_RUN")];
      by_a += dir == &a;
      EXPECT_EQ(env.at("RGBAQ_DONE"), "2");
    }
  }
  EXPECT_EQ(runs, (std::map<std::string, int>{{"1", 1}, {"2", 1}, {"3", 1}, {"4", 1}}));
  std::cout << "hooks run by host a: " << by_a << " of " << kRuns << "\n";
}

}  // namespace
}  // namespace rgbaq
