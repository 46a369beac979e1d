// Start-up does not list every run's folder (issue 26, item 15): 1,000 finished runs over 50,000 images
// kept rgbaqd from answering for 135 s, past systemd's start timeout. Through the real binaries: many
// finished (canceled) runs over many files, and three unfinished runs in two folders (one reached under
// two names, a symlink). After a restart the daemon answers `status` within a bound (measured), the
// scan lists 2 folders (its log line says so) after the daemon answers, removes the stale temporaries
// there, and leaves alone the one in a finished run's folder, which it never lists.
#include <gtest/gtest.h>

#include <iostream>
#include <thread>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

int64_t submitted_run(const DaemonProcess& d, const std::string& prompt, const fs::path& out) {
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--json"}, "prompt,seed\n" + prompt + ",1\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out).value("run", int64_t{0});
}

void plant_stale_temporary(const fs::path& file) {
  std::ofstream(file) << "half a PNG";
  fs::last_write_time(file, fs::file_time_type::clock::now() - std::chrono::hours(1));
}

TEST(DaemonStartupScan, OnlyUnfinishedRunsFoldersAreListedOnceEachAfterTheDaemonAnswers) {
  TempDir dir;
  constexpr int kFinishedRuns = 200, kFilesEach = 100;  // 20,000 files, as the first case
  const fs::path shared = dir.path() / "shared", other = dir.path() / "other", link = dir.path() / "link";
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
    ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
    for (int i = 0; i < kFinishedRuns; ++i) {
      const int64_t run = submitted_run(d, "finished " + std::to_string(i), dir.path() / ("done" + std::to_string(i)));
      ASSERT_EQ(rgbaq(d, {"cancel", std::to_string(run)}).exit_code, 0);
    }
    fs::create_directories(shared);
    fs::create_symlink(shared, link);
    submitted_run(d, "unfinished a", shared);
    submitted_run(d, "unfinished b", link);  // the same folder under another name
    submitted_run(d, "unfinished c", other);
    d.signal(SIGTERM);
    ASSERT_EQ(d.wait_exit(), 0);
  }
  for (int i = 0; i < kFinishedRuns; ++i) {
    const fs::path folder = dir.path() / ("done" + std::to_string(i));
    fs::create_directories(folder);
    for (int f = 0; f < kFilesEach; ++f) std::ofstream(folder / ("image_" + std::to_string(f) + ".png")) << "x";
  }
  fs::create_directories(other);
  const fs::path in_finished = dir.path() / "done0" / ".finished_0_1.png.tmpAAAAAA";
  const fs::path in_shared = shared / ".unfinished_a_1.png.tmpBBBBBB", in_other = other / ".unfinished_c_1.png.tmpCCCCCC";
  for (const auto& f : {in_finished, in_shared, in_other}) plant_stale_temporary(f);
  fs::remove(dir.path() / "rgbaqd.log");

  const auto started = std::chrono::steady_clock::now();
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.wait_until_ready = false});
  ProcessResult answered;
  while ((answered = rgbaq(d, {"status", "--json"})).exit_code != 0 &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(answered.exit_code, 0) << answered.err << log_tail(d);
  std::cout << "status answered " << seconds << " s after the start, over " << kFinishedRuns << " finished runs and "
            << kFinishedRuns * kFilesEach << " files\n";
  // The tiny model's session opens in well under a second; the bound leaves room for a loaded machine.
  EXPECT_LT(seconds, 10.0 * test_time_scale());

  std::string log;
  for (int i = 0; i < 500 && log.find("scanned ") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream in(d.log());
    log.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(log.find("scanned 2 output folders of unfinished runs for stale temporary files: 2 removed"), std::string::npos) << log;
  EXPECT_LT(log.find("ready: "), log.find("scanned ")) << "the scan runs once the daemon answers";
  EXPECT_FALSE(fs::exists(in_shared));
  EXPECT_FALSE(fs::exists(in_other));
  EXPECT_TRUE(fs::exists(in_finished)) << "a finished run's folder is not listed";
}

}  // namespace
}  // namespace rgbaq
