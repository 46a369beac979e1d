// A stalled worker never replaces a PNG another recorded (issue 26, item 9). Two rgbaqd on one
// PostgreSQL queue (a real server, tests/postgres_server.h), lease 2 s. Host A is stopped (SIGSTOP, as a
// host swapped out or suspended) while it renders; its lease runs out, host B renders the job and the
// queue records B; then A goes on (SIGCONT). Stopped mid-render, A stops rendering at its next step;
// stopped at its last step, it finishes the image, but its complete is refused before any rename. Either
// way the PNG at the path is B's, as the queue says, and no temporary is left behind.
#include <gtest/gtest.h>

#include <fstream>

#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"
#include "tests/postgres_server.h"

namespace rgbaq {
namespace {

// Whether the process is stopped (state T in /proc/PID/stat).
bool stopped(pid_t pid) {
  const std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'T';
}

void stalled_host_loses_the_job(int stop_at_step, const std::string& a_says) {
  if (!PostgresServer::available()) GTEST_SKIP() << PostgresServer::why_unavailable();
  PostgresServer server;
  const std::string queue = server.create_database("stalled");
  TempDir a_dir, b_dir, shared;
  const fs::path out = shared.path() / "renders";
  fs::create_directories(out);  // a shared queue's output folder exists before the submit
  const auto options = [&](const std::string& host) {
    return DaemonProcess::Options{.extra_args = {"--queue", queue, "--host", host, "--lease-s", "2"}};
  };
  DaemonProcess::Options a_options = options("hostA");
  a_options.env["RGBAQ_TEST_SIGSTOP_AT_STEP"] = std::to_string(stop_at_step) + ":fox";
  DaemonProcess a(kRgbaqd, model().dir(), a_dir.path(), a_options);
  ASSERT_EQ(rgbaq(a, {"submit", "-", "--size", "128", "--out", out.string()}, "prompt,seed\nfox,1\n").exit_code, 0);
  ASSERT_TRUE(eventually([&] { return stopped(a.pid()); }, std::chrono::seconds(60))) << "host A never reached step " << stop_at_step << ": "
                                                                << log_tail(a);
  DaemonProcess b(kRgbaqd, model().dir(), b_dir.path(), options("hostB"));
  json job;
  ASSERT_TRUE(eventually([&] {
    job = json::parse(rgbaq(b, {"ls", "jobs", "--all", "--json"}).out)["jobs"][0];
    return job["state"] == "done";
  }, std::chrono::seconds(60))) << job.dump() << log_tail(b);
  EXPECT_EQ(job["host"], "hostB") << job.dump();
  const std::string output = job["output"];
  a.signal(SIGCONT);
  ASSERT_TRUE(eventually([&] { return read_text(a.log()).find("job 1: lease lost") != std::string::npos; }, std::chrono::seconds(60))) << log_tail(a);
  EXPECT_NE(read_text(a.log()).find(a_says), std::string::npos) << log_tail(a);
  status(a);  // A is up and serving; whatever it had in hand is settled
  const auto png = storage::read_png_info(output);
  const json record = json::parse(png.texts.at("rgbaq"));
  EXPECT_EQ(record["host"], "hostB") << "the PNG at the path is the one the queue recorded";
  EXPECT_EQ(json::parse(rgbaq(b, {"ls", "jobs", "--all", "--json"}).out)["jobs"][0]["host"], "hostB");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{fs::path(output).filename().string()}) << "no temporary left";
}

TEST(DaemonStalledWorker, AHostStoppedMidRenderStopsRenderingOnceItsJobIsAnothers) {
  stalled_host_loses_the_job(1, "job 1: lease lost; stopped rendering it at step");
}

TEST(DaemonStalledWorker, AHostStoppedAtItsLastStepNeverReplacesThePngAnotherRecorded) {
  stalled_host_loses_the_job(8, "job 1: lease lost; its PNG is not put at");
}

}  // namespace
}  // namespace rgbaq
