// rgbaqd and rgbaq as real processes on the tiny model: submit and wait, the encoder cache in memory
// and on disk, SIGKILL at random moments, SIGTERM, bad input through the CLI and on the socket, the
// service manager's side (socket activation, sd_notify, unit files), and the errors a user can cause.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/peer_credentials.h"
#include "daemon/socket/listen_socket.h"
#include "jobs/csv_reader.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "storage/png_file.h"
#include "storage/sqlite/sqlite_queue_store.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_process.h"
#include "tests/engine/tiny_model_fixture.h"
#include "tests/run_process.h"

namespace rgbaq {
namespace {

TEST(Daemon, SubmitThreePromptsFourSeedsEncodesEachPromptOnce) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  write_file(dir.path() / "prompts.csv", "prompt,seed\n\"a red fox, game asset\",1-4\n\"an owl\",1-4\n\"a \"\"quoted\"\" cat\",1-4\n");
  const auto out_dir = dir.path() / "renders";
  const auto r = rgbaq(d, {"submit", (dir.path() / "prompts.csv").string(), "--size", "128", "--out", out_dir.string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("run 1: 12 jobs queued"), std::string::npos) << r.out;
  const auto files = pngs_in(out_dir);
  ASSERT_EQ(files.size(), 12u);
  std::set<int64_t> job_ids;
  for (const auto& f : files) {
    const auto png = storage::read_png(f);
    EXPECT_EQ(png.width, 128);
    EXPECT_EQ(png.channels, 4);
    const auto id = storage::job_id_of(png);
    ASSERT_TRUE(id) << f;
    job_ids.insert(*id);
    EXPECT_NE(png.texts.at("parameters").find("Steps: 8"), std::string::npos);
    EXPECT_EQ(json::parse(png.texts.at("rgbaq"))["run_id"], 1);
  }
  EXPECT_EQ(job_ids.size(), 12u);
  const json s = status(d);
  EXPECT_EQ(s["counters"]["encoder_runs"], 3) << s.dump();
  EXPECT_EQ(s["counters"]["images_rendered"], 12);
  EXPECT_EQ(s["counters"]["cache_memory_hits"], 9);
  EXPECT_EQ(s["jobs"]["done"], 12);
  // --engine auto (the default): the engine that runs and its device, as the status reports them.
  if (s["engine"] == "cpu") EXPECT_EQ(s["engine_device"], "cpu, 2 threads") << s.dump();
  if (s["engine"] == "cpu") EXPECT_EQ(s["precision"], "fp32") << s.dump();
  else EXPECT_EQ(s["engine"], "cuda") << s.dump();
  const auto exported = rgbaq(d, {"export", "1", "--format", "jsonl"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::istringstream lines(exported.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const json j = json::parse(line);
    EXPECT_EQ(j["state"], "done");
    EXPECT_TRUE(fs::exists(j["output"].get<std::string>()));
    EXPECT_EQ(j["metadata"]["job_id"], j["id"]);
    ++n;
  }
  EXPECT_EQ(n, 12);
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv"});
  EXPECT_NE(csv.out.find("\"a \"\"quoted\"\" cat\""), std::string::npos) << csv.out;
  const auto sheet = rgbaq(d, {"sheet", "1", "-o", (dir.path() / "sheet.png").string()});
  ASSERT_EQ(sheet.exit_code, 0) << sheet.err;
  const auto sheet_png = storage::read_png(dir.path() / "sheet.png");
  // 8 px margins, a 192 px prompt column (128 * 1.5), 4 columns of 128 px with 4 px gutters; the rows
  // below a header and a line of seed labels.
  EXPECT_EQ(sheet_png.width, 8 + 192 + 4 + 4 * (128 + 4) - 4 + 8);
  EXPECT_GT(sheet_png.height, 8 + 3 * (128 + 4) - 4 + 8 + 30);
  const json legend = json::parse(sheet_png.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["columns"].size(), 4u);
  EXPECT_EQ(legend["rows"].size(), 3u);

  // A restart: the same prompts with new seeds need no encoder run (the disk cache).
  d.signal(SIGTERM);
  ASSERT_EQ(d.wait_exit(), 0);
  DaemonProcess again(kRgbaqd, model().dir(), dir.path(), {});
  const auto r2 = rgbaq(again, {"submit", (dir.path() / "prompts.csv").string(), "--seeds", "5-6", "--size", "128", "--out",
                                out_dir.string(), "--wait"});
  // The file's own seeds win over --seeds; give a file without seeds for the defaults to apply.
  write_file(dir.path() / "noseeds.csv", "prompt\n\"a red fox, game asset\"\n\"an owl\"\n\"a \"\"quoted\"\" cat\"\n");
  const auto r3 = rgbaq(again, {"submit", (dir.path() / "noseeds.csv").string(), "--seeds", "5-6", "--size", "128", "--out",
                                out_dir.string(), "--wait"});
  ASSERT_EQ(r3.exit_code, 0) << r3.out << r3.err;
  const json s2 = status(again);
  EXPECT_EQ(s2["counters"]["encoder_runs"], 0) << s2.dump();
  EXPECT_EQ(s2["counters"]["cache_disk_hits"], 3) << s2.dump();
  EXPECT_EQ(s2["counters"]["outputs_reused"], 12) << "the first resubmission found its images finished: " << r2.out;
  EXPECT_EQ(pngs_in(out_dir).size(), 18u);
}

// The CSV export read back by an RFC 4180 reader: the host that rendered each job in its own column, and
// cells a spreadsheet would run as formulas (=, +, -, @, a tab, a carriage return first) shown as text
// with a leading ' (OWASP); numbers as numbers, and the JSONL export exact.
TEST(Daemon, ExportCsvNamesTheHostAndNeutralisesFormulas) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--host", "render-host-7"}});
  const std::vector<std::string> prompts = {"=HYPERLINK(\"http://x.example/\",\"click\")", "+1+2", "-3+cmd|' /C calc'!A0",
                                            "@SUM(A1:A2)", "\ttabbed", "\rreturned", "a plain fox, -1"};
  std::string file;
  for (const auto& p : prompts) file += json({{"prompt", p}, {"seed", 1}}).dump() + "\n";
  file += json({{"prompt", "named"}, {"seed", 1}, {"name", "-minus"}}).dump() + "\n";
  const auto sub = rgbaq(d, {"submit", "-", "--format", "jsonl", "--size", "128", "--out", (dir.path() / "o").string(), "--wait"},
                         file);
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const jobs::CsvDocument doc = jobs::read_csv(csv.out);
  ASSERT_TRUE(doc.errors.empty()) << csv.out;
  ASSERT_EQ(doc.records.size(), prompts.size() + 2) << csv.out;
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < doc.records[0].fields.size(); ++i) column[doc.records[0].fields[i].value] = i;
  ASSERT_TRUE(column.count("prompt") && column.count("seed") && column.count("name") && column.count("state")) << csv.out;
  ASSERT_TRUE(column.count("host")) << csv.out;
  for (size_t r = 1; r < doc.records.size(); ++r) {
    const auto& f = doc.records[r].fields;
    ASSERT_EQ(f.size(), column.size()) << csv.out;
    EXPECT_EQ(f[column["host"]].value, "render-host-7");
    EXPECT_EQ(f[column["seed"]].value, "1") << "a number is no text cell";
    EXPECT_EQ(f[column["state"]].value, "done");
    if (r <= prompts.size()) {
      const std::string& p = prompts[r - 1];
      EXPECT_EQ(f[column["prompt"]].value, (p[0] == 'a' ? "" : "'") + p) << csv.out;
    } else {
      EXPECT_EQ(f[column["prompt"]].value, "named");
      EXPECT_EQ(f[column["name"]].value, "'-minus");
    }
  }
  const auto jsonl = rgbaq(d, {"export", "1", "--format", "jsonl"});
  std::istringstream lines(jsonl.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(json::parse(line)["prompt"], prompts[0]) << "the JSONL form is exact";
  EXPECT_EQ(json::parse(line)["host"], "render-host-7");
}

TEST(Daemon, SigtermReturnsTheJobInHandAndExitsZero) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const auto r = rgbaq(d, {"submit", "-", "--size", "1024", "--out", (dir.path() / "o").string()}, "prompt,seed\nslow,1\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int i = 0; i < 200 && status(d)["current"].is_null(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait_exit(), 0);
  EXPECT_FALSE(fs::exists(d.socket())) << "the socket is removed on a clean stop";
  // Read the queue the daemon left, with no daemon running to claim the job again.
  storage::SqliteQueueStore store(d.data_dir() / "queue.db");
  const auto jobs = store.list_jobs(std::nullopt, std::nullopt);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].state, storage::JobState::kQueued);
  EXPECT_EQ(jobs[0].attempts, 0) << "a clean stop does not spend an attempt";
}

TEST(Daemon, BadCsvThroughTheCliQueuesNothing) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  write_file(dir.path() / "bad.csv", "prompt,seed,size\nfine,1,256\nbad seed,x,256\nbad size,2,100\n,3,256\n");
  const auto r = rgbaq(d, {"submit", (dir.path() / "bad.csv").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.csv:3:10: seed:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.csv:4:12: size:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.csv:5:1: prompt: is empty"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 errors; nothing was queued"), std::string::npos) << r.err;
  // A prompt only the daemon can judge: too many tokens for the encoder.
  std::string long_prompt;
  for (int i = 0; i < 600; ++i) long_prompt += " word";
  const auto t = rgbaq(d, {"submit", "-", "--out", (dir.path() / "o").string()}, "prompt\nok\n" + long_prompt + "\n");
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_NE(t.err.find("<stdin>:3:1: prompt: the prompt is"), std::string::npos) << t.err;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 0u);
  EXPECT_EQ(rgbaq(d, {"cancel", "99"}).exit_code, 2);
  EXPECT_EQ(rgbaq(d, {"frobnicate"}).exit_code, 2);
  EXPECT_EQ(rgbaq(d, {"submit"}).exit_code, 2);
}

TEST(Daemon, GarbageOversizedAndAbandonedFramesCostOnlyTheirConnection) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  {
    Raw c(d.socket());
    c.send_all("this is not json\n{\"v\":1,\"id\":2,\"method\":\"ping\"}\n");
    const std::string reply = c.read_until_close();
    EXPECT_NE(reply.find("\"code\":\"bad_request\""), std::string::npos) << reply;
    EXPECT_EQ(reply.find("pong"), std::string::npos) << "the connection closed after the bad frame";
  }
  {
    Raw c(d.socket());
    c.send_all("{\"v\":1,\"id\":1,\"method\":\"ping\"}\n{\"v\":9,\"id\":2,\"method\":\"ping\"}\n");
    const std::string reply = c.read_until_close();
    EXPECT_NE(reply.find("pong"), std::string::npos);
    EXPECT_NE(reply.find("unsupported_version"), std::string::npos) << reply;
  }
  {
    Raw c(d.socket());
    std::string big(65u << 20, 'x');  // past the 64 MiB frame limit, no newline
    std::thread sender([&] { c.send_all(big); });
    const std::string reply = c.read_until_close();
    sender.join();
    EXPECT_NE(reply.find("frame_too_large"), std::string::npos) << reply.substr(0, 200);
  }
  {
    Raw c(d.socket());
    c.send_all("{\"v\":1,\"id\":1,\"meth");  // and hang up mid-frame
  }
  {
    Raw c(d.socket());
    c.send_all("{\"v\":1,\"id\":1,\"method\":\"nope\"}\n{\"v\":1,\"id\":2,\"method\":\"ls_jobs\",\"params\":{\"state\":\"weird\"}}\n");
    shutdown(c.fd, SHUT_WR);
    const std::string reply = c.read_until_close();
    EXPECT_NE(reply.find("unknown_method"), std::string::npos) << reply;
    EXPECT_NE(reply.find("is not one of queued"), std::string::npos) << reply;
  }
  EXPECT_EQ(status(d)["protocol"], 1) << "still serving";
}

TEST(Daemon, PeerUidIsCheckedOnTheSocket) {
  // The daemon's socket sits in a 0700 directory and is 0600, so another user cannot even connect; the
  // peer check behind that is tested here on a socket any user may reach.
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::all);
  const auto path = dir.path() / "open.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = unix_address(path);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  chmod(path.c_str(), 0777);
  listen(listener, 4);
  const bool root = geteuid() == 0;
  const pid_t child = fork();
  if (child == 0) {
    if (root && setuid(65534) != 0) _exit(3);
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    _exit(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 ? 0 : 4);
  }
  const int conn = accept(listener, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  const auto uid = common::peer_uid(conn);
  ASSERT_TRUE(uid);
  EXPECT_EQ(*uid, root ? 65534u : geteuid());
  int status_code = 0;
  waitpid(child, &status_code, 0);
  EXPECT_EQ(WEXITSTATUS(status_code), 0);
  close(conn);
  close(listener);
}

TEST(Daemon, SecondDaemonAndInsecureDirectoryAreRefused) {
  TempDir dir;
  DaemonProcess first(kRgbaqd, model().dir(), dir.path(), {});
  DaemonProcess second(kRgbaqd, model().dir(), dir.path(), {.wait_until_ready = false});
  EXPECT_EQ(second.wait_exit(), 1);
  std::ifstream log(second.log());
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("another rgbaqd is already listening here"), std::string::npos) << text;
  EXPECT_TRUE(first.connectable());

  TempDir open_dir;
  fs::create_directories(open_dir.path() / "run");
  fs::permissions(open_dir.path() / "run", fs::perms::all);
  DaemonProcess insecure(kRgbaqd, model().dir(), open_dir.path(), {.wait_until_ready = false});
  EXPECT_EQ(insecure.wait_exit(), 1);
  std::ifstream log2(insecure.log());
  const std::string text2((std::istreambuf_iterator<char>(log2)), {});
  EXPECT_NE(text2.find("open to other users (mode 777); it must be 0700"), std::string::npos) << text2;
}

TEST(Daemon, UnwritableOutputFailsThatJobAndTheDaemonCarriesOn) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--max-attempts", "1"}});
  const auto blocked = dir.path() / "blocked";
  // Blocked after the submit (a submit to an output directory that cannot be written is refused).
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", (blocked / "sub").string()}, "prompt,seed\nx,1\n").exit_code, 0);
  write_file(blocked, "a file where a directory should be");
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  const auto good = dir.path() / "good";
  const auto r = rgbaq(d, {"submit", "-", "--size", "128", "--out", good.string(), "--wait"}, "prompt,seed\ny,2\n");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  rgbaq(d, {"watch", "1"});
  const auto jobs = json::parse(rgbaq(d, {"ls", "jobs", "--run", "1", "--json"}).out)["jobs"];
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["state"], "failed");
  EXPECT_NE(jobs[0]["error"].get<std::string>().find("blocked"), std::string::npos) << jobs[0].dump();
  EXPECT_EQ(pngs_in(good).size(), 1u);
}

TEST(Daemon, CancelPauseResumeRetryPrioritize) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const auto out = (dir.path() / "o").string();
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--name", "first"}, "prompt,seed\na,1-3\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out}, "prompt,seed\nb,1-2\n").exit_code, 0);
  EXPECT_EQ(rgbaq(d, {"prioritize", "2", "5"}).exit_code, 0);
  EXPECT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
  EXPECT_TRUE(status(d)["paused"].get<bool>());
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  EXPECT_EQ(rgbaq(d, {"watch", "2"}).exit_code, 0);
  const auto runs = json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"];
  EXPECT_EQ(runs[0]["name"], "first");
  EXPECT_EQ(runs[0]["counts"]["canceled"], 3);
  EXPECT_EQ(runs[1]["counts"]["done"], 2);
  EXPECT_EQ(rgbaq(d, {"retry", "1", "--canceled"}).exit_code, 0);
  EXPECT_EQ(rgbaq(d, {"watch", "1"}).exit_code, 0);
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"][0]["counts"]["done"], 3);
}

TEST(Daemon, CorruptCacheEntryIsDetectedAndRecomputed) {
  TempDir dir;
  const auto out = (dir.path() / "o").string();
  {
    DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
    ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--wait"}, "prompt,seed\nfox,1\n").exit_code, 0);
    d.signal(SIGTERM);
    ASSERT_EQ(d.wait_exit(), 0);
  }
  int damaged = 0;
  for (const auto& e : fs::directory_iterator(dir.path() / "data" / "cache" / "embeddings")) {
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.write("garbage!", 8);
    ++damaged;
  }
  ASSERT_EQ(damaged, 1);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out, "--wait"}, "prompt,seed\nfox,2\n").exit_code, 0);
  const json s = status(d);
  EXPECT_EQ(s["counters"]["cache_corrupt"], 1) << s.dump();
  EXPECT_EQ(s["counters"]["encoder_runs"], 1);
}

TEST(Daemon, SocketActivationAndSdNotify) {
  TempDir dir;
  // systemd's side: a listening socket passed as fd 3, and a datagram socket for notifications.
  const auto sock = dir.path() / "run" / "rgbaqd.sock";
  const int listener = daemon::open_listen_socket(sock);
  const auto notify_path = dir.path() / "notify";
  const int notify = socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr = unix_address(notify_path);
  ASSERT_EQ(bind(notify, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(),
                  {.env = {{"NOTIFY_SOCKET", notify_path.string()}, {"WATCHDOG_USEC", "400000"}}, .inherit_fd = listener});
  close(listener);
  auto receive = [&] {
    char buf[256];
    timeval tv{5 * test_time_scale(), 0};
    setsockopt(notify, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ssize_t n = recv(notify, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  std::set<std::string> got;
  for (int i = 0; i < 3; ++i) got.insert(receive());
  EXPECT_TRUE(got.count("READY=1"));
  EXPECT_TRUE(got.count("WATCHDOG=1"));
  EXPECT_EQ(status(d)["protocol"], 1) << "served on the adopted socket";
  d.signal(SIGTERM);
  std::string last;
  for (int i = 0; i < 10 && last != "STOPPING=1"; ++i) last = receive();
  EXPECT_EQ(last, "STOPPING=1");
  EXPECT_EQ(d.wait_exit(), 0);
  close(notify);
}

TEST(Daemon, ConfigFileAndHelp) {
  TempDir dir;
  const auto help = run_process({kRgbaqd, "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--config FILE"), std::string::npos);
  EXPECT_NE(help.out.find("SIGTERM"), std::string::npos);
  write_file(dir.path() / "rgbaqd.json", "{\"max_attempts\": 5, \"log_level\": \"debug\", \"threads\": 1}");
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {.extra_args = {"--config", (dir.path() / "rgbaqd.json").string()}});
  EXPECT_EQ(status(d)["protocol"], 1);
  write_file(dir.path() / "bad.json", "{\"colour\": 1}");
  const auto bad = run_process({kRgbaqd, "--model", model().dir().string(), "--config", (dir.path() / "bad.json").string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown setting \"colour\""), std::string::npos) << bad.err;
  const auto no_model = run_process({kRgbaqd, "--socket", "/tmp/x.sock"});
  EXPECT_EQ(no_model.exit_code, 2);
  EXPECT_NE(no_model.err.find("--model DIR is required"), std::string::npos);
}

TEST(Cli, UnreachableDaemonSaysHowToStartIt) {
  const auto r = run_process({kRgbaq, "--socket", "/nonexistent/rgbaqd.sock", "status"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("Start it with `rgbaqd --model DIR`"), std::string::npos) << r.err;
}

TEST(Cli, ServiceFilesPrintAndInstall) {
  TempDir dir;
  const auto printed = run_process({kRgbaq, "service", "install", "--model", model().dir().string(), "--print"});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_NE(printed.out.find("ListenStream=%t/rgbaq/rgbaqd.sock"), std::string::npos) << printed.out;
  EXPECT_NE(printed.out.find("Type=notify"), std::string::npos);
  EXPECT_NE(printed.out.find("--model \"" + model().dir().string() + "\""), std::string::npos);
  // Installing writes the units and asks systemctl; a stand-in records what it was asked.
  const auto log = dir.path() / "systemctl.log";
  write_file(dir.path() / "systemctl", "#!/bin/sh\necho \"$@\" >> " + log.string() + "\n");
  fs::permissions(dir.path() / "systemctl", fs::perms::owner_all);
  const auto r = run_process({"/usr/bin/env", "XDG_CONFIG_HOME=" + dir.path().string(), "RGBAQ_SYSTEMCTL=" + (dir.path() / "systemctl").string(),
                              kRgbaq, "service", "install", "--model", model().dir().string(), "--rgbaqd", kRgbaqd});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(fs::exists(dir.path() / "systemd" / "user" / "rgbaqd.socket"));
  std::ifstream calls(log);
  const std::string text((std::istreambuf_iterator<char>(calls)), {});
  EXPECT_NE(text.find("--user enable --now rgbaqd.socket"), std::string::npos) << text;
  std::ifstream unit(dir.path() / "systemd" / "user" / "rgbaqd.service");
  const std::string service((std::istreambuf_iterator<char>(unit)), {});
  EXPECT_NE(service.find("ExecStart=\"" + kRgbaqd + "\" serve"), std::string::npos) << service;
  EXPECT_EQ(run_process({"/usr/bin/env", "XDG_CONFIG_HOME=" + dir.path().string(), "RGBAQ_SYSTEMCTL=" + (dir.path() / "systemctl").string(),
                         kRgbaq, "service", "uninstall"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir.path() / "systemd" / "user" / "rgbaqd.socket"));
}

}  // namespace
}  // namespace rgbaq
