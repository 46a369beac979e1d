// rgbaqd killed with SIGKILL at random moments through a 40-image run: every image once, nothing lost,
// nothing left behind. Slow (CTest label "slow"): twenty-some daemon starts.
#include <sys/stat.h>

#include <map>
#include <random>
#include <set>

#include "storage/png_file.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

TEST(Daemon, SigkillAtRandomMomentsRendersEveryImageOnceAndLeavesNoTemporaries) {
  TempDir dir;
  const auto out_dir = dir.path() / "renders";
  write_file(dir.path() / "p.csv", "prompt,seed\nfox,1-10\nowl,1-10\ncat,1-10\nbee,1-10\n");
  std::mt19937 rng(7);
  std::map<fs::path, std::pair<ino_t, int64_t>> seen;  // every finished PNG's inode and mtime, first seen
  int kills = 0;
  bool submitted = false;
  for (int round = 0; round < 80; ++round) {
    // Attempts are not what this test is about: a job killed three times must not fail here.
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--max-attempts", "1000"}});
    if (!submitted) {
      const auto r = rgbaq(d, {"submit", (dir.path() / "p.csv").string(), "--size", "192", "--out", out_dir.string()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      submitted = true;
    }
    if (status(d)["jobs"]["done"] == 40) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + rng() % 400));
    d.signal(SIGKILL);
    ASSERT_EQ(d.wait_exit(), 128 + SIGKILL);
    ++kills;
    for (const auto& f : pngs_in(out_dir)) {
      struct stat st {};
      ASSERT_EQ(stat(f.c_str(), &st), 0);
      const auto [it, fresh] = seen.emplace(f, std::pair{st.st_ino, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec});
      ASSERT_EQ(it->second.first, st.st_ino) << f << " was written again";
      ASSERT_EQ(it->second.second, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec) << f << " was written again";
    }
  }
  EXPECT_GE(kills, 10);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--max-attempts", "1000"}});
  const auto w = rgbaq(d, {"watch", "1"});
  EXPECT_EQ(w.exit_code, 0) << w.out << w.err;
  const json s = status(d);
  EXPECT_EQ(s["jobs"]["done"], 40) << s.dump();
  EXPECT_EQ(s["jobs"]["failed"], 0);
  const auto files = pngs_in(out_dir);
  ASSERT_EQ(files.size(), 40u);
  std::set<int64_t> ids;
  for (const auto& f : files) {
    const auto png = storage::read_png(f);  // every one valid
    ids.insert(storage::job_id_of(png).value_or(-1));
    if (seen.count(f)) {
      struct stat st {};
      stat(f.c_str(), &st);
      EXPECT_EQ(seen[f].first, st.st_ino) << f << " was rendered twice";
    }
  }
  EXPECT_EQ(ids.size(), 40u);
  for (const auto& e : fs::directory_iterator(out_dir)) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
  }
  std::cout << "kills: " << kills << ", images finished before the last start: " << seen.size() << "\n";
}

}  // namespace
}  // namespace rgbaq
