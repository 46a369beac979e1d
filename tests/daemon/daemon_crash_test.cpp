// rgbaqd killed with SIGKILL at short random intervals, at least 200 times, through a 60-image run,
// with the default attempt limit: every image once, every PNG valid, no job failed (an interruption is
// not a job's fault), nothing left behind. The same, shorter, for a daemon of two render workers (two
// jobs in hand at each kill, images finishing between kills: --max-deaths deaths in a row with nothing
// finished between would blame the jobs in hand). Slow (CTest label "slow"): 200-some daemon starts.
#include <sys/stat.h>

#include <map>
#include <random>
#include <set>

#include "storage/png_file.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

using Seen = std::map<fs::path, std::pair<ino_t, int64_t>>;  // every finished PNG's inode and mtime, first seen

// After a kill: each finished PNG is new, or the one seen before, untouched.
void note_finished(const fs::path& out_dir, Seen& seen) {
  for (const auto& f : pngs_in(out_dir)) {
    struct stat st {};
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    const std::pair<ino_t, int64_t> now{st.st_ino, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    const auto [it, fresh] = seen.emplace(f, now);
    ASSERT_EQ(it->second, now) << f << " was written again";
  }
}

// The run, finished by `d`: every job done, none failed, `jobs` valid PNGs each with its own job id,
// none of those seen before rendered again, no temporary file left. Returns the PNGs' rgbaq records.
std::vector<json> expect_every_image_once(DaemonProcess& d, const fs::path& out_dir, Seen& seen, int jobs) {
  const auto w = rgbaq(d, {"watch", "1"});
  EXPECT_EQ(w.exit_code, 0) << w.out << w.err;
  const json s = status(d);
  EXPECT_EQ(s["jobs"]["done"], jobs) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 0) << s.dump();
  const auto files = pngs_in(out_dir);
  EXPECT_EQ(files.size(), static_cast<size_t>(jobs));
  std::set<int64_t> ids;
  std::vector<json> records;
  for (const auto& f : files) {
    const auto png = storage::read_png(f);  // every one valid
    ids.insert(storage::job_id_of(png).value_or(-1));
    records.push_back(json::parse(png.texts.at("rgbaq")));
    if (seen.count(f)) {
      struct stat st {};
      stat(f.c_str(), &st);
      EXPECT_EQ(seen[f].first, st.st_ino) << f << " was rendered twice";
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(jobs));
  for (const auto& e : fs::directory_iterator(out_dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  }
  return records;
}

TEST(Daemon, TwoHundredSigkillsRenderEveryImageOnceFailNoJobAndLeaveNoTemporaries) {
  TempDir dir;
  const auto out_dir = dir.path() / "renders";
  write_file(dir.path() / "p.csv", "prompt,seed\nfox,1-15\nowl,1-15\ncat,1-15\nbee,1-15\n");
  constexpr int kJobs = 60, kKills = 200;
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937 rng(7);
  Seen seen;
  int kills = 0;
  bool submitted = false;
  for (int round = 0; kills < kKills && round < 2 * kKills; ++round) {
    // The default attempt limit (3): hundreds of kills must not fail a healthy job.
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
    if (!submitted) {
      const auto r = rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "128", "--out", out_dir.string()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      submitted = true;
    }
    status(d);  // answered: the session is open and the worker is claiming
    // Under a sanitizer a render takes several times longer: the window scales with it, or the first
    // jobs would never finish between kills and reach the interruption limit (TSan: "interrupted 100 times").
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % (250 * test_time_scale())));
    d.signal(SIGKILL);
    ASSERT_EQ(d.wait_exit(), 128 + SIGKILL);
    ++kills;
    ASSERT_NO_FATAL_FAILURE(note_finished(out_dir, seen));
  }
  EXPECT_GE(kills, kKills);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  expect_every_image_once(d, out_dir, seen, kJobs);
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  int most = 0;
  for (const auto& j : store.list_jobs(std::nullopt, std::nullopt)) most = std::max(most, j.interruptions);
  std::cout << "kills: " << kills << ", images finished before the last start: " << seen.size()
            << ", most interruptions of one job: " << most << ", seconds: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << "\n";
}

TEST(Daemon, SigkillsDuringATwoWorkerRunLoseNothingAndRenderNothingTwice) {
  TempDir dir;
  const auto out_dir = dir.path() / "renders";
  write_file(dir.path() / "p.csv", "prompt,seed\nfox,1-40\nowl,1-40\ncat,1-40\nbee,1-40\n");
  constexpr int kJobs = 160, kKills = 18;
  const DaemonProcess::Options two{.extra_args = {"--engine", "cpu", "--workers", "2", "--threads", "1"}};
  const auto t0 = std::chrono::steady_clock::now();
  std::mt19937 rng(11);
  Seen seen;
  bool submitted = false;
  int both_in_hand = 0;  // kills while both workers rendered a job
  int window_ms = 400 * test_time_scale();  // the kill comes at a random moment in this window
  for (int kill = 0; kill < kKills; ++kill) {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), two);
    if (!submitted) {
      const auto r = rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "128", "--out", out_dir.string()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      submitted = true;
    }
    // Once both workers hold a job (whatever this machine's speed), a random moment later: kills in
    // every phase of a job, two jobs in hand, and a few images finished between some of them.
    bool two = false;
    for (int i = 0; i < 500 * test_time_scale() && !two; ++i) {
      const json s = status(d);
      two = s["render_workers"][0]["job"].is_number() && s["render_workers"][1]["job"].is_number();
      if (!two && s["jobs"]["queued"].get<int>() + s["jobs"]["running"].get<int>() < 2) break;  // the run is all but done
      if (!two) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!two) break;
    ++both_in_hand;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % window_ms));
    d.signal(SIGKILL);
    ASSERT_EQ(d.wait_exit(), 128 + SIGKILL);
    const size_t before = seen.size();
    ASSERT_NO_FATAL_FAILURE(note_finished(out_dir, seen));
    // A fast machine finishes many images in a fixed window and the run would end before the kills
    // do (CI: 95 of 100 images done after 8 kills): the window narrows until a few finish per kill.
    // A loaded one may finish none: then the window widens, for the daemon dying again and again with
    // the same jobs in hand and nothing finished between is what fails a job (--max-deaths), as a
    // poison pill's deaths do, and this run's jobs are healthy.
    if (seen.size() - before > 3) window_ms = std::max(20, window_ms / 2);
    if (seen.size() == before) window_ms = std::min(window_ms * 2, 4000 * test_time_scale());
  }
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), two);
  std::set<int64_t> workers;
  for (const json& r : expect_every_image_once(d, out_dir, seen, kJobs)) workers.insert(r.value("worker", -1));
  EXPECT_EQ(workers, (std::set<int64_t>{0, 1})) << "both workers rendered";
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  EXPECT_EQ(store.integrity_check(), "ok");
  EXPECT_EQ(both_in_hand, kKills) << "the run outlasted every kill, each with two jobs in hand";
  std::cout << "kills with two jobs in hand: " << both_in_hand << ", images finished before the last start: "
            << seen.size() << ", last kill window: " << window_ms << " ms, seconds: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << "\n";
}

}  // namespace
}  // namespace rgbaq
