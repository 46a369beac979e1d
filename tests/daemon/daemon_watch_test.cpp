// `rgbaq watch` as a person sees it: the real binaries in tmux terminals of 120 and 50 columns,
// captured with `capture-pane` (what is on the screen, not what was written): a paused queue, the job
// in hand with its run, prompt cut to the width, seed, size and step, per-run bars with an ETA, a
// resize without stale lines, and the daemon stopped and started again (reconnect, or exit with
// --no-reconnect). And the events watch is built on, from a raw watch connection.
#include <regex>
#include <thread>
#include <sstream>

#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/daemon/tmux_terminal.h"

namespace rgbaq {
namespace {

const std::string kLongPrompt =
    "a red fox sitting on a mossy rock in the early morning light, game asset, highly detailed, soft shadows";

// Columns of a captured line (UTF-8: one per code point; the lines here hold no wide characters).
size_t columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

bool any_line(const std::vector<std::string>& lines, const std::function<bool(const std::string&)>& f) {
  return std::any_of(lines.begin(), lines.end(), f);
}
bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(Watch, InTmuxAt120And50ColumnsWithResizePauseAndReconnect) {
  ASSERT_TRUE(fs::exists(tmux_path())) << "tmux is not installed (scripts/setup installs it)";
  TempDir dir;
  auto d = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{});
  ASSERT_EQ(rgbaq(*d, {"pause"}).exit_code, 0);
  write_file(dir.path() / "run1.csv", "prompt\n\"" + kLongPrompt + "\"\n");
  write_file(dir.path() / "run2.csv", "prompt,name\nan owl,owl-portrait\n");
  // 1024 px: slow enough on the tiny model that a step shows on the screen.
  for (const char* file : {"run1.csv", "run2.csv"}) {
    const auto r = rgbaq(*d, {"submit", (dir.path() / file).string(), "--seeds", "1-3", "--size", "1024", "--out",
                              (dir.path() / "out").string()});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  const fs::path tmux_socket = dir.path() / "tmux.sock";
  const std::string watch = kRgbaq + " --socket " + quoted(d->socket().string()) + " watch";
  Tmux wide(tmux_socket, "wide", 120, 20, watch);
  Tmux narrow(tmux_socket, "narrow", 50, 20, watch + " --no-reconnect; echo exit=$?; sleep 600");

  // Paused: the header says so, and each run's bar says "paused" where its ETA would be.
  ASSERT_TRUE(wide.wait_for([](const auto& lines) { return !lines.empty() && lines[0] == "rgbaqd  all runs  0 jobs in hand  queue paused"; }))
      << wide.screen();
  EXPECT_TRUE(wide.wait_for([](const auto& lines) {
    return any_line(lines, [](const std::string& l) { return starts(l, "run 1 run1  [---") && l.find("] 0/3 done  paused") != std::string::npos; }) &&
           any_line(lines, [](const std::string& l) { return starts(l, "run 2 run2  [---"); });
  })) << wide.screen();
  ASSERT_TRUE(narrow.wait_for([](const auto& lines) { return !lines.empty() && starts(lines[0], "rgbaqd  all runs  0 jobs in hand"); }))
      << narrow.screen();
  for (const auto& l : narrow.capture()) EXPECT_LE(columns(l), 49u) << l;
  for (const auto& l : wide.capture()) EXPECT_LE(columns(l), 119u) << l;

  // Resumed: the job in hand, its prompt cut to fit 120 columns, then seed, size and step on the same line.
  ASSERT_EQ(rgbaq(*d, {"resume"}).exit_code, 0);
  // The prompt is cut to fill the line to the terminal's last column but one.
  const std::regex job_line(R"(run 1 job [1-3]  a red fox sitting on a mossy rock[^…]*…  seed [1-3]  1024x1024  \[[#-]+\] (step [0-8]/8|decoding))");
  ASSERT_TRUE(wide.wait_for([&](const auto& lines) {
    return any_line(lines, [&](const std::string& l) { return std::regex_match(l, job_line) && columns(l) == 119; });
  })) << wide.screen();
  // An ETA from measured steps (not "?") once a step or two of the size were seen.
  const std::regex eta(R"(run 1 run1  \[[#-]+\] [0-3]/3 done  ETA ([0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m))");
  EXPECT_TRUE(wide.wait_for([&](const auto& lines) { return any_line(lines, [&](const std::string& l) { return std::regex_match(l, eta); }); }))
      << wide.screen();
  for (const auto& l : wide.capture()) EXPECT_LE(columns(l), 119u) << l;
  // 50 columns: the prompt on its own line, cut; seed, size and step below it.
  EXPECT_TRUE(narrow.wait_for([](const auto& lines) {
    return any_line(lines, [](const std::string& l) { return starts(l, "run 1 job ") && l.ends_with("…") && columns(l) == 49; }) &&
           any_line(lines, [](const std::string& l) { return std::regex_match(l, std::regex("  seed [1-3]  1024x1024  (step [0-8]/8|decoding)")); });
  })) << narrow.screen();

  // Resized to 50 columns: a frame for the new width and nothing left of the wide one.
  wide.resize(50, 20);
  EXPECT_TRUE(wide.wait_for([](const auto& lines) {
    size_t headers = 0;
    for (const auto& l : lines) {
      if (columns(l) > 49) return false;
      headers += starts(l, "rgbaqd  all runs");
    }
    return headers == 1 && any_line(lines, [](const std::string& l) { return starts(l, "run 1 job ") || starts(l, "run 2 job "); });
  })) << wide.screen();
  // And back to 120: one frame again, the bars wide.
  wide.resize(120, 20);
  EXPECT_TRUE(wide.wait_for([](const auto& lines) {
    size_t headers = 0;
    for (const auto& l : lines) headers += starts(l, "rgbaqd  all runs");
    return headers == 1 && any_line(lines, [](const std::string& l) { return starts(l, "run 2 run2  [") && columns(l) > 60; });
  })) << wide.screen();

  // The daemon stops: the watch says so and waits; --no-reconnect exits 1.
  ASSERT_EQ(rgbaq(*d, {"pause"}).exit_code, 0);  // no more renders: the rest of the test needs none
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait_exit(), 0);
  d.reset();
  EXPECT_TRUE(wide.wait_for([](const auto& lines) {
    return !lines.empty() && std::regex_search(lines[0], std::regex("rgbaqd went away [0-9]+s ago; reconnecting"));
  })) << wide.screen();
  EXPECT_TRUE(narrow.wait_for([](const auto& lines) {
    return any_line(lines, [](const std::string& l) { return l == "rgbaqd closed the connection"; }) &&
           any_line(lines, [](const std::string& l) { return l == "exit=1"; });
  })) << narrow.screen();
  // It comes back on the same socket and queue: the watch reconnects and follows the runs again.
  d = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{});
  EXPECT_TRUE(wide.wait_for([](const auto& lines) {
    return !lines.empty() && lines[0] == "rgbaqd  all runs  0 jobs in hand  queue paused" &&
           any_line(lines, [](const std::string& l) { return starts(l, "run 2 run2  ["); });
  })) << wide.screen();
  rgbaq(*d, {"cancel", "1"});
  rgbaq(*d, {"cancel", "2"});
}

// A run of two sizes on one worker (issue 27, item 7): the ETA comes from the first measured steps,
// the size not yet rendered scaled from them and shown as a guess ("ETA ~", not "ETA ?"), and a job
// whose PNG is being written while the worker renders the next is not a second job in hand.
TEST(Watch, TwoSizesGetAGuessedEtaAndOneWorkerHoldsOneJob) {
  ASSERT_TRUE(fs::exists(tmux_path())) << "tmux is not installed (scripts/setup installs it)";
  TempDir dir;
  auto d = std::make_unique<DaemonProcess>(kRgbaqd, model().dir(), dir.path(), DaemonProcess::Options{});
  ASSERT_EQ(rgbaq(*d, {"pause"}).exit_code, 0);
  write_file(dir.path() / "two.csv", "prompt,seed,size\na fox,1-3,512\nan owl,1,768\n");
  ASSERT_EQ(rgbaq(*d, {"submit", (dir.path() / "two.csv").string(), "--out", (dir.path() / "out").string()}).exit_code, 0);
  const fs::path tmux_socket = dir.path() / "tmux.sock";
  Tmux wide(tmux_socket, "wide", 120, 20, kRgbaq + " --socket " + quoted(d->socket().string()) + " watch 1");
  ASSERT_TRUE(wide.wait_for([](const auto& lines) { return !lines.empty() && lines[0].find("queue paused") != std::string::npos; }))
      << wide.screen();
  ASSERT_EQ(rgbaq(*d, {"resume"}).exit_code, 0);
  const std::regex guessed(R"(run 1 two  \[[#-]+\] [0-3]/4 done  ETA ~([0-9]+s|[0-9]+m[0-9]{2}s|[0-9]+h[0-9]{2}m))");
  bool seen_guess = false, two_in_hand = false;
  std::string two_screen;
  for (int i = 0; i < 600; ++i) {
    const auto lines = wide.capture();
    if (!lines.empty() && lines[0].find("2 jobs in hand") != std::string::npos && !two_in_hand) {
      two_in_hand = true;
      for (const auto& l : lines) two_screen += l + "\n";
    }
    seen_guess = seen_guess || any_line(lines, [&](const std::string& l) { return std::regex_match(l, guessed); });
    if (json::parse(rgbaq(*d, {"ls", "runs", "--json"}).out)["runs"][0]["counts"]["done"] == 4) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(seen_guess) << "no guessed ETA while the owl's size was unmeasured; last screen:\n" << wide.screen();
  EXPECT_FALSE(two_in_hand) << "one worker, two jobs in hand:\n" << two_screen;
}

TEST(Watch, EventsCarryWhatWatchShows) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  Raw w(d.socket());
  ASSERT_TRUE(w.send_all(R"({"v":1,"id":1,"method":"watch"})" "\n"));
  ASSERT_NE(w.read_line().find("watching"), std::string::npos);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "256", "--out", (dir.path() / "o").string()}, "prompt,seed,name\nfox,7,fox-7\n").exit_code, 0);
  std::vector<json> events;
  for (std::string line; (line = w.read_line()) != "";) {
    events.push_back(json::parse(line));
    if (events.back()["event"] == "job_done") break;
  }
  ASSERT_FALSE(events.empty());
  ASSERT_EQ(events.front()["event"], "job_started");
  EXPECT_EQ(events.front()["name"], "fox-7");
  EXPECT_EQ(events.front()["prompt"], "fox");
  EXPECT_EQ(events.front()["seed"], 7);
  EXPECT_EQ(events.front()["width"], 256);
  EXPECT_EQ(events.front()["height"], 256);
  std::vector<std::string> kinds;
  for (const auto& e : events) kinds.push_back(e["event"]);
  // Eight steps, then the decode, then the image.
  ASSERT_EQ(kinds.size(), 11u) << json(kinds).dump();
  for (int i = 1; i <= 8; ++i) {
    EXPECT_EQ(events[size_t(i)]["event"], "progress");
    EXPECT_EQ(events[size_t(i)]["step"], i);
    EXPECT_EQ(events[size_t(i)]["width"], 256);
    EXPECT_GT(events[size_t(i)]["step_s"].get<double>(), 0.0);
  }
  EXPECT_EQ(kinds[9], "decoding");
  EXPECT_EQ(kinds[10], "job_done");
  EXPECT_GT(events[10]["seconds"].get<double>(), 0.0);

  // The image names its model by name and hash, not by where it lies; the queue database keeps the path.
  const auto png = storage::read_png(events[10]["path"].get<std::string>());
  const std::string hash = status(d)["model_identity"].get<std::string>().substr(0, 10);
  EXPECT_NE(png.texts.at("parameters").find(", Model hash: " + hash + ", Model: model,"), std::string::npos) << png.texts.at("parameters");
  for (const auto& [key, text] : png.texts) EXPECT_EQ(text.find(model().dir().string()), std::string::npos) << key;
  const auto exported = json::parse(rgbaq(d, {"export", "1", "--format", "jsonl"}).out);
  EXPECT_EQ(exported["metadata"]["model"]["path"], fs::absolute(model().dir()).lexically_normal().string());
}

}  // namespace
}  // namespace rgbaq
