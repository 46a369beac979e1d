// Who owns an output folder, and whether the PNG reaches the folder the run was submitted for (issue 26,
// items 7 and 8), through a real rgbaqd on the tiny model. Another user (uid 65534, when the test runs
// as root as CI does) who owns a folder's parent could swap the folder for a symlink between the submit
// and the render: such a folder is refused at submit, and a swap after it is not written through (the
// PNG never lands in the link's target). And one folder under two names (a symlink to it) owns its
// outputs once: a second run naming the same row is refused as for one name.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

constexpr uid_t kOther = 65534;

// As uid 65534: runs `argv` and returns its exit code.
int as_other(std::vector<std::string> argv) {
  argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return run_process(argv).exit_code;
}

TEST(DaemonOutputFolder, AFolderAnotherUserCouldSwapIsRefusedAtSubmitAndASafeOneTaken) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to uid 65534";
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const auto submit = [&](const fs::path& out) {
    return rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string()}, "prompt\nfox\n");
  };
  const fs::path theirs = dir.path() / "theirs", open = dir.path() / "open", sticky = dir.path() / "sticky";
  for (const auto& f : {theirs, open, sticky}) fs::create_directories(f);
  ASSERT_EQ(::chown(theirs.c_str(), kOther, kOther), 0);
  ::chmod(open.c_str(), 0777);
  ::chmod(sticky.c_str(), 01777);

  const auto r1 = submit(theirs / "renders");
  EXPECT_EQ(r1.exit_code, 2) << r1.out;
  EXPECT_NE(r1.err.find("output directory " + (theirs / "renders").string() + " is not safe to write into: " + theirs.string() +
                        " belongs to uid 65534; another user could swap what is in it for a link elsewhere"),
            std::string::npos) << r1.err;
  const auto r2 = submit(open / "renders");
  EXPECT_EQ(r2.exit_code, 2) << r2.out;
  EXPECT_NE(r2.err.find(open.string() + " is writable by every user (mode 0777, not sticky)"), std::string::npos) << r2.err;
  // A sticky folder of ours (as /tmp is root's): only an entry's owner may rename it.
  const auto r3 = submit(sticky / "renders");
  EXPECT_EQ(r3.exit_code, 0) << r3.err;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 1u) << "the refused submits queued nothing";
}

TEST(DaemonOutputFolder, AFolderSwappedForASymlinkAfterTheSubmitIsNotWrittenThrough) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as uid 65534";
  TempDir dir;
  ::chmod(dir.path().c_str(), 0755);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--max-attempts", "1"}});
  const fs::path secret = dir.path() / "secret";  // root's alone
  fs::create_directories(secret);
  ::chmod(secret.c_str(), 0700);
  // Run 1: its folder's parent becomes uid 65534's after the submit, and that user swaps the folder for
  // a link to `secret`. Run 2: the folder itself is swapped for a link (by whoever could), in a parent
  // that stays root's.
  const fs::path parent1 = dir.path() / "p1", parent2 = dir.path() / "p2";
  fs::create_directories(parent1 / "renders");
  fs::create_directories(parent2 / "renders");
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (parent1 / "renders").string()}, "prompt\nfox\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (parent2 / "renders").string()}, "prompt\nowl\n").exit_code, 0);
  ASSERT_EQ(::chown(parent1.c_str(), kOther, kOther), 0);
  ASSERT_EQ(as_other({"/bin/mv", (parent1 / "renders").string(), (parent1 / "old").string()}), 0);
  ASSERT_EQ(as_other({"/bin/ln", "-s", secret.string(), (parent1 / "renders").string()}), 0);
  fs::rename(parent2 / "renders", parent2 / "old");
  fs::create_directory_symlink(secret, parent2 / "renders");
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  wait_until_idle(d);

  EXPECT_TRUE(fs::is_empty(secret)) << "nothing written through the swapped-in links";
  const json jobs = jobs_of(d);
  ASSERT_EQ(jobs.size(), 2u);
  for (const auto& j : jobs) {
    EXPECT_EQ(j["state"], "failed") << j.dump();
    const std::string error = j["error"], output = j["output"];
    const fs::path folder = fs::path(output).parent_path();
    const std::string why = j["prompt"] == "fox"
                                ? parent1.string() + " belongs to uid 65534; another user could swap what is in it for a link elsewhere"
                                : "is a symbolic link; not following it";
    EXPECT_EQ(error.rfind(output + ": refusing its folder " + folder.string() + ": ", 0), 0u) << error;
    EXPECT_NE(error.find(why), std::string::npos) << error;
    EXPECT_NE(error.find("(not retried: trying again cannot fix this)"), std::string::npos) << error;
  }
}

TEST(DaemonOutputFolder, OneFolderUnderTwoNamesOwnsItsOutputsOnce) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const fs::path renders = dir.path() / "renders", link = dir.path() / "link";
  fs::create_directories(renders);
  fs::create_directory_symlink(renders, link);
  const auto first = rgbaq(d, {"submit", "-", "--size", "128", "--out", renders.string()}, "prompt,seed,name\nfox,1,hero\n");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // Through the link: another image for the row is refused, as for one name; the same image shares its
  // path (a resubmission), whatever the folder's spelling.
  const auto clash = rgbaq(d, {"submit", "-", "--size", "128", "--out", link.string()}, "prompt,seed,name\nowl,1,hero\n");
  EXPECT_EQ(clash.exit_code, 2) << clash.out;
  EXPECT_NE(clash.err.find("<stdin>:2: output " + (renders / "hero_1.png").string() + " already belongs to another image (run 1)"),
            std::string::npos) << clash.err;
  EXPECT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (link / ".").string() + "/"}, "prompt,seed,name\nfox,1,hero\n")
                .exit_code, 0);
  const json runs = json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"];
  ASSERT_EQ(runs.size(), 2u) << "nothing of the clash was queued";
  EXPECT_EQ(runs[1]["out_dir"], renders.string()) << "the folder as the file system names it";
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  wait_until_idle(d);
  for (const auto& j : jobs_of(d)) {
    EXPECT_EQ(j["state"], "done") << j.dump();
    EXPECT_EQ(j["output"], (renders / "hero_1.png").string());
  }
  EXPECT_EQ(pngs_in(renders).size(), 1u);
}

}  // namespace
}  // namespace rgbaq
