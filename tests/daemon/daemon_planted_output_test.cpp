// A PNG bomb planted at a job's output path (issue 26, item 6): 16384x16384 in a few KB, put by another
// user (uid 65534) into a shared 1777 folder after the submit. The old worker decoded all its pixels
// (1 GiB, seconds) each time it judged the job for reuse; now the header's size, not the job's, settles
// it: the job fails naming the path, and the daemon's peak memory (from /proc) barely moves.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/png_bomb.h"
#include "tests/peak_memory.h"

namespace rgbaq {
namespace {

TEST(DaemonPlantedOutput, APngBombAtAnOutputPathIsJudgedByItsHeaderWithoutDecoding) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  const fs::path shared = dir.path() / "shared";
  fs::create_directories(shared);
  ::chmod(shared.c_str(), 01777);
  const fs::path bomb = dir.path() / "bomb.png";
  write_file(bomb, png_bomb(16384));
  ::chmod(bomb.c_str(), 0644);
  ASSERT_LT(fs::file_size(bomb), 1u << 20);

  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {{"--max-attempts", "1"}});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", shared.string()}, "prompt,seed,name\na fox,1,fox\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Another user plants it once the submit has checked the path.
  std::vector<std::string> plant = {"/bin/cp", bomb.string(), (shared / "fox_1.png").string()};
  if (geteuid() == 0) plant.insert(plant.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  ASSERT_EQ(run_process(plant).exit_code, 0);

  const std::string pid = std::to_string(d.pid());
  { std::ofstream("/proc/" + pid + "/clear_refs") << "5"; }  // the daemon's peak from here on
  const uint64_t before = proc_status_bytes("VmRSS", pid);
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  std::vector<storage::Job> failed;
  for (int i = 0; i < 600 * test_time_scale() && failed.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    failed = store.list_jobs(std::nullopt, storage::JobState::kFailed);
  }
  ASSERT_EQ(failed.size(), 1u) << log_tail(d);
  const uint64_t growth = proc_status_bytes("VmHWM", pid) - before;
  std::cout << "the daemon's peak RSS rose " << (growth >> 20) << " MiB judging the bomb\n";
  EXPECT_NE(failed[0].error.find("output " + (shared / "fox_1.png").string() + " exists and holds another image"),
            std::string::npos) << failed[0].error;
  EXPECT_LT(growth, 128u << 20) << "a 16384x16384 RGBA decode is 1 GiB";
  EXPECT_EQ(fs::file_size(shared / "fox_1.png"), fs::file_size(bomb)) << "another user's file is left alone";
}

}  // namespace
}  // namespace rgbaq
