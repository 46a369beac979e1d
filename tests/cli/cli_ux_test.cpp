// What a new user meets, through the real rgbaq and rgbaqd binaries: per-command help, --version,
// the service files, one-prompt submits, honest messages for options that lose to columns, bad
// options, missing or unreadable files, output clashes and unwritable outputs found at submit, reused
// images, Ctrl-C during --wait, --wait across a daemon restart, cancel of a finished or running job,
// listings with their times, empty prompts, an unclosed quote, a ';' file, an export submitted again,
// a missing model, and watch --until-done beside an older canceled run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <regex>
#include <sstream>
#include <thread>
#include <tuple>

#include "storage/png_file.h"
#include "tests/cli/child_process.h"
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
  // A reused image is said to be reused, not rendered (issue 27, item 7), each of them: the wait
  // watches before the run exists (under TSan both were reused before a wait that subscribed after).
  for (const std::string job : {"3", "4"}) {
    EXPECT_TRUE(std::regex_search(again.out, std::regex("job " + job + " reused: " + out + "/fox-[0-9a-f]+_[12]\\.png  \\([12]/2 done\\)\n")))
        << again.out;
  }
  EXPECT_EQ(again.out.find(" done: "), std::string::npos) << again.out;
  const json s = status(d);
  EXPECT_EQ(s["counters"]["images_rendered"], 2);
  EXPECT_EQ(s["counters"]["outputs_reused"], 2);
  const auto skip = rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--skip-duplicates"}, file);
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_EQ(skip.out, "nothing to queue: all 2 jobs are already queued, running or done (--skip-duplicates); no run was made\n");
  EXPECT_EQ(runs(d).size(), 2u);
}

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

TEST(CliSubmit, WaitFollowsTheRunAcrossADaemonKilledAndStartedAgain) {
  TempDir dir;
  auto d = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{});
  ASSERT_EQ(rgbaq(*d, {"pause"}).exit_code, 0);  // the run waits in the queue while the daemon goes
  Child c(dir.path(), {kRgbaq, "--socket", d->socket().string(), "submit", "--prompt", "fox", "--seeds", "1-3", "--size", "128",
                       "--out", (dir.path() / "o").string(), "--wait"});
  for (int i = 0; i < 400 && read_text(c.out).find("run 1:") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(read_text(c.out).find("run 1: 3 jobs queued"), std::string::npos) << read_text(c.err);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // following now
  d->signal(SIGKILL);
  d->wait_exit();
  d.reset();
  for (int i = 0; i < 200 && read_text(c.out).find("rgbaqd went away") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(read_text(c.out).find("rgbaqd went away; waiting for it to return"), std::string::npos) << read_text(c.out) << read_text(c.err);
  d = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{});
  ASSERT_EQ(rgbaq(*d, {"resume"}).exit_code, 0);
  EXPECT_EQ(c.wait(), 0) << read_text(c.out) << read_text(c.err);
  const std::string out = read_text(c.out);
  EXPECT_NE(out.find("rgbaqd is back"), std::string::npos) << out;
  EXPECT_NE(out.find("run 1: 3 done, 0 failed, 0 canceled of 3"), std::string::npos) << out;
  EXPECT_EQ(pngs_in(dir.path() / "o").size(), 3u);
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
  EXPECT_EQ(run_cancel.out, "run 2: 59 jobs canceled\n");  // paused: none running
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

TEST(CliSubmit, EmptyPromptsUnclosedQuotesSemicolonsAndTheSeedOption) {
  TempDir dir;
  const std::string none = (dir.path() / "none.sock").string();  // the file's own errors need no daemon
  auto submit = [&](const std::string& name, const std::string& text, std::vector<std::string> extra = {}) {
    write_file(dir.path() / name, text);
    std::vector<std::string> argv = {kRgbaq, "--socket", none, "submit", (dir.path() / name).string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv);
  };
  const std::string empty_csv = (dir.path() / "empty.csv").string();
  const auto empty = submit("empty.csv", "prompt,seed\n\"\",1\n   ,2\nfox,3\n\"<lora:detail:0.5>\",4\n");
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find(empty_csv + ":2:1: prompt: is empty"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find(empty_csv + ":3:1: prompt: has no text"), std::string::npos) << empty.err;
  EXPECT_NE(empty.err.find(empty_csv + ":5:1: prompt: has no text"), std::string::npos) << empty.err;
  EXPECT_EQ(empty.err.find(":4:"), std::string::npos) << "the fox is fine:\n" << empty.err;
  EXPECT_NE(empty.err.find("3 errors; nothing was queued"), std::string::npos) << empty.err;
  const auto jsonl = submit("empty.jsonl", "{\"prompt\": \"\\t \"}\n");
  EXPECT_EQ(jsonl.exit_code, 2);
  EXPECT_NE(jsonl.err.find("empty.jsonl:1: prompt: has no text"), std::string::npos) << jsonl.err;
  const auto option = run_process({kRgbaq, "--socket", none, "submit", "--prompt", "  "});
  EXPECT_EQ(option.exit_code, 2);
  EXPECT_NE(option.err.find("prompt: has no text"), std::string::npos) << option.err;

  // The quote opened on line 2 swallows line 3 up to its quote: the error is where it opened.
  const auto quote = submit("quote.csv", "prompt,seed\n\"a fox,1\nan owl,\"2\"\n");
  EXPECT_EQ(quote.exit_code, 2);
  EXPECT_NE(quote.err.find("quote.csv:2:1: this quote is not closed on its line"), std::string::npos) << quote.err;
  EXPECT_NE(quote.err.find("runs on to line 3"), std::string::npos) << quote.err;
  const auto never = submit("never.csv", "prompt,seed\nfox,1\n\"an owl,2\n");
  EXPECT_NE(never.err.find("never.csv:3:1: a quoted field is never closed"), std::string::npos) << never.err;

  // A spreadsheet's ';' file: one error that says so.
  const auto semi = submit("semi.csv", "prompt;seed;size\na fox;1;256\nan owl;2;256\n");
  EXPECT_EQ(semi.exit_code, 2);
  EXPECT_EQ(semi.err, (dir.path() / "semi.csv").string() + ":1: this file uses ';', not ',', between fields: save it as CSV "
                      "with commas (or write it as JSONL, one {\"prompt\": ...} a line)\n1 error; nothing was queued\n");

  // --seed as rgbaqd render spells it; another near miss is named.
  TempDir d_dir;
  DaemonProcess d(kRgbaqd, model().dir(), d_dir.path(), {});
  const auto seed = rgbaq(d, {"submit", "--prompt", "fox", "--seed", "1-3", "--size", "128", "--out", (dir.path() / "o").string(),
                              "--dry-run"});
  EXPECT_EQ(seed.exit_code, 0) << seed.err;
  EXPECT_EQ(seed.out, "--prompt: 3 jobs, valid; nothing was queued (--dry-run)\n");
  const auto sizes = rgbaq(d, {"submit", "--prompt", "fox", "--sizes", "128"});
  EXPECT_EQ(sizes.exit_code, 2);
  EXPECT_NE(sizes.err.find("unknown option --sizes (did you mean --size?)"), std::string::npos) << sizes.err;
}

// `rgbaq export --format csv` submits again: the same prompts (a formula-like one without the '
// the export puts before it), seeds, sizes and names; the export's other columns are named once.
TEST(CliSubmit, TheCsvExportSubmitsAgain) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  struct Row {
    std::string prompt, name;
    uint64_t seed;
    int width, height;
  };
  const std::vector<Row> rows = {{"=1+1 a fox, \"quoted\"", "", 5, 128, 128}, {"-an owl", "owl", 9, 192, 128}, {"'a cat", "", 2, 128, 192}};
  std::string jsonl;
  for (const auto& r : rows) {
    json row = {{"prompt", r.prompt}, {"seed", r.seed}, {"size", std::to_string(r.width) + "x" + std::to_string(r.height)}};
    if (!r.name.empty()) row["name"] = r.name;
    jsonl += row.dump() + "\n";
  }
  write_file(dir.path() / "rows.jsonl", jsonl);
  ASSERT_EQ(rgbaq(d, {"submit", (dir.path() / "rows.jsonl").string(), "--out", (dir.path() / "first").string(), "--wait"}).exit_code, 0);
  const fs::path exported = dir.path() / "run1.csv";
  ASSERT_EQ(rgbaq(d, {"export", "1", "--format", "csv", "-o", exported.string()}).exit_code, 0);
  ASSERT_EQ(read_text(exported).find("'=1+1"), read_text(exported).find("=1+1") - 1) << "the export neutralises it:\n" << read_text(exported);

  const auto again = rgbaq(d, {"submit", exported.string(), "--out", (dir.path() / "second").string(), "--wait"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.err.find("note: " + exported.string() + " is an rgbaq export: its columns job, run, state, output, error, "
                           "attempts, seconds, host, mark, template, choices, qa, replaces are no job fields and are ignored "
                           "(width and height give the size)\n"),
            std::string::npos)
      << again.err;
  const auto files = pngs_in(dir.path() / "second");
  ASSERT_EQ(files.size(), rows.size());
  std::set<std::tuple<std::string, uint64_t, int, int>> wanted, got;
  for (const auto& r : rows) wanted.insert({r.prompt, r.seed, r.width, r.height});
  for (const auto& f : files) {
    const auto png = storage::read_png(f);
    const json meta = json::parse(png.texts.at("rgbaq"));
    got.insert({meta["prompt"].get<std::string>(), meta["seed"].get<uint64_t>(), png.width, png.height});
  }
  EXPECT_EQ(got, wanted);
  EXPECT_TRUE(fs::exists(dir.path() / "second" / "owl_9.png")) << "the name is kept";
  // An ordinary file with one of those columns is still a typo to report, not to ignore.
  const auto typo = rgbaq(d, {"submit", "-", "--dry-run"}, "prompt,state\nfox,done\n");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("unknown column \"state\""), std::string::npos) << typo.err;
}

TEST(CliQueue, CancelCountsARunningJobApartAndLsRunsShowsTimes) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  auto minute = [](std::time_t t) {
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
    return std::string(buf);
  };
  const std::time_t before = std::time(nullptr);
  // 1024 px on the tiny model: slow enough to be caught at a step.
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-6", "--size", "1024", "--out", (dir.path() / "o").string()}).exit_code, 0);
  bool running = false;
  for (int i = 0; i < 600 && !running; ++i) {
    running = json::parse(rgbaq(d, {"ls", "jobs", "--state", "running", "--json"}).out)["jobs"].size() == 1;
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(running);
  const auto cancel = rgbaq(d, {"cancel", "1"});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(cancel.out, m, std::regex("run 1: ([0-9]+) jobs canceled; 1 running job asked to stop at its next "
                                                         "step \\(one already decoding ends done\\)\n")))
      << cancel.out;
  const int canceled_now = std::stoi(m[1]);
  json run;
  for (int i = 0; i < 600; ++i) {
    run = runs(d)[0];
    if (run["counts"]["running"] == 0 && run["counts"]["queued"] == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // What was said canceled is canceled; the one asked to stop ended canceled or (past its steps) done.
  const int done = run["counts"]["done"], canceled = run["counts"]["canceled"];
  EXPECT_EQ(done + canceled, 6) << run;
  EXPECT_TRUE(canceled == canceled_now || canceled == canceled_now + 1) << canceled_now << " said canceled: " << run;

  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "owl", "--seeds", "1", "--size", "128", "--out", (dir.path() / "o").string()}).exit_code, 0);
  const std::time_t after = std::time(nullptr);
  const auto listed = rgbaq(d, {"ls", "runs"});
  std::istringstream lines(listed.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_NE(header.find("  SUBMITTED         FINISHED          OUT"), std::string::npos) << header;
  // Run 1: submitted and finished within the test's own minutes; run 2 is still queued: no end.
  std::set<std::string> minutes;
  for (std::time_t t = before - before % 60; t <= after; t += 60) minutes.insert(minute(t));
  std::smatch t1, t2;
  ASSERT_TRUE(std::regex_search(first, t1, std::regex("  ([0-9-]{10} [0-9:]{5})  ([0-9-]{10} [0-9:]{5})  " + (dir.path() / "o").string())))
      << first;
  EXPECT_TRUE(minutes.count(t1[1]) && minutes.count(t1[2])) << first;
  ASSERT_TRUE(std::regex_search(second, t2, std::regex("  ([0-9-]{10} [0-9:]{5})  - +" + (dir.path() / "o").string())))
      << second;
  EXPECT_TRUE(minutes.count(t2[1])) << second;
  const json listed_json = runs(d);
  EXPECT_FALSE(listed_json[1].contains("finished_at"));
}

// The name --prompt gives a run is what the help says (issue 27, item 8: the help said "prompt").
TEST(CliSubmit, APromptRunIsNamedAsTheHelpSays) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const std::string prompt = "a red fox sitting on a mossy rock in the early morning light";
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", prompt, "--seeds", "1", "--size", "128", "--out", (dir.path() / "o").string()}).exit_code, 0);
  EXPECT_EQ(runs(d)[0]["name"], prompt.substr(0, 40) + "...");
  const std::string help = run_process({kRgbaq, "submit", "--help"}).out;
  EXPECT_NE(help.find("first 40 bytes for --prompt"), std::string::npos) << help;
  EXPECT_EQ(help.find("\"prompt\" for"), std::string::npos) << help;
}

// A --model that holds no model is bad input (exit 2), and the message says how to get one.
TEST(CliDaemon, AMissingModelIsBadInputAndSaysHowToGetOne) {
  TempDir dir;
  const fs::path missing = dir.path() / "no-model";
  const auto serve = run_process({kRgbaqd, "--model", missing.string(), "--socket", (dir.path() / "run" / "s.sock").string(),
                                  "--data-dir", (dir.path() / "data").string(), "--http", "off"});
  EXPECT_EQ(serve.exit_code, 2) << serve.err;
  EXPECT_NE(serve.err.find(missing.string() + " holds no model"), std::string::npos) << serve.err;
  EXPECT_NE(serve.err.find("tools/make_tiny_model " + missing.string()), std::string::npos) << serve.err;
  EXPECT_NE(serve.err.find("Qwen/Qwen-Image-2.1-Turbo"), std::string::npos) << serve.err;
  const auto render = run_process({kRgbaqd, "render", "--model", missing.string(), "--prompt", "fox", "-o",
                                   (dir.path() / "fox.png").string()});
  EXPECT_EQ(render.exit_code, 2) << render.err;
  EXPECT_NE(render.err.find("tools/make_tiny_model " + missing.string()), std::string::npos) << render.err;
}

// `watch --until-done` is about the runs it follows: an older canceled run is history (issue 27, item 8).
TEST(CliWatch, UntilDoneIsNotFailedByAnOlderCanceledRun) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = (dir.path() / "o").string();
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-2", "--size", "128", "--out", out}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "owl", "--seeds", "1-2", "--size", "128", "--out", out}).exit_code, 0);
  Child watch(dir.path(), {kRgbaq, "--socket", d.socket().string(), "watch", "--until-done"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // watching the paused queue
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  EXPECT_EQ(watch.wait(), 0) << read_text(watch.out) << read_text(watch.err);
  EXPECT_NE(read_text(watch.out).find("all runs: 2 done, 0 failed, 0 canceled of 2\n"), std::string::npos) << read_text(watch.out);
  // Following the canceled run itself still says it did not all get done.
  EXPECT_EQ(rgbaq(d, {"watch", "1"}).exit_code, 1);
}

// A 30-seed sweep is two rows of at most 16 on the sheet, not one strip (issue 27, item 6); --columns
// 0 keeps the strip, --columns 10 makes three rows.
TEST(CliSheet, AThirtySeedSweepWrapsIntoRows) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto out = dir.path() / "o";
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-30", "--size", "128", "--out", out.string(), "--wait"}).exit_code, 0);
  const auto sheet = rgbaq(d, {"sheet", "1"});
  ASSERT_EQ(sheet.exit_code, 0) << sheet.err;
  EXPECT_EQ(sheet.out, (out / ".rgbaq" / "sheets" / "sheet_run1.png").string() + " (2 rows x 16 columns)\n");
  const auto png = storage::read_png(out / ".rgbaq" / "sheets" / "sheet_run1.png");
  // By hand: 8 px margin, a 192 px label column (128 * 1.5), 4 px gutters, 16 cells of 128 px, 8 px margin.
  EXPECT_EQ(png.width, 8 + 192 + 4 + 16 * (128 + 4) - 4 + 8);
  const json legend = json::parse(png.texts.at("rgbaq-sheet"));
  ASSERT_EQ(legend["row_columns"].size(), 2u);
  EXPECT_EQ(legend["row_columns"][1][13], "seed 30");
  const auto ten = rgbaq(d, {"sheet", "1", "--columns", "10", "-o", (dir.path() / "ten.png").string()});
  EXPECT_EQ(ten.out, (dir.path() / "ten.png").string() + " (3 rows x 10 columns)\n") << ten.err;
  const auto strip = rgbaq(d, {"sheet", "1", "--columns", "0", "-o", (dir.path() / "strip.png").string()});
  EXPECT_EQ(strip.out, (dir.path() / "strip.png").string() + " (1 row x 30 columns)\n") << strip.err;
}

}  // namespace
}  // namespace rgbaq
