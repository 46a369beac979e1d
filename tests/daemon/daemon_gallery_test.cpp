// The review gallery in a real browser (tests/oracle/gallery_check.mjs: Debian's chromium driven by
// playwright-core) on runs rendered by the tiny model: every image shown, the checkerboard behind them
// (a pixel of the screenshot), marks by key that `rgbaq ls jobs --marked star` then sees, compare, a
// filter in the address that survives a reload, images that appear without a reload as jobs finish, a
// phone's screen, and a 10,000-job run whose first screen comes within a second with a bounded page;
// no request leaves 127.0.0.1 and no console error. Screenshots are kept in the build tree
// (test-artifacts/gallery).
#include <gtest/gtest.h>

#include <fstream>

#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

const fs::path kOracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";

TEST(Gallery, APersonReviewsARunInTheBrowser) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "Debian's chromium is not installed: run scripts/setup";
  HttpDaemon h;
  const auto out = h.dir.path() / "out";
  fs::create_directories(out);
  write_file(h.dir.path() / "small.csv", "prompt,seed\na red fox,1-3\na blue bird,1-3\n");
  ASSERT_EQ(rgbaq(h.d, {"submit", (h.dir.path() / "small.csv").string(), "--size", "128", "--out", out.string(), "--wait"}).exit_code, 0);
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a green frog", "--seeds", "1-2", "--size", "128", "--out", out.string()}).exit_code, 0);
  std::string big = "prompt,seed\n";
  for (int p = 0; p < 100; ++p) big += "prompt number " + std::to_string(p) + ",1-100\n";
  write_file(h.dir.path() / "big.csv", big);
  ASSERT_EQ(rgbaq(h.d, {"submit", (h.dir.path() / "big.csv").string(), "--size", "128", "--out", (h.dir.path() / "big").string()}).exit_code, 0);

  const fs::path shots = fs::path(std::getenv("RGBAQ_BINARY_DIR") ? std::getenv("RGBAQ_BINARY_DIR") : h.dir.path().c_str()) /
                         "test-artifacts" / "gallery";
  fs::create_directories(shots);
  const std::string base = "http://127.0.0.1:" + std::to_string(h.port);
  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "gallery_check.mjs").string(), base, h.token, shots.string(), "1", "2", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(h.d);
  const json seen = json::parse(r.out);
  std::printf("gallery: %s\n", seen.dump().c_str());

  EXPECT_EQ(seen["foreign_requests"], json::array());
  EXPECT_EQ(seen["console_errors"], json::array());
  EXPECT_EQ(seen["runs_listed"], 3);
  EXPECT_EQ(seen["small_cells"], 6);
  EXPECT_EQ(seen["small_images"], 6);
  EXPECT_EQ(seen["starred"], seen["expected_starred"]);
  EXPECT_EQ(seen["rejected"], seen["expected_rejected"]);
  EXPECT_EQ(seen["compare_images"], 2);
  EXPECT_EQ(seen["metadata_prompt"], "a red fox");
  EXPECT_NE(seen["copied"].get<std::string>().find("Seed: "), std::string::npos) << seen["copied"];
  EXPECT_EQ(seen["filtered_cells"], 1);
  EXPECT_EQ(seen["filter_select"], "star");
  EXPECT_EQ(seen["live_before"], 0);
  EXPECT_EQ(seen["live_after"], 2);
  EXPECT_LT(seen["big_first_screen_ms"].get<int>(), 1000 * test_time_scale());
  EXPECT_LT(seen["big_nodes"].get<int>(), 2500);
  EXPECT_LT(seen["big_nodes_scrolled"].get<int>(), 2500);
  EXPECT_EQ(seen["big_count"], "10000 of 10000 shown");

  // The marks are the queue's: the CLI sees what the keys did.
  const auto starred = rgbaq(h.d, {"ls", "jobs", "--marked", "star", "--json"});
  ASSERT_EQ(starred.exit_code, 0) << starred.err;
  json ids = json::array();
  for (const auto& j : json::parse(starred.out)["jobs"]) ids.push_back(j["id"]);
  EXPECT_EQ(ids, seen["expected_starred"]);
  const auto rejected = rgbaq(h.d, {"ls", "jobs", "--marked", "reject", "--json"});
  ASSERT_EQ(rejected.exit_code, 0) << rejected.err;
  EXPECT_EQ(json::parse(rejected.out)["jobs"].size(), 1u);
  for (const char* shot : {"runs.png", "run.png", "compare.png", "slider.png", "phone.png", "big-run.png"}) {
    EXPECT_TRUE(fs::exists(shots / shot)) << shot;
  }
}

}  // namespace
}  // namespace rgbaq
