// The review gallery in a real browser (tests/oracle/gallery_check.mjs: Debian's chromium driven by
// playwright-core) on runs rendered by the tiny model: the token kept by the page and never in a cookie
// (what another port of 127.0.0.1 receives grants nothing), every image shown, the checkerboard behind them
// (a pixel of the screenshot), marks by key that `rgbaq ls jobs --marked star` then sees, compare, a
// filter in the address that survives a reload, images that appear without a reload as jobs finish, a
// phone's screen, and a 10,000-job run whose first screen comes within a second with a bounded page;
// no request leaves 127.0.0.1 and no console error. Screenshots are kept in the build tree
// (test-artifacts/gallery).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

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
  // The token reaches no other port of 127.0.0.1: no cookie at all, and what was sent grants nothing.
  EXPECT_EQ(seen["other_port_cookie"], "");
  EXPECT_EQ(seen["browser_cookies"], 0);
  EXPECT_EQ(seen["replayed_status"], 401);
  EXPECT_NE(seen["without_token"].get<std::string>().find("rgbaq gallery"), std::string::npos) << seen["without_token"];
  EXPECT_EQ(seen["small_cells"], 6);
  EXPECT_EQ(seen["small_images"], 6);
  EXPECT_EQ(seen["starred"], seen["expected_starred"]);
  EXPECT_EQ(seen["rejected"], seen["expected_rejected"]);
  EXPECT_EQ(seen["compare_images"], 2);
  EXPECT_EQ(seen["metadata_prompt"], "a blue bird");  // stepped past the first prompt's last seed onto the next prompt
  EXPECT_NE(seen["copied"].get<std::string>().find("Seed: "), std::string::npos) << seen["copied"];
  EXPECT_EQ(seen["filtered_cells"], 1);
  EXPECT_EQ(seen["filter_select"], "star");
  EXPECT_EQ(seen["live_before"], 0);
  EXPECT_EQ(seen["live_after"], 2);
  EXPECT_LT(seen["big_first_screen_ms"].get<int>(), 1000 * test_time_scale());
  // Bounded by what is in sight, not by the job count (10,000 cells would be some 60,000 nodes).
  EXPECT_LT(seen["big_nodes"].get<int>(), 4000);
  EXPECT_LT(seen["big_nodes_scrolled"].get<int>(), 4000);
  EXPECT_EQ(seen["big_count"], "10000 of 10000 shown");

  // The marks are the queue's: the CLI sees what the keys did.
  const auto starred = rgbaq(h.d, {"ls", "jobs", "--run", "1", "--marked", "star", "--json"});
  ASSERT_EQ(starred.exit_code, 0) << starred.err;
  json ids = json::array();
  const json starred_jobs = json::parse(starred.out);  // kept: a range-for over a temporary's member dangles
  for (const auto& j : starred_jobs["jobs"]) ids.push_back(j["id"]);
  EXPECT_EQ(ids, seen["expected_starred"]) << starred.out << "\nover HTTP: " << h.get("/api/v1/jobs?marked=star").body;
  const auto rejected = rgbaq(h.d, {"ls", "jobs", "--run", "1", "--marked", "reject", "--json"});
  ASSERT_EQ(rejected.exit_code, 0) << rejected.err;
  EXPECT_EQ(json::parse(rejected.out)["jobs"].size(), 1u);
  for (const char* shot : {"runs.png", "run.png", "compare.png", "slider.png", "phone.png", "big-run.png"}) {
    EXPECT_TRUE(fs::exists(shots / shot)) << shot;
  }
}

// The goal the gallery is built for: a person reviews a 1,000-image run and stars 50 in under ten
// minutes with the keyboard alone. The test presses those keys and checks the marks in the queue.
TEST(Gallery, AThousandImagesAreReviewedByKeyboardInUnderTenMinutes) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  HttpDaemon h({"--threads", "2"});
  std::string file = "prompt,seed\n";
  for (int p = 0; p < 40; ++p) file += "asset number " + std::to_string(p) + ",1-25\n";
  write_file(h.dir.path() / "review.csv", file);
  const auto t0 = std::chrono::steady_clock::now();
  const auto submit = rgbaq(h.d, {"submit", (h.dir.path() / "review.csv").string(), "--size", "128", "--out", (h.dir.path() / "out").string(), "--wait"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  std::printf("rendered 1,000 images in %.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "review_check.mjs").string(), "http://127.0.0.1:" + std::to_string(h.port),
                              h.token, "1", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json seen = json::parse(r.out);
  std::printf("review: %d images, %d keystrokes (%.3f per image), %.1f s\n", seen["images"].get<int>(), seen["keystrokes"].get<int>(),
              seen["keystrokes_per_image"].get<double>(), seen["seconds"].get<double>());
  EXPECT_EQ(seen["errors"], json::array());
  EXPECT_EQ(seen["images"], 1000);
  EXPECT_LT(seen["seconds"].get<double>(), 600);
  EXPECT_LE(seen["keystrokes_per_image"].get<double>(), 1.06);
  const auto starred = rgbaq(h.d, {"ls", "jobs", "--run", "1", "--marked", "star", "--all", "--json"});
  ASSERT_EQ(starred.exit_code, 0) << starred.err;
  std::set<int64_t> in_queue, pressed;
  const json starred_jobs = json::parse(starred.out);
  for (const auto& j : starred_jobs["jobs"]) in_queue.insert(j["id"].get<int64_t>());
  for (const auto& id : seen["starred"]) pressed.insert(id.get<int64_t>());
  EXPECT_EQ(pressed.size(), 50u);
  EXPECT_EQ(in_queue, pressed);
}

}  // namespace
}  // namespace rgbaq
