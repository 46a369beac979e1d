// Output names that change hands (issue 27, item 3), as real processes on the tiny model: a finished
// run's name whose file is gone is free again, `submit --replace` takes a finished run's names and
// moves its images aside (read back as PNGs with their metadata), a queued run's names are never
// taken, and `rgbaq rm RUN [--delete-images]` forgets a run and deletes only its own images.
#include <gtest/gtest.h>

#include "storage/png_file.h"
#include "storage/render_metadata.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

// The run a submit made, from its first line ("run N: ...").
int run_of(const ProcessResult& r) {
  EXPECT_EQ(r.out.rfind("run ", 0), 0u) << r.out << r.err;
  return std::atoi(r.out.c_str() + 4);
}

// The one job of run `run`, by the CLI's listing.
int64_t only_job(const DaemonProcess& d, int run) {
  const auto r = rgbaq(d, {"ls", "jobs", "--run", std::to_string(run), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json jobs = json::parse(r.out)["jobs"];
  EXPECT_EQ(jobs.size(), 1u) << r.out;
  return jobs.at(0).at("id").get<int64_t>();
}

// A PNG holds job `job`'s image of `prompt`: its rgbaq chunk names the job, and its A1111 parameters
// (the form every reader of A1111 PNGs parses: the prompt, then a line of fields) begin with the prompt.
void expect_image(const fs::path& png_path, int64_t job, const std::string& prompt) {
  ASSERT_TRUE(fs::exists(png_path)) << png_path;
  const auto png = storage::read_png(png_path);  // a whole, valid PNG
  EXPECT_EQ(png.width, 128);
  EXPECT_EQ(storage::job_id_of(png), job) << png_path;
  EXPECT_EQ(png.texts.at("parameters").rfind(prompt + "\nSteps: ", 0), 0u) << png.texts.at("parameters");
}

// Each test: a daemon on the tiny model, its images in DIR/o, and the CLI's submit of stdin rows there
// at 128 px, with `extra` options.
class DaemonReplace : public ::testing::Test {
 protected:
  std::vector<std::string> submit_args(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {"submit", "-", "--size", "128", "--out", out.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  TempDir dir;
  DaemonProcess d{kRgbaqd, model().dir(), dir.path(), {}};
  const fs::path out = dir.path() / "o";
};

TEST_F(DaemonReplace, AFinishedRunsNameIsFreeAgainOnceItsFileIsGone) {
  const auto submit = submit_args({"--wait"});
  ASSERT_EQ(rgbaq(d, submit, "prompt,seed,name\nfox,1,hero\n").exit_code, 0);
  // With the file there, another prompt for the name is refused, and told of --replace.
  const auto refused = rgbaq(d, submit, "prompt,seed,name\ncat,1,hero\n");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("<stdin>:2: output " + (out / "hero_1.png").string() + " already belongs to another image (run 1); "),
            std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--replace"), std::string::npos) << refused.err;
  // The user moves the old image away: the name is free, no --replace needed.
  fs::rename(out / "hero_1.png", dir.path() / "fox.png");
  const auto r = rgbaq(d, submit, "prompt,seed,name\ncat,1,hero\n");
  ASSERT_EQ(r.exit_code, 0) << r.err << log_tail(d);
  expect_image(out / "hero_1.png", only_job(d, run_of(r)), "cat");
  expect_image(dir.path() / "fox.png", only_job(d, 1), "fox");
  EXPECT_FALSE(fs::exists(out / "replaced")) << "nothing was there to move";
}

TEST_F(DaemonReplace, ReplaceMovesTheOldImagesAsideAndTakesTheNames) {
  const auto submit = submit_args({"--wait"});
  ASSERT_EQ(rgbaq(d, submit, "prompt,seed,name\nfox,1,hero\n").exit_code, 0);
  auto replace = submit;
  replace.push_back("--replace");
  const auto second = rgbaq(d, replace, "prompt,seed,name\ncat,1,hero\n");
  ASSERT_EQ(second.exit_code, 0) << second.err << log_tail(d);
  EXPECT_NE(second.out.find("1 earlier image moved to " + (out / "replaced").string()), std::string::npos) << second.out;
  const auto third = rgbaq(d, replace, "prompt,seed,name\nowl,1,hero\n");
  ASSERT_EQ(third.exit_code, 0) << third.err << log_tail(d);
  // Nothing lost: each image under its own name, the newest at the name.
  expect_image(out / "hero_1.png", only_job(d, 3), "owl");
  expect_image(out / "replaced" / "hero_1.png", only_job(d, 1), "fox");
  expect_image(out / "replaced" / "hero_1-2.png", only_job(d, 2), "cat");
  EXPECT_EQ(pngs_in(out / "replaced").size(), 2u);
}

TEST_F(DaemonReplace, AQueuedRunsNameIsNotTakenEvenWithReplace) {
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, submit_args(), "prompt,seed,name\nfox,1,hero\n").exit_code, 0);
  const auto r = rgbaq(d, submit_args({"--replace"}), "prompt,seed,name\ncat,1,hero\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("<stdin>:2: output " + (out / "hero_1.png").string() + " already belongs to another image (run 1), queued or "
                       "running there, so not even --replace takes it; wait for run 1, or cancel it (rgbaq cancel 1)"),
            std::string::npos) << r.err;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 1u);
  // Canceled, it is finished: then the name passes.
  ASSERT_EQ(rgbaq(d, {"cancel", "1"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  const auto after = rgbaq(d, submit_args({"--wait"}), "prompt,seed,name\ncat,1,hero\n");
  ASSERT_EQ(after.exit_code, 0) << after.err;
  expect_image(out / "hero_1.png", only_job(d, run_of(after)), "cat");
}

TEST_F(DaemonReplace, RmForgetsAFinishedRunAndDeletesOnlyItsOwnImages) {
  const auto submit = submit_args({"--wait"});
  ASSERT_EQ(rgbaq(d, submit, "prompt,seed,name\nfox,1,hero\nowl,2,owl\n").exit_code, 0);
  ASSERT_EQ(rgbaq(d, submit, "prompt,seed,name\ncat,3,cat\n").exit_code, 0);
  // owl_2.png now holds run 2's image (copied there by hand): not run 1's own, so it is kept.
  fs::copy_file(out / "cat_3.png", out / "owl_2.png", fs::copy_options::overwrite_existing);
  // A run in progress is refused.
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, submit_args(), "prompt,seed,name\nemu,4,emu\n").exit_code, 0);
  const auto busy = rgbaq(d, {"rm", "3"});
  EXPECT_EQ(busy.exit_code, 1);
  EXPECT_NE(busy.err.find("run 3 still has 1 job queued or running; cancel it first (rgbaq cancel 3), then rgbaq rm 3"),
            std::string::npos) << busy.err;
  const auto rm = rgbaq(d, {"rm", "1", "--delete-images"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "run 1 forgotten (2 jobs); 1 image deleted, 1 kept (moved, gone, or no longer its own)\n");
  EXPECT_FALSE(fs::exists(out / "hero_1.png"));
  expect_image(out / "owl_2.png", only_job(d, 2), "cat");
  expect_image(out / "cat_3.png", only_job(d, 2), "cat");
  const json runs = json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"];
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0]["id"], 2);
  EXPECT_EQ(rgbaq(d, {"rm", "1"}).exit_code, 2) << "forgotten already";
  // Its name is free: another prompt takes it without --replace.
  ASSERT_EQ(rgbaq(d, {"cancel", "3"}).exit_code, 0);
  ASSERT_EQ(rgbaq(d, {"resume"}).exit_code, 0);
  const auto yak_run = rgbaq(d, submit, "prompt,seed,name\nyak,1,hero\n");
  ASSERT_EQ(yak_run.exit_code, 0) << yak_run.err;
  const int64_t yak = only_job(d, run_of(yak_run));
  expect_image(out / "hero_1.png", yak, "yak");
  // Without --delete-images the images stay.
  const auto keep = rgbaq(d, {"rm", std::to_string(run_of(yak_run))});
  EXPECT_EQ(keep.out, "run " + std::to_string(run_of(yak_run)) + " forgotten (1 job); its image stays where it is\n");
  expect_image(out / "hero_1.png", yak, "yak");
  // A forgotten run's image still there is no one's, yet not lost: refused, or moved aside with --replace.
  const auto stray = rgbaq(d, submit, "prompt,seed,name\ngnu,1,hero\n");
  EXPECT_EQ(stray.exit_code, 2);
  EXPECT_NE(stray.err.find("output " + (out / "hero_1.png").string() + " is already there and holds another image"),
            std::string::npos) << stray.err;
  auto replace = submit;
  replace.push_back("--replace");
  const auto gnu = rgbaq(d, replace, "prompt,seed,name\ngnu,1,hero\n");
  ASSERT_EQ(gnu.exit_code, 0) << gnu.err;
  expect_image(out / "hero_1.png", only_job(d, run_of(gnu)), "gnu");
  expect_image(out / "replaced" / "hero_1.png", yak, "yak");
}

}  // namespace
}  // namespace rgbaq
