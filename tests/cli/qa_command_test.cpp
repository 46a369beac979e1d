// `rgbaq qa` (issue 40) on PNGs written by an independent writer (tests/cli/alpha_pngs.py: Python's zlib
// and struct), with every figure worked out from how each image is drawn: a centred disc, a square
// touching the frame, 20 specks (and a speck too small to count), an all-clear image, opaque noise,
// checkerboards of 8, 16 and 32 px cells in #ffffff/#cccccc and #999999/#666666 behind an object (painted
// opaque, and under alpha 0, and one on an offset grid), and images that are not checkers (a flat grey,
// stripes three ways, a black-and-white board), and an RGB PNG. Every figure is compared exactly (both
// sides divide the same counts in float64) and every flag; noise is not fake_transparency.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/run_process.h"
#include "tests/test_temp_dir.h"

namespace rgbaq {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

ProcessResult rgbaq_qa(std::vector<std::string> args) {
  args.insert(args.begin(), {RGBAQ_CLI_PATH, "qa"});
  return run_process(args);
}

struct Pngs {
  TempDir dir;
  json expected;
  Pngs() {
    const auto r = run_process({RGBAQ_PYTHON3_PATH, RGBAQ_ALPHA_PNGS_PATH, dir.path().string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::ifstream in(dir.path() / "expected.json");
    expected = json::parse(in);
  }
};

TEST(QaCommand, EveryFigureAndFlagIsWhatTheImagesHold) {
  Pngs pngs;
  ASSERT_GE(pngs.expected.size(), 20u);
  std::vector<std::string> args{"--json"};
  for (const auto& [name, _] : pngs.expected.items()) args.push_back((pngs.dir.path() / name).string());
  const auto r = rgbaq_qa(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json got = json::parse(r.out);
  ASSERT_EQ(got["images"].size(), pngs.expected.size());
  for (const auto& image : got["images"]) {
    const std::string name = fs::path(image["file"].get<std::string>()).filename().string();
    SCOPED_TRACE(name);
    const json& want = pngs.expected[name];
    const json& qa = image["qa"];
    for (const char* figure : {"transparent", "opaque", "partial", "edge", "checker"}) {
      EXPECT_EQ(qa[figure].get<double>(), want[figure].get<double>()) << figure;  // exact: count / total both sides
    }
    EXPECT_EQ(qa["bbox"], want["bbox"]);
    EXPECT_EQ(qa["components"], want["components"]);
    EXPECT_EQ(qa["flags"], want["flags"]);
    EXPECT_EQ(image["stored_as"], name == "rgb.png" ? "RGB" : "RGBA");
  }
  // What the issue singles out, said plainly.
  for (const auto& image : got["images"]) {
    const std::string name = fs::path(image["file"].get<std::string>()).filename().string();
    const auto& flags = image["qa"]["flags"];
    const bool fake = std::find(flags.begin(), flags.end(), "fake_transparency") != flags.end();
    EXPECT_EQ(fake, name.rfind("checker_", 0) == 0) << name << ": " << flags;
  }
}

TEST(QaCommand, TextSaysTheFlagsAndFigures) {
  Pngs pngs;
  const auto r = rgbaq_qa({(pngs.dir.path() / "square_at_frame.png").string(), (pngs.dir.path() / "rgb.png").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("square_at_frame.png  100x100  cut_off\n"), std::string::npos) << r.out;
  // 1600 of 10,000 opaque; the left column's 40 of the border's 396 pixels.
  EXPECT_NE(r.out.find("transparent 0.8400  opaque 0.1600  partial 0.0000  bbox 0,30 40x40  components 1  edge 0.1010  checker 0.0000"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rgb.png  64x32  no_alpha,cut_off  (stored as RGB, checked as RGBA)"), std::string::npos) << r.out;
}

TEST(QaCommand, AFileThatCannotBeReadFailsTheRunAndTheOthersAreStillChecked) {
  Pngs pngs;
  const auto broken = pngs.dir.path() / "broken.png";
  std::ofstream(broken, std::ios::binary) << "\x89PNG\r\n\x1a\nnot really";
  const auto missing = pngs.dir.path() / "missing.png";
  const auto r = rgbaq_qa({"--json", broken.string(), (pngs.dir.path() / "clear.png").string(), missing.string()});
  EXPECT_EQ(r.exit_code, 1);
  const json got = json::parse(r.out);
  ASSERT_EQ(got["images"].size(), 3u) << got;
  EXPECT_TRUE(got["images"][0].contains("error")) << got;
  EXPECT_EQ(got["images"][1]["qa"]["flags"], json({"empty"}));
  EXPECT_NE(got["images"][2]["error"].get<std::string>().find("missing.png"), std::string::npos) << got;
  EXPECT_NE(r.err.find("broken.png"), std::string::npos) << r.err;
  EXPECT_EQ(rgbaq_qa({}).exit_code, 2);
  EXPECT_EQ(rgbaq_qa({"--bogus", (pngs.dir.path() / "clear.png").string()}).exit_code, 2);
}

}  // namespace
}  // namespace rgbaq
