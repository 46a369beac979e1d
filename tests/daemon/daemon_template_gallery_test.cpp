// A template run in the gallery (issue 41), in a real browser (tests/oracle/template_gallery_check.mjs):
// the sheet laid by template variables from its selects, kept in the address across a reload, each
// cell where its job's choices (GET /api/v1/jobs) say; a choice filter kept in the address; the viewer
// showing the template and the choices.
#include <gtest/gtest.h>

#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

const fs::path kOracle = fs::path(RGBAQ_SOURCE_DIR_PATH) / "tests/oracle";

TEST(TemplateGallery, AxesAndAChoiceFilterByTemplateVariable) {
  ASSERT_TRUE(fs::exists(kOracle / "node_modules/playwright-core")) << "playwright-core is not installed: run scripts/setup";
  ASSERT_TRUE(fs::exists("/usr/bin/chromium")) << "Debian's chromium is not installed: run scripts/setup";
  HttpDaemon h;
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);  // the jobs stay queued: the layout is what is looked at
  const auto r = rgbaq(h.d, {"submit", "--prompt", "a {red|blue} {fox|owl}", "--seeds", "1-2", "--size", "128", "--out",
                             (h.dir.path() / "out").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int64_t, json> jobs;
  const json listed = h.get("/api/v1/runs/1/jobs").json_body();
  for (const auto& j : listed["jobs"]) jobs[j["id"].get<int64_t>()] = j;
  ASSERT_EQ(jobs.size(), 8u);

  const std::string base = "http://127.0.0.1:" + std::to_string(h.port);
  const auto out = run_process({"/usr/bin/env", "node", (kOracle / "template_gallery_check.mjs").string(), base, h.token, "1"});
  ASSERT_EQ(out.exit_code, 0) << out.out << out.err << log_tail(h.d);
  const json seen = json::parse(out.out);
  EXPECT_EQ(seen["console_errors"], json::array());
  EXPECT_EQ(seen["axis_options"], json({"down: prompt", "down: seed", "down: 1", "down: 2"}));

  // Each row's label is "VALUE · what else varies"; each cell's caption its x value; both as its job says.
  const auto expect_grid = [&](const json& grid, const std::string& x, const std::string& rest_kind, size_t rows, size_t cells) {
    ASSERT_EQ(grid.size(), rows) << grid;
    for (const auto& row : grid) {
      ASSERT_EQ(row["cells"].size(), cells) << grid;
      const std::string label = row["label"];
      const std::string value = label.substr(0, label.find(" \xC2\xB7 ")), rest = label.substr(label.find(" \xC2\xB7 ") + 4);
      for (const auto& cell : row["cells"]) {
        const json& job = jobs.at(cell["job"].get<int64_t>());
        EXPECT_EQ(job["choices"]["1"], value) << row;
        EXPECT_EQ(cell["caption"], x == "seed" ? "seed " + std::to_string(job["seed"].get<uint64_t>()) : job["choices"][x].get<std::string>())
            << row;
        EXPECT_EQ(rest, rest_kind == "seed" ? "seed " + std::to_string(job["seed"].get<uint64_t>()) : "2=" + job["choices"]["2"].get<std::string>())
            << row;
      }
    }
  };
  // Rows by variable 1, seeds across: the other variable splits the rows.
  expect_grid(seen["by_seed"]["grid"], "seed", "choice", 4, 2);
  EXPECT_EQ(seen["by_seed"]["query"], json({{"run", "1"}, {"y", "1"}}));
  EXPECT_EQ(seen["by_seed"]["grid"][0]["label"], "red \xC2\xB7 2=fox");
  // Variable 2 across, 1 down: the seeds split the rows.
  expect_grid(seen["by_choices"]["grid"], "2", "seed", 4, 2);
  EXPECT_EQ(seen["by_choices"]["query"], json({{"run", "1"}, {"x", "2"}, {"y", "1"}}));
  EXPECT_EQ(seen["by_choices"]["grid"][0]["cells"][0]["caption"], "fox");
  EXPECT_EQ(seen["after_reload"], seen["by_choices"]["grid"]);
  // The filter 2=owl: only the owls, kept in the address and across a reload.
  expect_grid(seen["filtered"]["grid"], "2", "seed", 4, 1);
  for (const auto& row : seen["filtered"]["grid"]) EXPECT_EQ(row["cells"][0]["caption"], "owl");
  EXPECT_EQ(seen["filtered"]["query"]["choice"], "2=owl");
  EXPECT_EQ(seen["filtered_after_reload"]["grid"], seen["filtered"]["grid"]);
  EXPECT_EQ(seen["filtered_after_reload"]["select"], "2=owl");
  // The viewer on the first cell (red, seed 1, owl).
  EXPECT_EQ(seen["viewer"]["template"], "a {red|blue} {fox|owl}");
  EXPECT_EQ(seen["viewer"]["choices"], "1 = red, 2 = owl");
  EXPECT_EQ(seen["viewer"]["prompt"], "a red owl");
}

}  // namespace
}  // namespace rgbaq
