// What a new user meets, through the real rgbaq and rgbaqd binaries: per-command help, --version,
// the service files, one-prompt submits, honest messages for options that lose to columns, bad
// options, missing or unreadable files, output clashes and unwritable outputs found at submit, reused
// images, Ctrl-C during --wait, cancel of a finished job, and listings.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

json runs(const DaemonProcess& d) { return json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"]; }

TEST(CliHelp, EachCommandHasItsOwnHelpWithItsDefaults) {
  const auto global = run_process({kRgbaq, "--help"});
  ASSERT_EQ(global.exit_code, 0);
  for (const std::string command : {"submit", "watch", "status", "ls", "cancel", "retry", "mark", "pause", "resume", "prioritize",
                                    "export", "sheet", "service"}) {
    const auto h = run_process({kRgbaq, command, "--help"});
    EXPECT_EQ(h.exit_code, 0) << command;
    EXPECT_EQ(h.out.rfind("usage: rgbaq " + command, 0), 0u) << command << ":\n" << h.out;
    EXPECT_NE(h.out, global.out) << command;
    EXPECT_EQ(run_process({kRgbaq, "help", command}).out, h.out) << "`rgbaq help X` is `rgbaq X --help`";
  }
  const auto submit = run_process({kRgbaq, "submit", "--help"}).out;
  for (const std::string stated : {"--size SIZE", "(default 1024", "--out DIR", "(default ./renders)", "--count N", "(default 1)",
                                   "--priority N", "(default 0)", "--max-jobs N", "(default 100000", "--seeds S",
                                   "(default: one random seed per row", "--prompt TEXT"}) {
    EXPECT_NE(submit.find(stated), std::string::npos) << stated << "\n" << submit;
  }
  EXPECT_NE(run_process({kRgbaq, "ls", "--help"}).out.find("(default 50;"), std::string::npos);
  // A usage error points at the command's help, not the global one.
  const auto bad = run_process({kRgbaq, "submit"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("(see rgbaq submit --help)"), std::string::npos) << bad.err;
}

TEST(CliVersion, BothBinariesSayVersionCommitAndEngines) {
  const std::string engines = std::string("engines: cpu") + (RGBAQ_TEST_HAVE_CUDA ? ", cuda" : "") + "\n";
  const std::regex line(R"(^(rgbaqd?) 0\.1\.0 \(git ([0-9a-f]{7,40}(-dirty)?|unknown)\)\n)");
  for (const auto& [binary, name] : std::map<std::string, std::string>{{kRgbaq, "rgbaq"}, {kRgbaqd, "rgbaqd"}}) {
    const auto v = run_process({binary, "--version"});
    ASSERT_EQ(v.exit_code, 0) << v.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(v.out, m, line)) << v.out;
    EXPECT_EQ(m[1], name);
    EXPECT_EQ(v.out.substr(m[0].length()), engines);
    std::string commit = m[2];
    if (commit.ends_with("-dirty")) commit.resize(commit.size() - 6);
    // The commit is one git knows in the source tree (when it is a checkout).
    if (commit != "unknown") {
      const auto known = run_process({"/usr/bin/env", "git", "-C", RGBAQ_SOURCE_DIR_PATH, "cat-file", "-t", commit});
      EXPECT_EQ(known.out, "commit\n") << commit << " " << known.err;
    }
  }
}

// The blocks of `rgbaq service install --print`: "# PATH" then the file's text.
std::map<std::string, std::string> printed_files(const std::string& out) {
  std::map<std::string, std::string> files;
  std::string current;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# /", 0) == 0) {
      current = line.substr(2);
      continue;
    }
    files[current] += line + "\n";
  }
  for (auto& [path, text] : files) text.pop_back();  // the blank line --print puts between files
  return files;
}

TEST(CliService, PrintShowsExactlyWhatInstallWritesWithTheRealDaemonPath) {
  TempDir dir;
  const std::vector<std::string> env = {"/usr/bin/env", "XDG_CONFIG_HOME=" + dir.path().string(),
                                        "RGBAQ_SYSTEMCTL=/bin/true"};
  auto with_env = [&](std::vector<std::string> args) {
    std::vector<std::string> all = env;
    all.insert(all.end(), args.begin(), args.end());
    return run_process(all);
  };
  const auto printed = with_env({kRgbaq, "service", "install", "--model", model().dir().string(), "--print"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_FALSE(fs::exists(dir.path() / "systemd")) << "--print writes nothing";
  const auto files = printed_files(printed.out);
  ASSERT_EQ(files.size(), 2u) << printed.out;
  const std::string service = files.at((dir.path() / "systemd/user/rgbaqd.service").string());
  // ExecStart names the rgbaqd beside this rgbaq, absolute, and it exists.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(service, m, std::regex("ExecStart=\"([^\"]+)\" serve"))) << service;
  const fs::path exec = m[1].str();
  EXPECT_TRUE(exec.is_absolute()) << exec;
  EXPECT_TRUE(fs::exists(exec)) << exec;
  EXPECT_EQ(fs::canonical(exec), fs::canonical(fs::path(kRgbaq).parent_path().parent_path() / "daemon" / "rgbaqd"));
  for (const std::string setting : {"\nNice=10\n", "\nCPUSchedulingPolicy=batch\n", "\nIOSchedulingClass=best-effort\n",
                                    "\nIOSchedulingPriority=7\n"}) {
    EXPECT_NE(service.find(setting), std::string::npos) << setting << service;
  }
  const auto installed = with_env({kRgbaq, "service", "install", "--model", model().dir().string()});
  ASSERT_EQ(installed.exit_code, 0) << installed.err;
  for (const auto& [path, text] : files) EXPECT_EQ(read_text(path), text) << path;
  // A --rgbaqd that is not there is refused, not written into a unit.
  const auto missing = with_env({kRgbaq, "service", "install", "--model", model().dir().string(), "--print", "--rgbaqd",
                                 (dir.path() / "nope").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("is not an executable file"), std::string::npos) << missing.err;
}

TEST(CliService, LaunchdTemplateDoesNotThrottleRenders) {
  const std::string plist = read_text(fs::path(RGBAQ_SOURCE_DIR_PATH) / "launchd" / "com.rgbaq.rgbaqd.plist.in");
  EXPECT_NE(plist.find("<key>ProcessType</key>\n  <string>Standard</string>"), std::string::npos) << plist;
  EXPECT_EQ(plist.find("<string>Background</string>"), std::string::npos);
  EXPECT_NE(plist.find("<key>Nice</key>\n  <integer>10</integer>"), std::string::npos);
}

TEST(CliSubmit, OnePromptWithoutAFile) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = dir.path() / "renders";
  const auto r = rgbaq(d, {"submit", "--prompt", "a red fox", "--seeds", "1-4", "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("run 1: 4 jobs queued"), std::string::npos) << r.out;
  const auto files = pngs_in(out);
  ASSERT_EQ(files.size(), 4u);
  std::set<uint64_t> seeds;
  for (const auto& f : files) {
    const json meta = json::parse(storage::read_png(f).texts.at("rgbaq"));
    EXPECT_EQ(meta["prompt"], "a red fox");
    seeds.insert(meta["seed"].get<uint64_t>());
  }
  EXPECT_EQ(seeds, (std::set<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(runs(d)[0]["name"], "a red fox");
  const auto both = rgbaq(d, {"submit", "x.csv", "--prompt", "a"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("not both"), std::string::npos) << both.err;
  // Plurals read right.
  const auto one = rgbaq(d, {"submit", "--prompt", "an owl", "--seeds", "9", "--size", "128", "--out", out.string(), "--dry-run"});
  EXPECT_EQ(one.out, "--prompt: 1 job, valid; nothing was queued (--dry-run)\n") << one.out << one.err;
}

TEST(CliSubmit, OptionsAreOneErrorAndLosingToAColumnIsSaid) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  std::string eight = "prompt\n";
  for (int i = 0; i < 8; ++i) eight += "p" + std::to_string(i) + "\n";
  write_file(dir.path() / "eight.csv", eight);
  const auto size = rgbaq(d, {"submit", (dir.path() / "eight.csv").string(), "--size", "300"});
  EXPECT_EQ(size.exit_code, 2);
  EXPECT_EQ(count_lines(size.err), 2u) << size.err;  // the error and "1 error; nothing was queued"
  EXPECT_EQ(size.err.rfind("rgbaq submit: --size: ", 0), 0u) << size.err;
  EXPECT_NE(size.err.find("300"), std::string::npos);
  EXPECT_NE(size.err.find("1 error; nothing was queued"), std::string::npos);
  const auto seeds = rgbaq(d, {"submit", (dir.path() / "eight.csv").string(), "--seeds", "1-200000"});
  EXPECT_EQ(seeds.exit_code, 2);
  EXPECT_EQ(count_lines(seeds.err), 2u) << seeds.err;
  EXPECT_EQ(seeds.err.rfind("rgbaq submit: --seeds: gives each row 200000 images", 0), 0u) << seeds.err;
  EXPECT_EQ(seeds.err.find("count"), std::string::npos) << "no column the user never wrote: " << seeds.err;
  EXPECT_TRUE(runs(d).empty());

  write_file(dir.path() / "mixed.csv", "prompt,seed\nfox,7\nowl,\ncat,9\n");
  const auto mixed = rgbaq(d, {"submit", (dir.path() / "mixed.csv").string(), "--seeds", "1-2", "--size", "128", "--out",
                               (dir.path() / "o").string(), "--dry-run"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_NE(mixed.err.find("note: " + (dir.path() / "mixed.csv").string() +
                           ": the seed column wins over --seeds 1-2 on lines 2, 4 (--seeds applies to the rows without a seed)"),
            std::string::npos)
      << mixed.err;
  EXPECT_NE(mixed.out.find(": 4 jobs, valid"), std::string::npos) << mixed.out;  // 7, 1, 2, 9
}

TEST(CliSubmit, MissingOrUnreadableFileSaysWhy) {
  TempDir dir;
  const auto missing = run_process({kRgbaq, "--socket", (dir.path() / "none.sock").string(), "submit",
                                    (dir.path() / "nope.csv").string()});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find((dir.path() / "nope.csv").string() + ": No such file or directory"), std::string::npos) << missing.err;
  const auto locked = dir.path() / "locked.csv";
  write_file(locked, "prompt\nfox\n");
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::others_exec | fs::perms::group_exec);
  // Root reads everything: the unreadable case runs as another uid (65534) when the test is root.
  std::vector<std::string> argv = {kRgbaq, "--socket", (dir.path() / "none.sock").string(), "submit", locked.string()};
  if (geteuid() == 0) argv.insert(argv.begin(), {"/usr/bin/env", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  else fs::permissions(locked, fs::perms::none);
  const auto denied = run_process(argv);
  EXPECT_EQ(denied.exit_code, 2) << denied.err;
  EXPECT_NE(denied.err.find(locked.string() + ": Permission denied"), std::string::npos) << denied.err;
}

TEST(CliSubmit, OutputsThatCannotBeWrittenOrAreTakenAreRefusedAtSubmit) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  // A file where the output directory must be: refused at once, no run, no retries.
  write_file(dir.path() / "blocked", "a file");
  const auto blocked = rgbaq(d, {"submit", "--prompt", "x", "--seeds", "1", "--size", "128", "--out", (dir.path() / "blocked" / "sub").string()});
  EXPECT_EQ(blocked.exit_code, 2);
  EXPECT_NE(blocked.err.find("cannot be written: " + (dir.path() / "blocked").string() + " is not a directory"), std::string::npos)
      << blocked.err;
  EXPECT_TRUE(runs(d).empty());
  // Two rows of one run on one path.
  const auto two = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string()},
                         "prompt,seed,name\nfox,1,hero\nowl,1,hero\n");
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("<stdin>:3:"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("names the image of line 2 too"), std::string::npos) << two.err;
  // A PNG of another image already at the path (here: a fox where an owl would go).
  const auto first = dir.path() / "first";
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", first.string(), "--wait"}, "prompt,seed,name\nfox,1,a\n").exit_code, 0);
  fs::create_directories(dir.path() / "second");
  fs::copy_file(first / "a_1.png", dir.path() / "second" / "b_1.png");
  const auto taken = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "second").string()},
                           "prompt,seed,name\nowl,1,b\n");
  EXPECT_EQ(taken.exit_code, 2);
  EXPECT_NE(taken.err.find("<stdin>:2: output " + (dir.path() / "second" / "b_1.png").string() +
                           " is already there and holds another image"),
            std::string::npos)
      << taken.err;
  EXPECT_EQ(runs(d).size(), 1u) << "nothing of the refused submits stays";
}

TEST(CliSubmit, ResubmittingReusesFinishedImagesAndSkipDuplicatesMakesNoEmptyRun) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const std::string file = "prompt,seed\nfox,1-2\n";
  const auto out = (dir.path() / "o").string();
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--wait"}, file).exit_code, 0);
  const auto again = rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--wait"}, file);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("run 2: 2 jobs queued"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("all their images are already there from an earlier run: reused, not rendered again"),
            std::string::npos) << again.out;
  EXPECT_NE(again.out.find("run 2: reused 2 finished images, rendered 0\n"), std::string::npos) << again.out;
  const json s = status(d);
  EXPECT_EQ(s["counters"]["images_rendered"], 2);
  EXPECT_EQ(s["counters"]["outputs_reused"], 2);
  const auto skip = rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--skip-duplicates"}, file);
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(skip.out, "nothing to queue: all 2 jobs are already queued, running or done (--skip-duplicates); no run was made\n");
  EXPECT_EQ(runs(d).size(), 2u);
}

// rgbaq as a child whose output goes to files, for a signal in the middle of it.
struct Child {
  pid_t pid = -1;
  fs::path out, err;
  Child(const fs::path& dir, std::vector<std::string> argv) : out(dir / "child.out"), err(dir / "child.err") {
    pid = fork();
    if (pid == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      const int null = open("/dev/null", O_RDONLY);
      dup2(null, 0);
      std::vector<char*> a;
      for (auto& s : argv) a.push_back(s.data());
      a.push_back(nullptr);
      execv(a[0], a.data());
      _exit(127);
    }
  }
  int wait() {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
};

TEST(CliSubmit, CtrlCDuringWaitSaysTheRunGoesOn) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);  // the run stays unfinished while we follow it
  Child c(dir.path(), {kRgbaq, "--socket", d.socket().string(), "submit", "--prompt", "fox", "--seeds", "1-3", "--size", "128",
                       "--out", (dir.path() / "o").string(), "--wait"});
  for (int i = 0; i < 400 && read_text(c.out).find("run 1:") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(read_text(c.out).find("run 1: 3 jobs queued"), std::string::npos) << read_text(c.err);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // following now
  kill(c.pid, SIGINT);
  EXPECT_EQ(c.wait(), 130);
  const std::string err = read_text(c.err);
  EXPECT_NE(err.find("stopped following run 1; the run goes on in rgbaqd."), std::string::npos) << err;
  EXPECT_NE(err.find("follow it: rgbaq --socket " + d.socket().string() + " watch 1"), std::string::npos) << err;
  EXPECT_NE(err.find("cancel 1"), std::string::npos) << err;
  EXPECT_EQ(runs(d)[0]["counts"]["queued"], 3) << "the run is still there";
}

TEST(CliQueue, CancelFinishedJobStateSpellingsListsAndLimits) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = (dir.path() / "o").string();
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1", "--size", "128", "--out", out, "--wait"}).exit_code, 0);
  const auto done = rgbaq(d, {"cancel", "--job", "1"});
  EXPECT_EQ(done.exit_code, 1);
  EXPECT_EQ(done.err, "job 1 was already done; nothing to cancel\n");
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "owl", "--seeds", "1-60", "--size", "128", "--out", out}).exit_code, 0);
  const auto one = rgbaq(d, {"cancel", "--job", "2"});
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_EQ(one.out, "job 2 canceled\n");
  EXPECT_EQ(rgbaq(d, {"cancel", "--job", "2"}).out, "job 2 was already canceled\n");
  const auto run_cancel = rgbaq(d, {"cancel", "2"});
  EXPECT_EQ(run_cancel.out, "run 2: 59 jobs canceled (a running one stops at its next step)\n");
  // Both spellings of the state.
  for (const std::string spelling : {"canceled", "cancelled"}) {
    const auto r = rgbaq(d, {"ls", "jobs", "--state", spelling, "--all", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["jobs"].size(), 60u) << spelling;
  }
  const auto listed = rgbaq(d, {"ls", "runs"});
  EXPECT_NE(listed.out.find("CANCELED"), std::string::npos) << listed.out;
  std::istringstream rows(listed.out);
  std::string header, first, second;
  std::getline(rows, header);
  std::getline(rows, first);
  std::getline(rows, second);
  std::istringstream cells(second);
  std::string id, name, total, ndone, failed, canceled, queued;
  cells >> id >> name >> total >> ndone >> failed >> canceled >> queued;
  EXPECT_EQ(id + name + total + ndone + failed + canceled + queued, "2owl6000600") << second;
  // ls jobs shows 50 by default and says how to see the rest; --all shows all 61.
  const auto page = rgbaq(d, {"ls", "jobs"});
  EXPECT_EQ(count_lines(page.out), 1u + 2 * 50 + 1) << page.out;
  EXPECT_NE(page.out.find("(the first 50 from 0; more with --offset 50, or --all for every job)"), std::string::npos);
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "jobs", "--all", "--json"}).out)["jobs"].size(), 61u);
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "jobs", "--offset", "50", "--json"}).out)["jobs"].size(), 11u);
}

}  // namespace
}  // namespace rgbaq
