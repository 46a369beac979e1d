// Three rgbaqd on one PostgreSQL queue (three data directories, one output folder, each its own --host),
// as three machines would share it, on a real server (tests/postgres_server.h). One daemon is SIGKILLed
// at random moments again and again and restarted: every job done exactly once, every PNG valid, no job
// lost, no lease taken from a live worker, the queue's integrity check passes. And a server restart
// mid-run: the daemons reconnect and go on. And a watch on one host following the steps of a job that
// another host renders (the progress its worker records in the queue). Slow (CTest label "slow").
#include <map>
#include <random>
#include <regex>
#include <set>

#include "storage/png_file.h"
#include "storage/postgres/postgres_queue_store.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/tmux_terminal.h"
#include "tests/postgres_server.h"

namespace rgbaq {
namespace {

// How many times each job id appears in a log line matching `pattern` (one capture: the id), over logs.
std::map<int64_t, int> job_lines(const std::vector<fs::path>& logs, const std::regex& pattern) {
  std::map<int64_t, int> n;
  for (const auto& log : logs) {
    const std::string text = read_text(log);
    for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it) ++n[std::stoll((*it)[1])];
  }
  return n;
}

struct Host {
  std::unique_ptr<TempDir> dir = std::make_unique<TempDir>();
  std::unique_ptr<DaemonProcess> daemon;
  std::vector<fs::path> logs;  // one per start (each start its own directory's log, kept)
  void start(const std::string& name, const std::string& queue, int generation) {
    const fs::path home = dir->path() / ("start" + std::to_string(generation));
    fs::create_directories(home);
    // The data directory stays the host's own across restarts (its cache, its crash record).
    fs::create_directories(dir->path() / "data");
    fs::create_symlink(dir->path() / "data", home / "data");
    daemon = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), home,
                                             DaemonProcess::Options{.extra_args = {"--queue", queue, "--host", name}});
    logs.push_back(daemon->log());
  }
};

TEST(DaemonMultiHost, ThreeDaemonsOnOneQueueOneKilledAgainAndAgainRenderEveryJobOnce) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  PostgresServer server;
  const std::string queue = server.create_database("multihost");
  TempDir shared;
  const auto out_dir = shared.path() / "renders";
  write_file(shared.path() / "p.csv", "prompt,seed\nfox,1-15\nowl,1-15\ncat,1-15\nbee,1-15\n");
  constexpr int kJobs = 60;
  const auto t0 = std::chrono::steady_clock::now();
  Host hosts[3];
  for (int i = 0; i < 3; ++i) hosts[i].start("host" + std::to_string(i), queue, 0);
  // The output folder of a shared queue must exist (on a shared file system) before the submit.
  const auto refused = rgbaq(*hosts[1].daemon, {"submit", (shared.path() / "p.csv").string(), "--size", "128", "--out", out_dir.string()});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("does not exist on this host"), std::string::npos) << refused.err;
  fs::create_directories(out_dir);
  const auto r = rgbaq(*hosts[1].daemon, {"submit", (shared.path() / "p.csv").string(), "--size", "128", "--out", out_dir.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::mt19937 rng(12);
  int kills = 0;
  // host0 dies at random moments and comes back, until the run is done (and at least 8 times).
  for (int generation = 1;; ++generation) {
    status(*hosts[0].daemon);  // answered: its worker is registered and claiming
    // (under a sanitizer a render takes several times longer: host0 must still live long enough to render)
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % (1500 * test_time_scale())));
    hosts[0].daemon->signal(SIGKILL);
    ASSERT_EQ(hosts[0].daemon->wait_exit(), 128 + SIGKILL);
    ++kills;
    const json s = status(*hosts[1].daemon);
    if (s["jobs"]["done"] == kJobs && kills >= 8) break;
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(100) * test_time_scale()) << s.dump();
    hosts[0].start("host0", queue, generation);
  }
  const json s = status(*hosts[2].daemon);
  EXPECT_EQ(s["jobs"]["done"], kJobs) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 0) << s.dump();
  ASSERT_TRUE(s.contains("workers")) << s.dump();
  // The two live daemons and the last killed one (until its lease runs out): each restart expired the
  // worker of the process before it.
  std::map<std::string, int> workers;
  for (const auto& w : s["workers"]) ++workers[w.value("host", "")];
  EXPECT_EQ(workers["host1"], 1) << s.dump();
  EXPECT_EQ(workers["host2"], 1) << s.dump();
  EXPECT_EQ(workers["host0"], 1) << s.dump();

  // Every PNG valid, one per job, its job id and rendering host inside.
  const auto files = pngs_in(out_dir);
  ASSERT_EQ(files.size(), static_cast<size_t>(kJobs));
  std::set<int64_t> ids;
  std::set<std::string> render_hosts;
  for (const auto& f : files) {
    const auto png = storage::read_png(f);
    ids.insert(storage::job_id_of(png).value_or(-1));
    const auto meta = json::parse(png.texts.at("rgbaq"));
    render_hosts.insert(meta.value("host", ""));
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(render_hosts.size(), 3u) << "the work was shared, the killed host's too";
  EXPECT_EQ(render_hosts.count(""), 0u) << "every PNG names its host";

  // Done exactly once: each job's completion is logged by exactly one daemon, ever. No live worker
  // lost a lease: no completion found its job no longer running.
  std::vector<fs::path> logs;
  for (auto& h : hosts) logs.insert(logs.end(), h.logs.begin(), h.logs.end());
  // (A kill between a completion's commit and its log line may leave one unlogged.)
  const auto done = job_lines(logs, std::regex(R"(job (\d+)(?: done:|: .* already holds its image))"));
  EXPECT_GE(done.size(), static_cast<size_t>(kJobs - 1));
  for (const auto& [id, n] : done) EXPECT_EQ(n, 1) << "job " << id << " was completed " << n << " times";
  const auto stolen = job_lines(logs, std::regex(R"(job (\d+): lease lost)"));
  EXPECT_TRUE(stolen.empty()) << stolen.begin()->first;

  storage::PostgresQueueStore store(queue);
  EXPECT_EQ(store.integrity_check(), "ok");
  int most = 0;
  for (const auto& j : store.list_jobs(std::nullopt, std::nullopt)) {
    EXPECT_EQ(j.state, storage::JobState::kDone);
    EXPECT_FALSE(j.host.empty());
    most = std::max(most, j.interruptions);
  }
  std::cout << "kills: " << kills << ", hosts that rendered: " << render_hosts.size()
            << ", most interruptions of one job: " << most << ", seconds: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << "\n";
}

TEST(DaemonMultiHost, AServerRestartMidRunIsRiddenOutWithNothingLostOrDoneTwice) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  PostgresServer server;
  const std::string queue = server.create_database("restart");
  TempDir shared;
  const auto out_dir = shared.path() / "renders";
  write_file(shared.path() / "p.csv", "prompt,seed\nfox,1-20\nowl,1-20\n");
  constexpr int kJobs = 40;
  Host hosts[2];
  for (int i = 0; i < 2; ++i) hosts[i].start("host" + std::to_string(i), queue, 0);
  fs::create_directories(out_dir);
  ASSERT_EQ(rgbaq(*hosts[0].daemon, {"submit", (shared.path() / "p.csv").string(), "--size", "128", "--out", out_dir.string()}).exit_code, 0);
  // Mid-run: a few images done, most not.
  for (int i = 0; i < 400 && pngs_in(out_dir).size() < 5; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  server.stop();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  server.start();
  json s;
  for (int i = 0; i < 1200 * test_time_scale(); ++i) {  // up to 60 s (times the sanitizer's slowness)
    s = status(*hosts[1].daemon);
    if (s["jobs"]["done"] == kJobs) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(s["jobs"]["done"], kJobs) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 0) << s.dump();
  EXPECT_EQ(pngs_in(out_dir).size(), static_cast<size_t>(kJobs));
  std::vector<fs::path> logs = {hosts[0].logs[0], hosts[1].logs[0]};
  const auto done = job_lines(logs, std::regex(R"(job (\d+)(?: done:|: .* already holds its image))"));
  EXPECT_EQ(done.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, n] : done) EXPECT_EQ(n, 1) << "job " << id;
  EXPECT_TRUE(hosts[0].daemon->connectable() && hosts[1].daemon->connectable()) << "both daemons rode it out";
  storage::PostgresQueueStore store(queue);
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST(DaemonMultiHost, AWatchOnOneHostFollowsTheStepsOfAJobRenderingOnAnother) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  ASSERT_TRUE(fs::exists(tmux_path())) << "tmux is not installed (scripts/setup installs it)";
  PostgresServer server;
  const std::string queue = server.create_database("watch");
  TempDir shared;
  const auto out_dir = shared.path() / "renders";
  fs::create_directories(out_dir);
  Host renderer, watcher;
  renderer.start("render-host", queue, 0);
  // One job of 1024 px (seconds a step on the tiny model), in the renderer's hands before the watching
  // host starts: the watching host never renders it, and has no event of it but what the queue says.
  ASSERT_EQ(rgbaq(*renderer.daemon, {"submit", "-", "--size", "1024", "--out", out_dir.string()}, "prompt,seed\na slow fox,1\n")
                .exit_code, 0);
  for (int i = 0; i < 1200 && status(*renderer.daemon)["current"].is_null(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  watcher.start("watch-host", queue, 0);

  // `rgbaq watch` on the watching host, in a terminal: the other host's job with its step, not "step ?".
  const fs::path tmux_socket = shared.path() / "tmux.sock";  // under the test's own directory
  Tmux terminal(tmux_socket, "watch", 120, 20, kRgbaq + " --socket " + quoted(watcher.daemon->socket().string()) + " watch");
  const std::regex step_line(R"(a slow fox.*step [1-8]/8)");
  EXPECT_TRUE(terminal.wait_for([&](const std::vector<std::string>& lines) {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return std::regex_search(l, step_line); });
  })) << terminal.screen();
  EXPECT_EQ(terminal.screen().find("step ?"), std::string::npos) << terminal.screen();

  // The watching host's event stream relays the step the renderer recorded, naming the host.
  Raw events(watcher.daemon->socket());
  ASSERT_TRUE(events.send_all(R"({"v":1,"id":1,"method":"watch"})" "\n"));
  ASSERT_NE(events.read_line().find("watching"), std::string::npos);
  json first, later;
  for (std::string line; (line = events.read_line(60000)) != "";) {
    const json e = json::parse(line);
    if (e["event"] == "progress" && first.is_null()) {
      first = e;
    } else if (!first.is_null() && (e["event"] == "decoding" || (e["event"] == "progress" && e["step"] > first["step"]))) {
      later = e;
      break;
    }
  }
  ASSERT_TRUE(first.is_object()) << "no progress event from the other host's job";
  EXPECT_EQ(first["job"], 1);
  EXPECT_EQ(first["run"], 1);
  EXPECT_EQ(first["host"], "render-host");
  EXPECT_EQ(first["steps"], 8);
  EXPECT_GE(first["step"].get<int>(), 1);
  EXPECT_LE(first["step"].get<int>(), 8);
  EXPECT_FALSE(first.contains("step_s")) << "a step's time is the rendering host's to measure";
  ASSERT_TRUE(later.is_object()) << "the job's progress did not advance in the stream after " << first.dump();
  EXPECT_EQ(later["job"], 1);
}

}  // namespace
}  // namespace rgbaq
