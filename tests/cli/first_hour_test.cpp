// The first hour, third pass (issue 43): a new user's surprises with the CLI, each through the real
// rgbaq and rgbaqd binaries: --prompt's --name names its files; an option every row overrides is
// said once; `ls runs` has a RUNNING column; gallery and http-url have their own help and a mistyped
// command gets a guess; retry of a canceled run points at --canceled; watch off a terminal counts
// each line's own run, one job at a time; `ls jobs` shows no image for a canceled job.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <SQLiteCpp/SQLiteCpp.h>

#include "tests/cli/child_process.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(FirstHour, APromptsNameNamesItsFilesAsARowsNameDoes) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "o";
  const auto r = rgbaq(d, {"submit", "--prompt", "an ancient scroll", "--name", "scroll", "--seeds", "1-2", "--size", "128", "--out",
                           out.string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(out / "scroll_1.png")) << r.out;
  EXPECT_TRUE(fs::exists(out / "scroll_2.png")) << r.out;
  EXPECT_EQ(pngs_in(out).size(), 2u);
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"][0]["name"], "scroll");
  // A name no file may have is refused, as a row's is, with a spelling that works; nothing queued.
  const auto bad = rgbaq(d, {"submit", "--prompt", "a hero", "--name", "Hero Shot", "--seeds", "1", "--size", "128", "--out", out.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--name \"Hero Shot\""), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("\"Hero_Shot\""), std::string::npos) << bad.err;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 1u);
}

TEST(FirstHour, AnOptionTheFileOverridesIsSaidOnceNamingTheOptionAndTheColumn) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  // The README's line on the example file: its rows set seed and size, so --seeds and --size give way.
  const std::string example = (fs::path(RGBAQ_SOURCE_DIR_PATH) / "examples" / "prompts.csv").string();
  const auto r = rgbaq(d, {"submit", example, "--seeds", "1-16", "--size", "1024", "--out", (dir.path() / "o").string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, example + ": 10 jobs, valid; nothing was queued (--dry-run)\n");
  EXPECT_NE(r.err.find("note: " + example + ": the seed column wins over --seeds 1-16 on lines 2, 3, 4, 5 (every row: --seeds is not used)\n"),
            std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: " + example + ": the size column wins over --size 1024 on lines 2, 3, 4, 5 (every row: --size is not used)\n"),
            std::string::npos) << r.err;
  size_t size_notes = 0;
  for (const auto& l : lines_of(r.err)) size_notes += l.find("--size") != std::string::npos;
  EXPECT_EQ(size_notes, 1u) << "once, not a line per row:\n" << r.err;

  // Some rows: the lines named, and the option still applies to the others. JSONL says "field".
  write_file(dir.path() / "mixed.jsonl", "{\"prompt\": \"fox\", \"size\": \"128\", \"priority\": 3}\n{\"prompt\": \"owl\", \"priority\": 4}\n");
  const auto mixed = rgbaq(d, {"submit", (dir.path() / "mixed.jsonl").string(), "--size", "256", "--priority", "9", "--seeds", "1",
                               "--out", (dir.path() / "o").string(), "--dry-run"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  const std::string file = (dir.path() / "mixed.jsonl").string();
  EXPECT_NE(mixed.err.find("note: " + file + ": the size field wins over --size 256 on line 1 (--size applies to the other rows)\n"),
            std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("note: " + file + ": the priority field wins over --priority 9 on lines 1, 2 (every row: --priority is not used)\n"),
            std::string::npos) << mixed.err;
  // An option no row overrides, or one not given, is not mentioned.
  const auto plain = rgbaq(d, {"submit", "-", "--size", "128", "--out", (dir.path() / "o").string(), "--dry-run"}, "prompt\nfox\n");
  EXPECT_EQ(plain.err, "") << plain.err;
}

TEST(FirstHour, LsRunsHasARunningColumn) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  // 1024 px on the tiny model: slow enough to be caught running.
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-4", "--size", "1024", "--out", (dir.path() / "o").string()}).exit_code, 0);
  std::string header, row;
  for (int i = 0; i < 600; ++i) {
    if (json::parse(rgbaq(d, {"ls", "jobs", "--state", "running", "--json"}).out)["jobs"].size() == 1) {
      const auto lines = lines_of(rgbaq(d, {"ls", "runs"}).out);
      ASSERT_EQ(lines.size(), 2u);
      header = lines[0], row = lines[1];
      const json counts = json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"][0]["counts"];
      if (counts["running"] == 1) break;  // still running when listed
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(header.empty()) << "no job was seen running";
  EXPECT_NE(header.find("  QUEUED  RUNNING  SUBMITTED"), std::string::npos) << header;
  std::istringstream cells(row);
  std::string id, name, total, done, failed, canceled, queued, running;
  cells >> id >> name >> total >> done >> failed >> canceled >> queued >> running;
  EXPECT_EQ(running, "1") << header << "\n" << row;
  EXPECT_EQ(std::stoi(done) + std::stoi(queued) + std::stoi(running), 4) << header << "\n" << row;
  ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
}

TEST(FirstHour, GalleryAndHttpUrlHaveTheirOwnHelpAndAMistypedCommandIsGuessed) {
  const auto global = run_process({kRgbaq, "--help"});
  for (const std::string command : {"gallery", "http-url", "rm"}) {
    const auto h = run_process({kRgbaq, command, "--help"});
    EXPECT_EQ(h.exit_code, 0) << command;
    EXPECT_EQ(h.out.rfind("usage: rgbaq " + command, 0), 0u) << command << ":\n" << h.out;
    EXPECT_NE(h.out, global.out) << command;
  }
  EXPECT_NE(run_process({kRgbaq, "gallery", "--help"}).out.find("--print"), std::string::npos);
  EXPECT_NE(run_process({kRgbaq, "http-url", "--help"}).out.find("--no-token"), std::string::npos);
  // retry's help names every option it takes.
  const auto retry = run_process({kRgbaq, "retry", "--help"}).out;
  EXPECT_NE(retry.find("--failed"), std::string::npos) << retry;
  EXPECT_NE(retry.find("--canceled"), std::string::npos) << retry;
  // A command one or two keys off is named, as an option is.
  const auto typo = run_process({kRgbaq, "submti", "prompts.csv"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.err.rfind("rgbaq: unknown command \"submti\" (did you mean submit?)\n", 0), 0u) << typo.err;
  EXPECT_NE(run_process({kRgbaq, "stauts"}).err.find("(did you mean status?)"), std::string::npos);
  const auto far = run_process({kRgbaq, "frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
  EXPECT_NE(far.err.find("usage: rgbaq"), std::string::npos) << far.err;
}

TEST(FirstHour, RetryOfACanceledRunSaysHowToTakeItsCanceledJobs) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-3", "--size", "128", "--out", (dir.path() / "o").string()}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
  const auto plain = rgbaq(d, {"retry", "1"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "run 1: 0 jobs queued again: it has no failed jobs, and its 3 canceled jobs stay canceled "
                       "(rgbaq retry 1 --canceled takes them)\n");
  const auto failed = rgbaq(d, {"retry", "1", "--failed"});
  EXPECT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_EQ(failed.out, plain.out);
  const auto canceled = rgbaq(d, {"retry", "1", "--canceled"});
  EXPECT_EQ(canceled.out, "run 1: 3 jobs queued again\n") << canceled.err;
  const auto nothing = rgbaq(d, {"retry", "1", "--canceled"});
  EXPECT_EQ(nothing.out, "run 1: 0 jobs queued again: it has no failed or canceled jobs\n") << nothing.err;
}

TEST(FirstHour, LsJobsShowsNoImageForACanceledJob) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const fs::path out = dir.path() / "o";
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-2", "--size", "128", "--out", out.string()}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"cancel", "--job", "1"}).exit_code, 0);
  const auto lines = lines_of(rgbaq(d, {"ls", "jobs"}).out);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[1].rfind("1       1     canceled", 0), 0u) << lines[1];
  EXPECT_EQ(lines[2], std::string(65, ' ') + "canceled: no image") << lines[2];
  EXPECT_EQ(lines[3].rfind("2       1     queued", 0), 0u) << lines[3];
  EXPECT_NE(lines[4].find(out.string() + "/fox-"), std::string::npos) << "where the queued job will write: " << lines[4];
}

TEST(FirstHour, WatchOffATerminalCountsEachLinesOwnRunNotEveryJobEver) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "o";
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "fox", "--seeds", "1-3", "--size", "128", "--out", out.string(), "--wait"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "--prompt", "owl", "--seeds", "1-2", "--size", "128", "--out", out.string()}).exit_code, 0);
  Child watch(dir.path(), {kRgbaq, "--socket", d.socket().string(), "watch", "--until-done"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // watching the paused queue
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  ASSERT_EQ(watch.wait(), 0) << read_all(watch.out) << read_all(watch.err);
  const std::string text = read_all(watch.out);
  EXPECT_TRUE(std::regex_search(text, std::regex("job 4 done: [^\n]*owl[^\n]*_1\\.png  \\(run 2: 1/2 done\\)\n"))) << text;
  EXPECT_TRUE(std::regex_search(text, std::regex("job 5 done: [^\n]*owl[^\n]*_2\\.png  \\(run 2: 2/2 done\\)\n"))) << text;
  EXPECT_EQ(text.find("/5 done"), std::string::npos) << "the older run's jobs are not this watch's: " << text;
}

// A second scripts/run reuses its 10 images; its lines counted 3, 4, 4, 4 of 10 (the queue's counts
// read at other moments than the events). Each line counts one more, from 1 to 10, every time.
TEST(FirstHour, ReusedLinesCountOneJobAtATime) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const std::vector<std::string> submit = {"submit", "--prompt", "fox", "--seeds", "1-10", "--size", "128", "--out",
                                           (dir.path() / "o").string(), "--wait"};
  ASSERT_EQ(rgbaq(d, submit).exit_code, 0);
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto again = rgbaq(d, submit);
    ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
    std::vector<int> counts;
    std::smatch m;
    for (const auto& l : lines_of(again.out)) {
      if (std::regex_search(l, m, std::regex(" reused: .*  \\(([0-9]+)/10 done\\)$"))) counts.push_back(std::stoi(m[1]));
    }
    EXPECT_EQ(counts, (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})) << "resubmit " << attempt + 1 << ":\n" << again.out;
  }
}

// A daemon that dies under `submit --wait` (issue 43, item 1): the client says so and shows the
// daemon's own last error, from its log, instead of only that the connection closed.
TEST(FirstHour, SubmitWaitShowsTheDaemonsLastErrorWhenItDies) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--busy-timeout-ms", "100", "--unhealthy-exit-s", "2"}});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  Child wait(dir.path(), {kRgbaq, "--socket", d.socket().string(), "submit", "--prompt", "fox", "--seeds", "1", "--size", "128", "--out",
                          (dir.path() / "o").string(), "--wait"});
  std::this_thread::sleep_for(std::chrono::milliseconds(800));  // following the paused run
  // Another process holds the queue's write lock for good: the daemon gives up, saying why.
  SQLite::Database db((d.data_dir() / "queue.db").string(), SQLite::OPEN_READWRITE);
  db.exec("BEGIN IMMEDIATE");
  EXPECT_EQ(d.wait_exit(std::chrono::seconds(30)), 1);
  std::string err;
  for (int i = 0; i < 50 && err.find("rgbaqd's last error") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    err = read_all(wait.err);
  }
  kill(wait.pid, SIGINT);
  wait.wait();
  EXPECT_NE(err.find("rgbaqd's last error: "), std::string::npos) << err << read_all(wait.out);
  EXPECT_NE(err.find("has not recovered in"), std::string::npos) << err;
}

}  // namespace
}  // namespace rgbaq
