// The data directory is its user's alone (issue 26, item 10): a real rgbaqd creates it 0700 and its
// files (queue.db and its WAL, the lock, the log, the embedding cache) 0600, and tightens one left
// 0755/0644 by an older daemon, saying so in its log; uid 65534 reads none of it. The outputs keep the
// modes the user's umask gives (0644 and 0755 under umask 022, 0640 and 0750 under 027).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// Every folder and file under `dir` with its mode, for a failure message and for the checks.
std::vector<std::pair<fs::path, mode_t>> modes_under(const fs::path& dir) {
  std::vector<std::pair<fs::path, mode_t>> out{{dir, mode_of(dir)}};
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_symlink()) out.emplace_back(e.path(), mode_of(e.path()));
  }
  return out;
}

// Whether uid 65534 can read `path` (as root, through setpriv; as another user, as ourselves).
bool nobody_reads(const fs::path& path) {
  std::vector<std::string> argv = {"/bin/cat", path.string()};
  if (geteuid() == 0) argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return run_process(argv).exit_code == 0;
}

struct Umask {
  mode_t old;
  explicit Umask(mode_t m) : old(::umask(m)) {}
  ~Umask() { ::umask(old); }
};

void expect_private(const fs::path& data) {
  for (const auto& [path, mode] : modes_under(data)) {
    EXPECT_EQ(mode, fs::is_directory(path) ? 0700u : 0600u) << path << " is " << std::oct << mode;
  }
}

TEST(DaemonPrivateFiles, TheDataDirectoryIsPrivateAndOutputsKeepTheUsersUmask) {
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);  // so that uid 65534 may walk to the files and be refused by their modes
  const Umask user(022);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "out" / "new";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\na fox,1,fox\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(fs::exists(d.data_dir() / "queue.db-wal")) << "the WAL is there while the daemon runs";
  ASSERT_FALSE(fs::is_empty(d.data_dir() / "cache" / "embeddings")) << "the encoder cache wrote its entry";
  expect_private(d.data_dir());
  for (const char* f : {"queue.db", "queue.db-wal", "logs/rgbaqd.log"}) {
    EXPECT_FALSE(nobody_reads(d.data_dir() / f)) << f;
  }
  const fs::path png = out / "fox_1.png";
  EXPECT_EQ(mode_of(png), 0644u);
  EXPECT_EQ(mode_of(out), 0755u);
  EXPECT_EQ(mode_of(out.parent_path()), 0755u);
  EXPECT_TRUE(nobody_reads(png)) << "the outputs are the user's to share, as before";
}

TEST(DaemonPrivateFiles, AnOlderDataDirectoryIsTightenedAndSaysSoInTheLog) {
  TempDir dir;
  {
    DaemonProcess first(kRgbaqd, model().dir(), dir.path(), {});
    status(first);  // serving: its queue and log are made
    first.signal(SIGTERM);
    ASSERT_EQ(first.wait_exit(), 0);
  }
  // As an older daemon left it.
  for (const auto& [path, mode] : modes_under(dir.path() / "data")) fs::permissions(path, fs::is_directory(path) ? fs::perms(0755) : fs::perms(0644));
  ASSERT_EQ(mode_of(dir.path() / "data" / "queue.db"), 0644u);
  const Umask user(027);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  expect_private(d.data_dir());
  const std::string log = log_tail(d, 1 << 20);
  EXPECT_NE(log.find((d.data_dir() / "queue.db").string() + " was 0644 (readable by other users); tightened to 0600"),
            std::string::npos) << log;
  EXPECT_NE(log.find(d.data_dir().string() + " was 0755 (readable by other users); tightened to 0700"), std::string::npos) << log;
  const fs::path out = dir.path() / "out";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt,seed,name\na cat,2,cat\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(mode_of(out / "cat_2.png"), 0640u) << "0644 less the umask 027 the daemon was started with";
  EXPECT_EQ(mode_of(out), 0750u);
}

}  // namespace
}  // namespace rgbaq
