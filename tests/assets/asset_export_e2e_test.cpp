// The asset export end to end: a real rgbaqd renders a run with the tiny model (one job canceled, two
// starred); the real `rgbaq export RUN --assets DIR` exports its done jobs (trim rectangles against
// bboxes worked out here from each job's PNG, prompts and seeds against `rgbaq ls jobs --json`, every
// file the manifest lists on disk at its size, the atlas's frames), by --marked and --qa as `ls jobs`
// selects; a re-run leaves the user's files; bad options, DIR a file and DIR a link into a folder the
// user may not write fail with a clear message and write nothing; and the HTTP route writes the same
// under a --copy-root only.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "storage/png_file.h"
#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

// The bbox of the pixels with alpha > 8 ([x, y, w, h]), worked out here; null when there is none.
json bbox_of(const fs::path& png) {
  const auto image = storage::read_png(png);
  int x0 = image.width, y0 = image.height, x1 = -1, y1 = -1;
  for (int y = 0; y < image.height; ++y) {
    for (int x = 0; x < image.width; ++x) {
      if (image.rgba[(size_t(y) * image.width + x) * 4 + 3] <= 8) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (x1 < 0) return nullptr;
  return {{"x", x0}, {"y", y0}, {"w", x1 - x0 + 1}, {"h", y1 - y0 + 1}};
}

std::set<int64_t> jobs_in(const json& manifest) {
  std::set<int64_t> ids;
  for (const auto& image : manifest["images"]) ids.insert(image["job"].get<int64_t>());
  return ids;
}

std::set<std::string> listing(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

// As uid 65534 when root (setpriv), else as ourselves.
ProcessResult as_other(std::vector<std::string> argv) {
  if (geteuid() == 0) argv.insert(argv.begin(), {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"});
  return run_process(argv);
}

TEST(AssetExportEndToEnd, ARunsDoneJobsByTheCliAndOverHttp) {
  TempDir root;
  HttpDaemon h({"--copy-root", root.path().string()});
  const fs::path out = h.dir.path() / "out";
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);
  ASSERT_EQ(rgbaq(h.d, {"submit", "--prompt", "a red fox", "--seeds", "1-4", "--size", "128", "--out", out.string()}).exit_code, 0);
  ASSERT_EQ(h.post_json("/api/v1/jobs/4/cancel", json::object()).status, 200);
  ASSERT_EQ(rgbaq(h.d, {"resume"}).exit_code, 0);
  wait_until_idle(h.d);
  ASSERT_EQ(rgbaq(h.d, {"mark", "1", "2", "--star"}).exit_code, 0);
  const json jobs = jobs_of(h.d);
  std::map<int64_t, json> by_id;
  for (const auto& j : jobs) by_id[j["id"].get<int64_t>()] = j;
  ASSERT_EQ(by_id.at(4)["state"], "canceled");

  // The CLI: every done job, trimmed, padded, at two sizes, in an atlas.
  const fs::path game = h.dir.path() / "game";
  const auto r = rgbaq(h.d, {"export", "1", "--assets", game.string(), "--trim", "--pad", "2", "--sizes", "32,64", "--atlas", "items"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("exported "), std::string::npos) << r.out;
  const json manifest = json::parse(read_text(game / "manifest.json"));
  std::set<int64_t> exported = jobs_in(manifest), skipped_empty;
  for (const auto& s : manifest["skipped"]) skipped_empty.insert(s["job"].get<int64_t>());
  for (int64_t id = 1; id <= 3; ++id) {
    const bool empty = bbox_of(by_id.at(id)["output"].get<std::string>()).is_null();
    EXPECT_EQ(exported.count(id), empty ? 0u : 1u) << "job " << id;
    EXPECT_EQ(skipped_empty.count(id), empty ? 1u : 0u) << "job " << id;
  }
  EXPECT_EQ(exported.count(4), 0u) << "a canceled job has no image";
  ASSERT_FALSE(exported.empty()) << "the tiny model drew nothing with alpha above 8";
  for (const auto& image : manifest["images"]) {
    const json& job = by_id.at(image["job"].get<int64_t>());
    EXPECT_EQ(image["prompt"], job["prompt"]);
    EXPECT_EQ(image["seed"], job["seed"]);
    EXPECT_EQ(image["source"]["file"], job["output"]);
    EXPECT_EQ(image["source"]["width"], 128);
    EXPECT_EQ(image["source"]["height"], 128);
    EXPECT_EQ(image["trim"], bbox_of(job["output"].get<std::string>())) << image;
    EXPECT_EQ(image["pad"], 2);
    ASSERT_EQ(image["files"].size(), 3u);
    for (const auto& f : image["files"]) {
      const auto png = storage::read_png(game / f["file"].get<std::string>());
      EXPECT_EQ(f["bytes"], fs::file_size(game / f["file"].get<std::string>()));
      EXPECT_EQ(f["width"], png.width);
      EXPECT_EQ(f["height"], png.height);
      if (f.contains("size")) EXPECT_EQ(std::max(png.width, png.height), f["size"].get<int>());
    }
    EXPECT_EQ(image["atlas"]["page"], 0);
  }
  const json atlas = json::parse(read_text(game / "items.json"));
  EXPECT_EQ(atlas["meta"]["image"], "items.png");
  EXPECT_EQ(atlas["frames"].size(), manifest["images"].size());
  EXPECT_TRUE(fs::is_regular_file(game / "items.png"));

  // By mark, and by the alpha check as `ls jobs` reports it.
  const auto starred = rgbaq(h.d, {"export", "1", "--assets", (h.dir.path() / "starred").string(), "--marked", "star"});
  ASSERT_EQ(starred.exit_code, 0) << starred.err;
  EXPECT_EQ(jobs_in(json::parse(read_text(h.dir.path() / "starred/manifest.json"))), (std::set<int64_t>{1, 2}))
      << "untrimmed, an image with nothing in it is exported too";
  // --qa with a flag job 1's check has (or ok), so that the selection holds at least one job.
  const json& qa1 = by_id.at(1)["qa"];
  ASSERT_TRUE(qa1.is_object() && qa1["flags"].is_array()) << "every done job has its alpha check: " << by_id.at(1);
  const std::string flag = qa1["flags"].empty() ? "ok" : qa1["flags"][0].get<std::string>();
  const auto by_qa = rgbaq(h.d, {"export", "1", "--assets", (h.dir.path() / "qa").string(), "--qa", flag});
  ASSERT_EQ(by_qa.exit_code, 0) << by_qa.err;
  const auto ls_qa = rgbaq(h.d, {"ls", "jobs", "--run", "1", "--state", "done", "--qa", flag, "--json"});
  ASSERT_EQ(ls_qa.exit_code, 0) << ls_qa.err;
  std::set<int64_t> listed_qa;
  const json listed = json::parse(ls_qa.out);  // kept: a range-for over a temporary's member dangles
  for (const auto& j : listed["jobs"]) listed_qa.insert(j["id"].get<int64_t>());
  EXPECT_TRUE(listed_qa.count(1)) << flag << ": " << ls_qa.out;
  EXPECT_EQ(jobs_in(json::parse(read_text(h.dir.path() / "qa/manifest.json"))), listed_qa) << "--qa " << flag;
  // A flag no done job has: nothing is exported (the filter is applied, not just passed along).
  std::set<std::string> flags_seen;
  for (const auto& j : jobs) {
    if (j["state"] == "done") {
      for (const auto& f : j["qa"]["flags"]) flags_seen.insert(f.get<std::string>());
    }
  }
  for (const std::string absent : {"empty", "no_alpha", "cut_off", "fragmented", "fake_transparency"}) {
    if (flags_seen.count(absent)) continue;
    const auto none = rgbaq(h.d, {"export", "1", "--assets", (h.dir.path() / "none").string(), "--qa", absent});
    ASSERT_EQ(none.exit_code, 0) << none.err;
    EXPECT_NE(none.out.find("(no job of run 1 is done with --qa " + absent + ")"), std::string::npos) << none.out;
    EXPECT_TRUE(jobs_in(json::parse(read_text(h.dir.path() / "none/manifest.json"))).empty());
    break;
  }
  std::printf("run 1: %zu images exported trimmed, %zu skipped as empty; --qa %s: %zu\n", exported.size(), skipped_empty.size(),
              flag.c_str(), listed_qa.size());

  // The same export again: its own files replaced, the user's left; the listing is the same.
  std::ofstream(game / "notes.txt") << "mine";
  const auto before = listing(game);
  const auto again = rgbaq(h.d, {"export", "1", "--assets", game.string(), "--trim", "--pad", "2", "--sizes", "32,64", "--atlas", "items"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(listing(game), before);
  EXPECT_EQ(read_text(game / "notes.txt"), "mine");

  // Bad options: a clear message, exit 2, and no folder made.
  const fs::path nothing = h.dir.path() / "nothing";
  for (const auto& [args, said] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--pad", "-1"}, "--pad -1: the padding is 0 to 1024 pixels"},
           {{"--sizes", "0"}, "--sizes 0: a size is 1 to 8192 pixels"},
           {{"--sizes", "64,x"}, "--sizes \"64,x\" is not a list of pixel sizes"},
           {{"--pad", "20", "--atlas", "items", "--atlas-max", "16"}, "--atlas-max 16 is smaller than job "},
           {{"--format", "gif"}, "--format \"gif\" is not png or webp"},
           {{"--qa", "blurry"}, "--qa \"blurry\" is not ok or one of"}}) {
    std::vector<std::string> argv = {"export", "1", "--assets", nothing.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto bad = rgbaq(h.d, argv);
    EXPECT_EQ(bad.exit_code, 2) << said << "\n" << bad.err;
    EXPECT_NE(bad.err.find(said), std::string::npos) << bad.err;
    EXPECT_FALSE(fs::exists(nothing)) << said;
  }
  // DIR a file; DIR a link into a folder the user may not write (as another user).
  std::ofstream(h.dir.path() / "a-file") << "x";
  const auto file = rgbaq(h.d, {"export", "1", "--assets", (h.dir.path() / "a-file").string()});
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_NE(file.err.find("Not a directory"), std::string::npos) << file.err;
  EXPECT_EQ(read_text(h.dir.path() / "a-file"), "x");
  const fs::path locked = root.path() / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  fs::create_directory_symlink(locked, root.path() / "link");
  if (geteuid() == 0) {
    const auto other = as_other({kRgbaq, "--socket", h.d.socket().string(), "export", "1", "--assets", (root.path() / "link").string()});
    EXPECT_EQ(other.exit_code, 1) << other.err;
    EXPECT_NE(other.err.find("cannot export into " + locked.string() + ": Permission denied"), std::string::npos) << other.err;
    EXPECT_TRUE(listing(locked).empty());
  }

  // Over HTTP (the gallery's selection): under the --copy-root only; a canceled job skipped by name.
  const auto http = h.post_json("/api/v1/jobs/export-assets",
                                {{"jobs", {1, 2, 4}}, {"folder", (root.path() / "picked").string()}, {"sizes", {32}}, {"atlas", "items"}});
  ASSERT_EQ(http.status, 200) << http.body;
  const json summary = http.json_body();
  EXPECT_EQ(summary["images"], 2);
  EXPECT_EQ(summary["files"], 6);  // 2 images at two sizes, the atlas's page and JSON
  ASSERT_EQ(summary["skipped"].size(), 1u);
  EXPECT_EQ(summary["skipped"][0]["job"], 4);
  EXPECT_NE(summary["skipped"][0]["reason"].get<std::string>().find("canceled, not done"), std::string::npos) << summary;
  const json http_manifest = json::parse(read_text(root.path() / "picked/manifest.json"));
  EXPECT_EQ(jobs_in(http_manifest), (std::set<int64_t>{1, 2}));
  struct stat st {};
  ASSERT_EQ(stat((root.path() / "picked/items.png").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u & ~current_umask() & 0644u) << "the user's files: the user's umask";
  // A run's jobs by mark, as the CLI selects them.
  const auto by_run = h.post_json("/api/v1/jobs/export-assets", {{"run", 1}, {"marked", "star"}, {"folder", (root.path() / "run").string()}});
  ASSERT_EQ(by_run.status, 200) << by_run.body;
  EXPECT_EQ(jobs_in(json::parse(read_text(root.path() / "run/manifest.json"))), (std::set<int64_t>{1, 2}));
  // Refusals: outside the roots, through a link elsewhere, bad options; nothing made.
  EXPECT_EQ(h.post_json("/api/v1/jobs/export-assets", {{"jobs", {1}}, {"folder", (h.dir.path() / "elsewhere").string()}}).status, 400);
  EXPECT_FALSE(fs::exists(h.dir.path() / "elsewhere"));
  fs::create_directory_symlink(h.dir.path(), root.path() / "out-link");
  EXPECT_EQ(h.post_json("/api/v1/jobs/export-assets", {{"jobs", {1}}, {"folder", (root.path() / "out-link/x").string()}}).status, 400);
  EXPECT_FALSE(fs::exists(h.dir.path() / "x"));
  const auto bad_pad = h.post_json("/api/v1/jobs/export-assets", {{"jobs", {1}}, {"pad", -1}, {"folder", (root.path() / "bad").string()}});
  EXPECT_EQ(bad_pad.status, 400);
  EXPECT_NE(bad_pad.body.find("\\\"pad\\\" -1"), std::string::npos) << bad_pad.body;
  EXPECT_FALSE(fs::exists(root.path() / "bad"));
  EXPECT_EQ(h.post_json("/api/v1/jobs/export-assets", {{"folder", (root.path() / "bad").string()}}).status, 400);
  // A size past the limit (65535 px would be a 68 GB buffer) is refused before any work; the daemon serves on.
  const auto huge = h.post_json("/api/v1/jobs/export-assets", {{"jobs", {1}}, {"sizes", {65535}}, {"folder", (root.path() / "bad").string()}});
  EXPECT_EQ(huge.status, 400);
  EXPECT_NE(huge.body.find("\\\"sizes\\\" 65535: a size is 1 to 8192 pixels"), std::string::npos) << huge.body;
  EXPECT_FALSE(fs::exists(root.path() / "bad"));
  // An atlas page smaller than an image (known once it is read) is named as the API names it, not the CLI.
  const auto small_page = h.post_json("/api/v1/jobs/export-assets",
                                      {{"jobs", {1}}, {"atlas", "items"}, {"atlas_max", 8}, {"folder", (root.path() / "bad").string()}});
  EXPECT_EQ(small_page.status, 400);
  EXPECT_NE(small_page.body.find("\\\"atlas_max\\\" 8 is smaller than job 1's image (128x128)"), std::string::npos) << small_page.body;
  EXPECT_EQ(small_page.body.find("--atlas"), std::string::npos) << small_page.body;
  EXPECT_FALSE(fs::exists(root.path() / "bad"));
  const auto after = h.post_json("/api/v1/jobs/export-assets", {{"jobs", {1}}, {"folder", (root.path() / "after").string()}});
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json_body()["images"], 1);
}

}  // namespace
}  // namespace rgbaq
