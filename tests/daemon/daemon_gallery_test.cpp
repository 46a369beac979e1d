// The review gallery in a real browser (tests/oracle/gallery_check.mjs: Debian's chromium driven by
// playwright-core) on runs rendered by the tiny model: the token kept by the page and never in a cookie
// (what another port of 127.0.0.1 receives grants nothing), every image shown, the checkerboard behind them
// (a pixel of the screenshot), marks by key that `rgbaq ls jobs --marked star` then sees, the key list
// (Esc closes it; keys behind it mark nothing), compare (side by side; a slider that wipes: one box, each
// side one image only, pixels of a screenshot of two test images), the viewer's file name, a filter in
// the address that survives a reload and one that matches nothing, images that appear without a reload
// as jobs finish, states on solid chips, a loading thumbnail unlike a transparent one, the runs list
// (first prompt, submit time, latest image, canceled counts, the queue's pause), copying to "~/picked"
// (the daemon's HOME), more seeds drawn below 2^32, a phone (a tap opens the viewer on the image tapped,
// a long press selects, the runs list fits its width), and a 10,000-job run whose first screen comes
// within a second with a bounded page, the alpha check's badge on each cell (the queue's flags) and its
// filter in the address; no request leaves 127.0.0.1 and no console error. Screenshots
// are kept in the build tree (test-artifacts/gallery).
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

const fs::path kOracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";

// A made folder's path (for a member initialised before the daemon that uses it).
fs::path made(const fs::path& p) {
  fs::create_directories(p);
  return p;
}

// HttpDaemon, with a HOME of its own: the gallery copies into "~/..." of the daemon's user.
struct GalleryDaemon {
  TempDir dir;
  fs::path home = made(dir.path() / "home");
  DaemonProcess d{kRgbaqd, model().dir(), dir.path(), {.extra_args = with_http(), .env = {{"HOME", home.string()}}}};
  int port = http_port(d);
  std::string token = http_token(d);
  HttpReply get(const std::string& target) const { return http_request(port, "GET", target, {{"Authorization", "Bearer " + token}}); }
  HttpReply post(const std::string& target) const { return http_request(port, "POST", target, {{"Authorization", "Bearer " + token}}); }
};

TEST(Gallery, APersonReviewsARunInTheBrowser) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "Debian's chromium is not installed: run scripts/setup";
  GalleryDaemon h;
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
  // Run 4: one job canceled, one queued (the queue is paused).
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a grey cat", "--seeds", "1-2", "--size", "128", "--out", out.string()}).exit_code, 0);
  const json run4 = h.get("/api/v1/runs/4/jobs").json_body();
  ASSERT_EQ(run4["jobs"].size(), 2u) << run4;
  ASSERT_EQ(h.post("/api/v1/jobs/" + std::to_string(run4["jobs"][1]["id"].get<int64_t>()) + "/cancel").status, 200);

  const fs::path shots = fs::path(std::getenv("RGBAQ_BINARY_DIR") ? std::getenv("RGBAQ_BINARY_DIR") : h.dir.path().c_str()) /
                         "test-artifacts" / "gallery";
  fs::create_directories(shots);
  const std::string base = "http://127.0.0.1:" + std::to_string(h.port);
  const auto r = run_process({"/usr/bin/env", "node", (kOracle / "gallery_check.mjs").string(), base, h.token, shots.string(), "1", "2", "3", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << log_tail(h.d);
  const json seen = json::parse(r.out);
  std::printf("gallery: %s\n", seen.dump().c_str());

  EXPECT_EQ(seen["foreign_requests"], json::array());
  EXPECT_EQ(seen["console_errors"], json::array());
  EXPECT_EQ(seen["failed_checks"], json::object());
  EXPECT_EQ(seen["runs_listed"], 4);
  // The runs list: the first prompt, when, the latest image; canceled counted; the queue's pause said.
  EXPECT_NE(seen["runs_small"]["text"].get<std::string>().find("a red fox"), std::string::npos) << seen["runs_small"];
  EXPECT_NE(seen["runs_small"]["text"].get<std::string>().find("submitted"), std::string::npos) << seen["runs_small"];
  EXPECT_EQ(seen["runs_small"]["image"], true) << seen["runs_small"];
  EXPECT_EQ(seen["runs_live"]["state"], "paused") << seen["runs_live"];
  EXPECT_NE(seen["runs_live"]["text"].get<std::string>().find("a green frog"), std::string::npos) << seen["runs_live"];
  EXPECT_NE(seen["runs_live"]["state_background"], "rgba(0, 0, 0, 0)") << seen["runs_live"];
  EXPECT_NE(seen["runs_canceled"]["text"].get<std::string>().find("1 canceled"), std::string::npos) << seen["runs_canceled"];
  // The key list: Esc closes it, and s, x and an arrow pressed while it is open mark nothing.
  EXPECT_EQ(seen["help_opened"], true);
  EXPECT_EQ(seen["marked_behind_help"], json::array());
  EXPECT_EQ(seen["help_open_after_escape"], false);
  EXPECT_NE(seen["background_label"].get<std::string>().find("black"), std::string::npos) << seen["background_label"];
  // Compare with the slider: both images in one box; each side of the divider shows one image only,
  // the current one's transparent half on the background (black), not the pinned red under it.
  ASSERT_EQ(seen["wipe_boxes"].size(), 2u) << seen["wipe_boxes"];
  EXPECT_EQ(seen["wipe_boxes"][0], seen["wipe_boxes"][1]);
  EXPECT_EQ(seen["wipe_half"], json({"red", "red", "black", "blue"}));
  EXPECT_EQ(seen["wipe_30"], json({"red", "black", "blue"}));
  EXPECT_EQ(seen["after_second_p"]["images"], 1) << seen["after_second_p"];
  for (const auto& tag : seen["after_second_p"]["tags"]) EXPECT_EQ(tag.get<std::string>().find("pinned"), std::string::npos) << tag;
  EXPECT_EQ(seen["viewer_file_shown"], true) << seen["viewer_file_expected"];
  // States on a solid chip; a thumbnail on its way unlike a loaded transparent one (on the checkerboard).
  EXPECT_EQ(seen["queued_state"]["text"], "queued");
  EXPECT_NE(seen["queued_state"]["background"], "rgba(0, 0, 0, 0)") << seen["queued_state"];
  EXPECT_NE(seen["thumb_loading"], seen["thumb_transparent"]);
  EXPECT_NE(seen["thumb_loading"]["class"].get<std::string>().find("loading"), std::string::npos) << seen["thumb_loading"];
  EXPECT_EQ(seen["thumb_loading"]["background_image"].get<std::string>().find("conic-gradient"), std::string::npos) << seen["thumb_loading"];
  EXPECT_EQ(seen["no_match"], true);
  // Copy to "~/picked": the prompt says "~" is taken; the PNGs land in the daemon's HOME.
  EXPECT_NE(seen["copy_prompt"].get<std::string>().find("~/"), std::string::npos) << seen["copy_prompt"];
  EXPECT_NE(seen["copy_toast"].get<std::string>().find("2 copied"), std::string::npos) << seen["copy_toast"];
  ASSERT_EQ(seen["copied_names"].size(), 2u);
  for (const auto& name : seen["copied_names"]) EXPECT_TRUE(fs::is_regular_file(h.home / "picked" / name.get<std::string>())) << name;
  // More seeds like these: 3 seeds of the selected prompt, each below 2^32.
  ASSERT_EQ(seen["more_seeds"].size(), 3u) << seen;
  EXPECT_EQ(seen["more_seeds_prompts"], json({"a red fox"}));
  for (const auto& seed : seen["more_seeds"]) EXPECT_LT(std::stoull(seed.get<std::string>()), 1ull << 32) << seed;
  // A phone: each tap opens the viewer on the image tapped; a long press selects; the runs list fits.
  ASSERT_EQ(seen["phone_taps"].size(), 3u);
  for (const auto& tap : seen["phone_taps"]) EXPECT_EQ(tap["shown"], tap["tapped"]) << seen["phone_taps"];
  EXPECT_EQ(seen["phone_long_press"], json({{"selected", 1}, {"viewer", 0}}));
  EXPECT_EQ(seen["phone_tap_while_selecting"], json({{"selected", 2}, {"viewer", 0}}));
  EXPECT_LE(seen["phone_runs"]["page_overflow"].get<int>(), 0) << seen["phone_runs"];
  EXPECT_LE(seen["phone_runs"]["list_overflow"].get<int>(), 0) << seen["phone_runs"];
  ASSERT_TRUE(seen["phone_runs"]["state_column"].is_array()) << seen["phone_runs"];
  EXPECT_GT(seen["phone_runs"]["state_column"][2].get<int>(), 0) << seen["phone_runs"];
  EXPECT_LE(seen["phone_runs"]["state_column"][1].get<int>(), seen["phone_runs"]["width"].get<int>()) << seen["phone_runs"];
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
  // The alpha check: each cell's badge names the flags the queue has for its job (rgbaq ls jobs --json);
  // the tiny model's images are all cut off and fragmented, so "ok" shows none.
  EXPECT_EQ(seen["qa_filter_select"], "cut_off");
  const auto small = rgbaq(h.d, {"ls", "jobs", "--run", "1", "--json"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  json badges = json::array();
  int cut_off = 0, fragmented = 0;
  const json small_jobs = json::parse(small.out);
  for (const auto& j : small_jobs["jobs"]) {
    std::string flags;
    for (const auto& f : j["qa"]["flags"]) flags += (flags.empty() ? "" : " · ") + f.get<std::string>();
    badges.push_back({j["id"], flags.empty() ? "ok" : flags});
    cut_off += flags.find("cut_off") != std::string::npos;
    fragmented += flags.find("fragmented") != std::string::npos;
  }
  EXPECT_EQ(cut_off, 6) << small.out;  // every image of the tiny model here: what makes "ok" match none
  EXPECT_EQ(seen["qa_badges"], badges);
  EXPECT_EQ(seen["qa_ok_cells"], 0);
  EXPECT_EQ(seen["qa_chosen"], json({{"address", "fragmented"}, {"cells", fragmented}}));
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
  for (const char* shot : {"runs.png", "run.png", "compare.png", "slider.png", "slider-wipe.png", "slider-wipe-30.png", "loading.png",
                           "phone-runs.png", "phone-viewer.png", "phone.png", "big-run.png", "alpha-check.png"}) {
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
