// A row's `name` through the real binaries (issue 42, item 16): rgbaq submit and the HTTP API on an
// rgbaqd with the tiny model. A name the user gave is the file's name as written (`Treasure_Chest_5.png`,
// as game and UI assets are named), a prompt is slugged as before, and a name that is no safe file name
// is refused naming the file, line, column and field, with nothing queued.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "storage/png_file.h"
#include "storage/render_metadata.h"
#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

// The PNG at `path`, read back: an RGBA image of the tiny render's size whose metadata names `job` and
// whose A1111 parameters begin with `prompt`.
void expect_image(const fs::path& path, int64_t job, const std::string& prompt) {
  SCOPED_TRACE(path.string());
  ASSERT_TRUE(fs::is_regular_file(path));
  const auto png = storage::read_png(path);
  EXPECT_EQ(png.width, 128);
  EXPECT_EQ(png.height, 128);
  EXPECT_EQ(png.channels, 4);
  EXPECT_EQ(storage::job_id_of(png), job);
  EXPECT_EQ(png.texts.at("parameters").rfind(prompt, 0), 0u) << png.texts.at("parameters");
}

std::set<std::string> file_names(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& p : pngs_in(dir)) out.insert(p.filename().string());
  return out;
}

TEST(DaemonOutputNames, AGivenNameIsTheFileNameAsWrittenAndAPromptIsSluggedAsBefore) {
  HttpDaemon h;
  const fs::path out = h.dir.path() / "renders";
  write_file(h.dir.path() / "names.csv",
             "prompt,seed,name\n"
             "a wooden chest,5,Treasure_Chest\n"
             "a row of tiles,5,row_a\n"
             "a red fox,5,\n");
  const auto csv = rgbaq(h.d, {"submit", (h.dir.path() / "names.csv").string(), "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(csv.exit_code, 0) << csv.out << csv.err;
  // JSONL takes `name` the same way, and so does the HTTP API's submit.
  const auto jsonl = rgbaq(h.d, {"submit", "-", "--format", "jsonl", "--size", "128", "--out", out.string(), "--wait"},
                           "{\"prompt\": \"a round shield\", \"seed\": 5, \"name\": \"UI_Shield\"}\n");
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.out << jsonl.err;
  const auto http = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "a blue gem"}, {"seed", 5}, {"size", "128"}, {"name", "Gem.Blue-2"}}}},
                                                 {"out_dir", out.string()}});
  ASSERT_EQ(http.status, 200) << http.body;
  wait_until_idle(h.d);

  const auto names = file_names(out);
  ASSERT_EQ(names.size(), 5u) << log_tail(h.d);
  for (const char* want : {"Treasure_Chest_5.png", "row_a_5.png", "UI_Shield_5.png", "Gem.Blue-2_5.png"}) {
    EXPECT_EQ(names.count(want), 1u) << want << " among " << json(names).dump();
  }
  const auto derived = std::find_if(names.begin(), names.end(), [](const std::string& n) {
    return std::regex_match(n, std::regex("a-red-fox-[0-9a-f]{8}_5\\.png"));
  });
  EXPECT_NE(derived, names.end()) << "the prompt is slugged as before: " << json(names).dump();

  std::map<std::string, std::string> prompt_of = {{"Treasure_Chest_5.png", "a wooden chest"}, {"row_a_5.png", "a row of tiles"},
                                                  {"UI_Shield_5.png", "a round shield"}, {"Gem.Blue-2_5.png", "a blue gem"}};
  if (derived != names.end()) prompt_of[*derived] = "a red fox";
  const json jobs = jobs_of(h.d);
  ASSERT_EQ(jobs.size(), 5u);
  for (const auto& j : jobs) {
    EXPECT_EQ(j["state"], "done") << j.dump();
    const fs::path output = j["output"].get<std::string>();
    EXPECT_EQ(output.parent_path(), out);
    ASSERT_EQ(prompt_of.count(output.filename().string()), 1u) << j.dump();
    EXPECT_EQ(prompt_of[output.filename().string()], j["prompt"]) << j.dump();
    expect_image(output, j["id"].get<int64_t>(), j["prompt"]);
  }
}

TEST(DaemonOutputNames, AnUnsafeNameIsRefusedNamingLineColumnAndFieldAndNothingIsQueued) {
  HttpDaemon h;
  const fs::path out = h.dir.path() / "renders", file = h.dir.path() / "names.csv";
  write_file(file, "prompt,seed,name\n"
                   "a,1,../x\n"
                   "b,1,a/b\n"
                   "c,1,.hidden\n"
                   "d,1," + std::string(101, 'x') + "\n"
                   "e,1,\"a\x07z\"\n"
                   "f,1,Hero Shot\n"
                   "g,1,Chest\n"
                   "h,1,chest\n"
                   "i,1,fine_name\n");
  const auto r = rgbaq(h.d, {"submit", file.string(), "--size", "128", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  const std::string rule = "a name is kept as written, so it may hold only ASCII letters, digits, '_', '-' and '.'";
  for (const std::string& want : {
           file.string() + ":2:5: name: \"../x\" is not a usable file name: it starts with '.' (a hidden file; \".\" and \"..\" "
                           "are folders) (say \"x\")",
           file.string() + ":3:5: name: \"a/b\" is not a usable file name: '/' (character 2) is not allowed: " + rule +
               " (say \"a_b\")",
           file.string() + ":4:5: name: \".hidden\" is not a usable file name: it starts with '.'",
           file.string() + ":5:5: name: \"" + std::string(60, 'x') + "...\" is not a usable file name: it is 101 characters "
                           "long; a name is at most 100",
           file.string() + ":6:5: name: \"a\\x07z\" is not a usable file name: the control character \\x07 (character 2) is not "
                           "allowed: " + rule,
           file.string() + ":7:5: name: \"Hero Shot\" is not a usable file name: a space (character 5) is not allowed: " + rule +
               " (say \"Hero_Shot\")",
           file.string() + ":9:5: name: \"chest\" with seed 1 and line 8's \"Chest\" differ only in case: on a case-insensitive "
                           "file system (macOS, Windows) chest_1.png is one file with Chest_1.png; give each its own name",
       }) {
    EXPECT_NE(r.err.find(want), std::string::npos) << "missing: " << want << "\nin:\n" << r.err;
  }
  EXPECT_NE(r.err.find("7 errors; nothing was queued"), std::string::npos) << r.err;

  // The daemon refuses as the command does: the HTTP API's rows are checked by the same rule.
  const auto http = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "ok"}, {"name", "ok"}}, {{"prompt", "x"}, {"name", "a b"}}}},
                                                 {"out_dir", out.string()}});
  EXPECT_EQ(http.status, 400) << http.body;
  const json details = http.json_body()["error"]["details"];
  ASSERT_EQ(details.size(), 1u) << http.body;
  EXPECT_EQ(details[0]["line"], 2);
  EXPECT_EQ(details[0]["field"], "name");
  EXPECT_EQ(details[0]["message"], "\"a b\" is not a usable file name: a space (character 2) is not allowed: " + rule + " (say \"a_b\")");

  EXPECT_TRUE(json::parse(rgbaq(h.d, {"ls", "runs", "--json"}).out)["runs"].empty()) << "nothing of a refused file was queued";
  EXPECT_TRUE(jobs_of(h.d).empty());
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace rgbaq
