// An output that can never be written, through a real rgbaqd on the tiny model: a job whose output path
// is a folder, and a run whose output folder was replaced by a regular file (both hold for root too),
// fail at once with attempts 1 and the path and cause in their error; the other jobs render and the
// daemon keeps serving. The reason shows in `rgbaq ls jobs --state failed`.
#include <gtest/gtest.h>

#include <fstream>

#include "storage/png_file.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

TEST(DaemonOutputFailure, AnOutputThatCanNeverBeWrittenFailsAtOnceAndTheRestRenders) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "out", gone = dir.path() / "gone";
  fs::create_directories(out);
  fs::create_directories(gone);
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string()}, "prompt,seed\nfox,1-3\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"submit", "-", "--size", "128", "--out", gone.string()}, "prompt,seed\nowl,7\n").exit_code, 0);
  // While the queue is paused: fox seed 2's output path becomes a folder, and the second run's output
  // folder a regular file.
  std::string folder_path;
  for (const auto& j : jobs_of(d)) {
    if (j["seed"] == 2) folder_path = j["output"];
  }
  ASSERT_FALSE(folder_path.empty());
  fs::create_directories(folder_path);
  fs::remove_all(gone);
  write_file(gone, "a file where the output folder was\n");
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);

  wait_until_idle(d);
  const json jobs = jobs_of(d);
  ASSERT_EQ(jobs.size(), 4u);
  const std::string log = read_text(d.log());
  for (const auto& j : jobs) {
    const std::string output = j["output"];
    if (j["prompt"] == "fox" && j["seed"] != 2) {
      EXPECT_EQ(j["state"], "done") << j.dump();
      EXPECT_EQ(storage::read_png(output).width, 128) << "the other jobs of the run were written";
      continue;
    }
    EXPECT_EQ(j["state"], "failed") << j.dump() << log;
    EXPECT_EQ(j["attempts"], 1) << "not retried: " << j.dump();
    const std::string error = j["error"];
    const std::string cause = j["prompt"] == "owl" ? ": cannot make its folder " + gone.string() + ": Not a directory"
                                                   : ": writing the PNG failed: Is a directory";
    EXPECT_EQ(error, output + cause + " (not retried: trying again cannot fix this)") << j.dump();
    EXPECT_EQ(log.find("job " + std::to_string(j["id"].get<int64_t>()) + " failed (it will be tried again)"),
              std::string::npos) << log;
  }
  const auto failed = rgbaq(d, {"ls", "jobs", "--state", "failed"});
  EXPECT_EQ(failed.exit_code, 0) << failed.err;
  EXPECT_NE(failed.out.find("error: " + folder_path + ": writing the PNG failed: Is a directory"), std::string::npos)
      << failed.out;
  EXPECT_NE(failed.out.find("Not a directory"), std::string::npos) << failed.out;

  // The daemon keeps serving: a new run into a good folder renders.
  const auto next = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string(), "--wait"}, "prompt\ncat\n");
  EXPECT_EQ(next.exit_code, 0) << next.out << next.err;
  EXPECT_EQ(status(d)["jobs"]["done"], 3);
}

}  // namespace
}  // namespace rgbaq
