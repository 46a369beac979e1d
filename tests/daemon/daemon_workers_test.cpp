// Several render workers in one rgbaqd (--workers N on the cpu engine, as CI runs them; the cuda form,
// --devices, takes the same path with a session per device): both workers take jobs from the one
// queue, the shared encoder cache encodes each prompt once, the PNG metadata, `ls jobs --json`,
// `export` and `status` say which worker rendered what; a worker whose (injected) device fault loses its
// device goes out of service while the other renders everything, one whose session is poisoned opens
// it again; a crash blames only the crashing worker's job; workers that do not fit the machine are
// refused at start; `rgbaq watch` shows each worker's line.
#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "engine/model/model_directory.h"
#include "engine/render_memory.h"
#include "storage/png_file.h"
#include "storage/postgres/postgres_queue_store.h"
#include "storage/render_metadata.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/tmux_terminal.h"
#include "tests/postgres_server.h"

namespace rgbaq {
namespace {

DaemonProcess::Options workers(int n, std::map<std::string, std::string> env = {}) {
  return {.extra_args = {"--engine", "cpu", "--workers", std::to_string(n), "--threads", "1"}, .env = std::move(env)};
}

// Each PNG's rgbaq record by its path.
std::map<fs::path, json> records(const fs::path& out) {
  std::map<fs::path, json> r;
  for (const auto& f : pngs_in(out)) r[f] = json::parse(storage::read_png(f).texts.at("rgbaq"));
  return r;
}

const json& render_worker(const json& status, int index) { return status["render_workers"][static_cast<size_t>(index)]; }

TEST(DaemonWorkers, TwoCpuWorkersShareTheRunTheQueueAndTheEncoderCache) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), workers(2));
  const auto out = dir.path() / "renders";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"},
                       "prompt,seed\nfox,1-6\nowl,1-6\n\"a glass teapot\",1-6\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = status(d);
  ASSERT_EQ(s["render_workers"].size(), 2u) << s.dump();
  // Every image by one worker or the other, both of them taking jobs, as the PNGs themselves record it.
  std::map<int, int> by_worker;
  std::map<std::string, int> worker_of_path;
  for (const auto& [path, rec] : records(out)) {
    EXPECT_EQ(rec["device"], "cpu") << path;
    ASSERT_TRUE(rec["worker"].is_number_integer()) << rec.dump();
    ++by_worker[rec["worker"].get<int>()];
    worker_of_path[path.string()] = rec["worker"].get<int>();
  }
  ASSERT_EQ(worker_of_path.size(), 18u);
  EXPECT_GT(by_worker[0], 0) << s.dump();
  EXPECT_GT(by_worker[1], 0) << s.dump();
  for (int i = 0; i < 2; ++i) {
    const json& w = render_worker(s, i);
    EXPECT_EQ(w["label"], "w" + std::to_string(i) + " cpu");
    EXPECT_EQ(w["device"], "cpu");
    EXPECT_EQ(w["description"], "cpu, 1 thread");
    EXPECT_EQ(w["state"], "idle");
    EXPECT_EQ(w["images_done"], by_worker[i]) << "its own count agrees with the PNGs";
    EXPECT_GT(w["images_per_hour"].get<double>(), 0.0);
    EXPECT_EQ(w["device_peak_bytes"], 0) << "a cpu session has no device memory of its own";
  }
  // Each worker is a worker of the queue, with its own registration and lease holder.
  std::set<int64_t> ids;
  for (const auto& w : s["workers"]) ids.insert(w["id"].get<int64_t>());
  EXPECT_EQ(ids, (std::set<int64_t>{render_worker(s, 0)["worker_id"], render_worker(s, 1)["worker_id"]}));
  // One encode per distinct prompt however the two workers interleaved, the rest from the shared cache.
  EXPECT_EQ(s["counters"]["encoder_runs"], 3) << s.dump();
  EXPECT_EQ(s["counters"]["cache_memory_hits"], 15) << s.dump();
  // ls jobs and export say which worker rendered each job, as its PNG does.
  const json jobs = json::parse(rgbaq(d, {"ls", "jobs", "--json"}).out)["jobs"];
  ASSERT_EQ(jobs.size(), 18u);
  for (const auto& j : jobs) {
    EXPECT_EQ(j["device"], "cpu");
    EXPECT_EQ(j["worker"], worker_of_path.at(j["output"].get<std::string>())) << j.dump();
    EXPECT_FALSE(j["host"].get<std::string>().empty());
  }
  const auto exported = rgbaq(d, {"export", "1", "--format", "jsonl"});
  std::istringstream lines(exported.out);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    const json j = json::parse(line);
    EXPECT_EQ(j["metadata"]["worker"], worker_of_path.at(j["output"].get<std::string>()));
  }
  EXPECT_EQ(n, 18);
  const auto text = rgbaq(d, {"status"});
  const auto images = [](int n) { return std::to_string(n) + (n == 1 ? " image" : " images"); };
  EXPECT_NE(text.out.find("render workers:\n  w0 cpu (cpu, 1 thread): idle, " + images(by_worker[0]) + " done, "),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  w1 cpu (cpu, 1 thread): idle, " + images(by_worker[1]) + " done, "), std::string::npos)
      << text.out;
}

TEST(DaemonWorkers, TwoWorkersOnAPostgresQueueEachHoldTheirOwnLeases) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  PostgresServer server;
  const std::string queue = server.create_database("workers");
  TempDir dir;
  DaemonProcess::Options o = workers(2);
  o.extra_args.insert(o.extra_args.end(), {"--queue", queue});
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), o);
  const auto out = dir.path() / "renders";
  fs::create_directories(out);  // a shared queue's output folder must exist before the submit
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed\nfox,1-8\nowl,1-8\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = status(d);
  EXPECT_EQ(s["jobs"]["done"], 16) << s.dump();
  std::map<int, int> by_worker;
  for (const auto& [path, rec] : records(out)) ++by_worker[rec.value("worker", -1)];
  EXPECT_GT(by_worker[0], 0) << s.dump();
  EXPECT_GT(by_worker[1], 0) << s.dump();
  EXPECT_EQ(by_worker[0] + by_worker[1], 16);
  EXPECT_EQ(s["workers"].size(), 2u) << "two registrations in the shared queue: " << s.dump();
  EXPECT_EQ(s["counters"]["encoder_runs"], 2) << s.dump();
  storage::PostgresQueueStore store(queue);
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST(DaemonWorkers, AWorkerWhoseDeviceIsLostGoesOutOfServiceAndTheOtherRendersEverything) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), workers(2, {{"RGBAQ_TEST_DEVICE_FAULT", "1:lost"}}));
  const auto out = dir.path() / "renders";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed\nfox,1-8\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = status(d);
  EXPECT_EQ(s["jobs"]["done"], 8) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 0) << s.dump();
  const json& lost = render_worker(s, 1);
  EXPECT_EQ(lost["state"], "out_of_service") << s.dump();
  EXPECT_EQ(lost["device_faults"], 1);
  EXPECT_EQ(lost["images_done"], 0);
  EXPECT_NE(lost["problem"].get<std::string>().find("its session could not be opened again"), std::string::npos) << s.dump();
  EXPECT_EQ(render_worker(s, 0)["images_done"], 8);
  EXPECT_EQ(s["workers"].size(), 1u) << "the lost worker left the queue: " << s.dump();
  for (const auto& [path, rec] : records(out)) EXPECT_EQ(rec["worker"], 0) << path;
  // The job it held went back as an interruption: its attempt given back, done by the other once.
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  int interrupted = 0;
  for (const auto& j : store.list_jobs(std::nullopt, std::nullopt)) {
    EXPECT_EQ(j.attempts, 1) << "job " << j.id;
    interrupted += j.interruptions;
  }
  EXPECT_EQ(interrupted, 1);
  EXPECT_EQ(d.wait_exit(std::chrono::seconds(1)), -1) << "the daemon goes on with the other worker";
  const auto text = rgbaq(d, {"status"});
  EXPECT_NE(text.out.find("  w1 cpu (cpu, 1 thread): OUT OF SERVICE: its device failed ("), std::string::npos) << text.out;
}

TEST(DaemonWorkers, WhenTheLastWorkerGoesOutOfServiceTheDaemonExitsOneWithItsJobBackInTheQueue) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), workers(1, {{"RGBAQ_TEST_DEVICE_FAULT", "0:lost"}}));
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string()}, "prompt,seed\nfox,1\n").exit_code, 0);
  EXPECT_EQ(d.wait_exit(), 1) << "a service manager restarts it";
  EXPECT_NE(log_tail(d).find("every render worker is out of service"), std::string::npos) << log_tail(d);
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  const auto job = store.job(1);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->state, storage::JobState::kQueued);
  EXPECT_EQ(job->attempts, 0) << "an interruption: no attempt spent";
  EXPECT_EQ(job->interruptions, 1);
}

TEST(DaemonWorkers, APoisonedSessionIsOpenedAgainAndOutOfMemoryKeepsItBothGivingTheJobBack) {
  for (const std::string kind : {"poisoned", "oom"}) {
    SCOPED_TRACE(kind);
    TempDir dir;
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), workers(2, {{"RGBAQ_TEST_DEVICE_FAULT", "1:" + kind}}));
    const auto out = dir.path() / "renders";
    const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed\nfox,1-12\n");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json s = status(d);
    EXPECT_EQ(s["jobs"]["done"], 12) << s.dump();
    const json& w = render_worker(s, 1);
    EXPECT_EQ(w["state"], "idle") << s.dump();
    EXPECT_EQ(w["device_faults"], 1);
    EXPECT_EQ(w["session_restarts"], kind == "poisoned" ? 1 : 0) << "out of memory leaves the session as it is";
    EXPECT_GT(w["images_done"].get<int>(), 0) << "it went on rendering after the fault: " << s.dump();
    EXPECT_NE(w["last_fault"].get<std::string>().find(kind == "poisoned" ? "; session opened again" : "given back"),
              std::string::npos) << s.dump();
    storage::SqliteQueueStore store(d.data_dir() / "queue.db");
    int interrupted = 0;
    for (const auto& j : store.list_jobs(std::nullopt, std::nullopt)) interrupted += j.interruptions;
    EXPECT_EQ(interrupted, 1);
    EXPECT_EQ(pngs_in(out).size(), 12u);
  }
}

TEST(DaemonWorkers, ACrashBlamesOnlyTheJobOfTheWorkerThatCrashed) {
  TempDir dir;
  const auto out = dir.path() / "o";
  const auto opts = workers(2, {{"RGBAQ_TEST_ABORT_ON_PROMPT", "poison"}});
  const int crashes = crashes_until_the_queue_is_done(dir.path(), opts, [&](DaemonProcess& d) {
    // A slow job first, so that one worker renders it while the other claims the poison and crashes.
    ASSERT_EQ(rgbaq(d, {"submit", "-", "--out", out.string()}, "prompt,seed,size\nfox,1,1024\npoison,1,128\nowl,1-3,128\n").exit_code, 0);
  });
  EXPECT_EQ(crashes, 3) << "three crashes, then the job fails";
  storage::SqliteQueueStore store(dir.path() / "data" / "queue.db");
  for (const auto& j : store.list_jobs(std::nullopt, std::nullopt)) {
    if (j.prompt == "poison") {
      EXPECT_EQ(j.state, storage::JobState::kFailed);
      EXPECT_EQ(j.error, "crashed the daemon 3 times");
    } else {
      // The other worker's job in hand at a crash was interrupted, not blamed: one attempt, its own.
      EXPECT_EQ(j.state, storage::JobState::kDone) << j.id;
      EXPECT_EQ(j.attempts, 1) << j.id;
      if (j.prompt == "fox") {
        EXPECT_EQ(j.interruptions, 3) << "in hand at each of the three crashes";
      }
    }
  }
}

TEST(DaemonWorkers, WorkersThatDoNotFitTheMachineAreRefusedNamingTheNumbers) {
  // What a cpu session adds at 1024x1024, as `rgbaq model check` estimates it, for 1 thread.
  uint64_t per = 0;
  for (const auto& m : engine::estimate_render_memory(engine::ModelDirectory::open(model().dir()), 1)) {
    if (m.engine == "cpu" && m.size == 1024) per = m.total() - m.shared;
  }
  ASSERT_GT(per, 0u);
  const uint64_t available_mb = per * 3 / 2 >> 20;  // room for one session, not for two
  const auto gib = [](uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
    return std::string(buf);
  };
  TempDir dir;
  DaemonProcess::Options two = workers(2, {{"RGBAQ_TEST_MEMORY_AVAILABLE_MB", std::to_string(available_mb)}});
  two.wait_until_ready = false;
  DaemonProcess refused(kRgbaqd, model().dir(), dir.path(), two);
  EXPECT_EQ(refused.wait_exit(), 2);
  EXPECT_NE(log_tail(refused).find("cpu: 2 workers need " + gib(2 * per) + " (" + gib(per) + " each: weights copied and "
                                   "work buffers at 1024x1024) and the machine has " + gib(available_mb << 20) + " available"),
            std::string::npos) << log_tail(refused);
  TempDir other;
  DaemonProcess one(kRgbaqd, model().dir(), other.path(), workers(1, {{"RGBAQ_TEST_MEMORY_AVAILABLE_MB", std::to_string(available_mb)}}));
  EXPECT_EQ(status(one)["render_workers"].size(), 1u);
}

TEST(DaemonWorkers, DevicesOnTheCpuEngineAndTooManyWorkersAreUsageErrors) {
  TempDir dir;
  DaemonProcess::Options o{.extra_args = {"--engine", "cpu", "--devices", "0,1"}, .wait_until_ready = false};
  DaemonProcess devices(kRgbaqd, model().dir(), dir.path(), o);
  EXPECT_EQ(devices.wait_exit(), 2);
  EXPECT_NE(log_tail(devices).find("--devices 0,1 is for the cuda engine"), std::string::npos) << log_tail(devices);
  TempDir other;
  o.extra_args = {"--engine", "cpu", "--workers", "65"};
  DaemonProcess many(kRgbaqd, model().dir(), other.path(), o);
  EXPECT_EQ(many.wait_exit(), 2);
  EXPECT_NE(log_tail(many).find("--workers must be from 1 to 64"), std::string::npos) << log_tail(many);
}

TEST(DaemonWorkers, WatchShowsEachWorkersLine) {
  ASSERT_TRUE(fs::exists(tmux_path())) << "tmux is not installed (scripts/setup installs it)";
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), workers(3, {{"RGBAQ_TEST_DEVICE_FAULT", "2:lost"}}));
  // 1024 px: slow enough on the tiny model that both workers' steps show on the screen.
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "1024", "--out", (dir.path() / "out").string()}, "prompt,seed\nfox,1-8\n").exit_code, 0);
  Tmux wide(dir.path() / "tmux.sock", "wide", 120, 20, kRgbaq + " --socket " + quoted(d.socket().string()) + " watch");
  const auto line = [](int w) {
    return std::regex("w" + std::to_string(w) + R"( cpu  run 1 job [1-8]  fox  seed [1-8]  1024x1024  \[[#-]+\] (step [0-8]/8|decoding))");
  };
  const std::regex w0 = line(0), w1 = line(1);
  EXPECT_TRUE(wide.wait_for([&](const std::vector<std::string>& lines) {
    const auto has = [&](const auto& pred) { return std::any_of(lines.begin(), lines.end(), pred); };
    return has([&](const std::string& l) { return std::regex_match(l, w0); }) &&
           has([&](const std::string& l) { return std::regex_match(l, w1); }) &&
           has([](const std::string& l) { return l.rfind("w2 cpu  out of service: its device failed (", 0) == 0; });
  })) << wide.screen();
}

}  // namespace
}  // namespace rgbaq
