// Prompt templates through the real binaries (issue 41): rgbaq reads the wildcard files and sends their
// texts, rgbaqd expands (and reads no client path). The dry run's 20 jobs and count are what a real
// submit then queues (`rgbaq ls jobs --json`); errors name the line and column and queue nothing; a
// 10^12 template is refused at once; --sample is reproducible and differs by seed; the HTTP submit takes
// wildcards inline; a rendered template run records its template and choices in the queue, the PNG and
// the export, and `rgbaq sheet --x/--y` puts each job where its choices say (read from the sheet's
// legend and the jobs, not from pixels).
#include <gtest/gtest.h>

#include <chrono>

#include "jobs/csv_reader.h"
#include "storage/png_file.h"
#include "tests/daemon/http_client.h"

namespace rgbaq {
namespace {

struct TemplateFiles {
  fs::path wildcards, csv;
  explicit TemplateFiles(const fs::path& dir) : wildcards(dir / "wildcards"), csv(dir / "icons.csv") {
    fs::create_directories(wildcards);
    write_file(wildcards / "style.txt", "pixel art\n# a comment\n\n{flat|cel} shaded __color__\n");
    write_file(wildcards / "color.txt", "red\nblue\n");
    // Row 2: 2 x 2 x (1 + 2 x 2) = 20 combinations, x 2 seeds (--seeds 1-2); row 3: 1; row 4: 2 x 2 seeds.
    write_file(csv, "prompt,seed,name\n"
                    "\"a {red|gold} {sword|shield}, __style__\",,\n"
                    "plain owl,3,\n"
                    "\"{big|small} chest\",,chest\n");
  }
};

json submit_json(const DaemonProcess& d, const TemplateFiles& f, const fs::path& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"submit", f.csv.string(), "--wildcards", f.wildcards.string(), "--seeds", "1-2", "--size", "128",
                                   "--out", out.string(), "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = rgbaq(d, args);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

// What a preview entry and a queued job have in common.
json comparable(const json& j) {
  return {{"prompt", j["prompt"]}, {"seed", j["seed"]}, {"name", j["name"]}, {"output", j["output"]},
          {"template", j["template"]}, {"choices", j["choices"]}, {"width", j["width"]}, {"lora", j["lora"]}};
}

TEST(DaemonTemplates, TheDryRunIsWhatTheSubmitQueues) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);  // the queue as submitted, nothing rendered
  const TemplateFiles f(dir.path());
  const fs::path out = dir.path() / "out";

  const json dry = submit_json(d, f, out, {"--dry-run"});
  EXPECT_EQ(dry["jobs"], 45);
  ASSERT_EQ(dry["preview"].size(), 20u);
  // Worked by hand: the leftmost choice slowest, each combination's seeds together.
  EXPECT_EQ(dry["preview"][0]["prompt"], "a red sword, pixel art");
  EXPECT_EQ(dry["preview"][1]["seed"], 2);
  EXPECT_EQ(dry["preview"][4]["prompt"], "a red sword, flat shaded blue");
  EXPECT_EQ(dry["preview"][4]["choices"], json({{"1", "red"}, {"2", "sword"}, {"style", "flat shaded blue"}, {"style.1", "flat"},
                                                {"style.color", "blue"}}));
  EXPECT_EQ(dry["preview"][10]["prompt"], "a red shield, pixel art");
  const auto human = rgbaq(d, {"submit", f.csv.string(), "--wildcards", f.wildcards.string(), "--seeds", "1-2", "--size", "128", "--out",
                               out.string(), "--dry-run"});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_TRUE(jobs_of(d).empty()) << "a dry run queues nothing";

  const json real = submit_json(d, f, out, {});
  EXPECT_EQ(real["jobs"], 45);
  const json queued = jobs_of(d);
  ASSERT_EQ(queued.size(), 45u);
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(comparable(dry["preview"][i]), comparable(queued[i])) << i;
    // The human form: each of the first 20 jobs a line with its line, seed, prompt and file.
    const std::string file = fs::path(queued[i]["output"].get<std::string>()).filename().string();
    EXPECT_NE(human.out.find(", seed " + std::to_string(queued[i]["seed"].get<uint64_t>()) + ": " + queued[i]["prompt"].get<std::string>() +
                             "  ["),
              std::string::npos)
        << human.out;
    EXPECT_NE(human.out.find("-> " + file + "\n"), std::string::npos) << human.out;
  }
  EXPECT_NE(human.out.find("  line 2, seed 1: a red sword, pixel art  [1=red, 2=sword, style=pixel art]  -> "), std::string::npos)
      << human.out;
  EXPECT_NE(human.out.find("\n  and 25 more jobs\n"), std::string::npos) << human.out;
  EXPECT_EQ(queued[40]["prompt"], "plain owl");
  EXPECT_TRUE(queued[40]["template"].is_null());
  EXPECT_EQ(queued[41]["name"], "chest-1");
  EXPECT_EQ(queued[43]["name"], "chest-2");
  EXPECT_EQ(queued[44]["template"], "{big|small} chest");
  EXPECT_EQ(queued[44]["choices"], json({{"1", "small"}}));
}

TEST(DaemonTemplates, ErrorsNameLineAndColumnAndQueueNothing) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const TemplateFiles f(dir.path());
  const fs::path out = dir.path() / "out";
  write_file(f.wildcards / "loop.txt", "again __loop__\n");
  write_file(dir.path() / "bad.csv", "prompt\n\"x __nope__\"\n\"ok {a|b\"\nfine\n\"__loop__\"\n");
  const auto bad = rgbaq(d, {"submit", (dir.path() / "bad.csv").string(), "--wildcards", f.wildcards.string(), "--out", out.string()});
  EXPECT_EQ(bad.exit_code, 2);
  const std::string w = f.wildcards.string(), file = (dir.path() / "bad.csv").string();
  EXPECT_NE(bad.err.find(file + ":2:4: prompt: unknown wildcard __nope__: there is no nope.txt in " + w + "\n"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(file + ":3:5: prompt: this '{' is never closed"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find(file + ":5:2: prompt: in __loop__, " + w + "/loop.txt:1:7: a wildcard cycle: __loop__ -> __loop__"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("3 errors; nothing was queued"), std::string::npos) << bad.err;

  // 10^12 combinations: counted, refused at once, before anything is sent.
  std::string twelve;
  for (int i = 0; i < 12; ++i) twelve += "{0|1|2|3|4|5|6|7|8|9}";
  write_file(dir.path() / "big.csv", "prompt\n" + twelve + "\n");
  const auto t0 = std::chrono::steady_clock::now();
  const auto big = rgbaq(d, {"submit", (dir.path() / "big.csv").string(), "--out", out.string()});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0 * test_time_scale());
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.err.find((dir.path() / "big.csv").string() +
                         ":2:1: prompt: this row's template makes 1000000000000 combinations; one submit may hold at most 100000"),
            std::string::npos)
      << big.err;
  EXPECT_TRUE(jobs_of(d).empty());
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"].size(), 0u);

  // The daemon expands from the texts sent, never from the folder named: a submit that names the
  // folder (style.txt is there) but sends no text is refused.
  Raw raw(d.socket());
  raw.send_all(json({{"v", 1}, {"id", 1}, {"method", "submit"},
                     {"params", {{"file", "prompt\n__style__\n"}, {"out_dir", out.string()}, {"wildcards_dir", w}, {"file_name", "t.csv"}}}})
                   .dump() +
               "\n");
  const json reply = json::parse(raw.read_line());
  EXPECT_EQ(reply["error"]["code"], "invalid_file") << reply;
  EXPECT_EQ(reply["error"]["details"][0]["text"], "t.csv:2:1: prompt: unknown wildcard __style__: there is no style.txt in " + w);
}

TEST(DaemonTemplates, SampleIsReproducibleAndDiffersBySeed) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  ASSERT_EQ(rgbaq(d, {"pause"}).exit_code, 0);
  const TemplateFiles f(dir.path());
  const fs::path out = dir.path() / "out";
  const auto prompts = [](const json& r) {
    std::vector<std::string> p;
    for (const auto& j : r["preview"]) p.push_back(j["prompt"].get<std::string>() + " " + std::to_string(j["seed"].get<uint64_t>()));
    return p;
  };
  const json a = submit_json(d, f, out, {"--dry-run", "--sample", "3", "--sample-seed", "9"});
  const json b = submit_json(d, f, out, {"--dry-run", "--sample", "3", "--sample-seed", "9"});
  const json c = submit_json(d, f, out, {"--dry-run", "--sample", "3", "--sample-seed", "10"});
  // Row 2: 3 of 20 combinations x 2 seeds; row 3: 1; row 4: both its combinations (fewer than 3) x 2.
  EXPECT_EQ(a["jobs"], 11);
  EXPECT_EQ(prompts(a), prompts(b));
  EXPECT_NE(prompts(a), prompts(c));
  std::set<std::string> distinct;
  for (size_t i = 0; i < 6; i += 2) distinct.insert(a["preview"][i]["prompt"].get<std::string>());
  EXPECT_EQ(distinct.size(), 3u);
  // Without --sample-seed one is drawn and said; given again, it draws the same.
  const auto drawn = rgbaq(d, {"submit", f.csv.string(), "--wildcards", f.wildcards.string(), "--seeds", "1-2", "--out", out.string(),
                               "--sample", "3", "--dry-run"});
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  const auto at = drawn.err.find("drew with --sample-seed ");
  ASSERT_NE(at, std::string::npos) << drawn.err;
  const std::string seed = drawn.err.substr(at + 24, drawn.err.find(' ', at + 24) - at - 24);
  const json again = submit_json(d, f, out, {"--dry-run", "--sample", "3", "--sample-seed", seed});
  EXPECT_NE(drawn.out.find(again["preview"][0]["prompt"].get<std::string>()), std::string::npos) << drawn.out;
  // The real submit queues what the dry run showed.
  submit_json(d, f, out, {"--sample", "3", "--sample-seed", "9"});
  const json queued = jobs_of(d);
  ASSERT_EQ(queued.size(), 11u);
  for (size_t i = 0; i < 11; ++i) EXPECT_EQ(comparable(a["preview"][i]), comparable(queued[i])) << i;
  EXPECT_EQ(json::parse(rgbaq(d, {"ls", "runs", "--json"}).out)["runs"][0]["options"]["sample"], json({{"size", 3}, {"seed", 9}}));
}

TEST(DaemonTemplates, HttpSubmitTakesWildcardsInline) {
  HttpDaemon h;
  ASSERT_EQ(rgbaq(h.d, {"pause"}).exit_code, 0);
  const json body = {{"rows", {{{"prompt", "a __color__ {cat|dog}"}, {"seed", "1"}, {"size", "128"}}}},
                     {"wildcards", {{"color", "red\n# not one\nblue\n"}}},
                     {"out_dir", (h.dir.path() / "out").string()}};
  json dry = body;
  dry["dry_run"] = true;
  const auto preview = h.post_json("/api/v1/runs", dry);
  ASSERT_EQ(preview.status, 200) << preview.body;
  std::vector<std::string> prompts;
  const json answer = preview.json_body();
  for (const auto& j : answer["preview"]) prompts.push_back(j["prompt"]);
  EXPECT_EQ(prompts, (std::vector<std::string>{"a red cat", "a red dog", "a blue cat", "a blue dog"}));
  ASSERT_EQ(h.post_json("/api/v1/runs", body).status, 200);
  const json queued = jobs_of(h.d);
  ASSERT_EQ(queued.size(), 4u);
  EXPECT_EQ(queued[3]["choices"], json({{"color", "blue"}, {"1", "dog"}}));
  const auto missing = h.post_json("/api/v1/runs", {{"rows", {{{"prompt", "a __colour__"}}}}, {"out_dir", (h.dir.path() / "out").string()}});
  EXPECT_NE(missing.status, 200);
  EXPECT_NE(missing.body.find("http:1:14: prompt: unknown wildcard __colour__: there is no colour.txt in the submit's wildcards"),
            std::string::npos)
      << missing.body;
  EXPECT_EQ(jobs_of(h.d).size(), 4u);
}

TEST(DaemonTemplates, ARenderedRunRecordsItsChoicesAndItsSheetLaysThemOut) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "out";
  const auto r = rgbaq(d, {"submit", "--prompt", "a {red|blue} {fox|owl}", "--seeds", "1", "--size", "128", "--out", out.string(),
                           "--wildcards", (dir.path() / "none").string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json jobs = jobs_of(d);
  ASSERT_EQ(jobs.size(), 4u);
  // Worked by hand: the expansion order, and each PNG's rgbaq chunk with the template and choices.
  const std::vector<std::pair<std::string, json>> want = {{"a red fox", {{"1", "red"}, {"2", "fox"}}},
                                                          {"a red owl", {{"1", "red"}, {"2", "owl"}}},
                                                          {"a blue fox", {{"1", "blue"}, {"2", "fox"}}},
                                                          {"a blue owl", {{"1", "blue"}, {"2", "owl"}}}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(jobs[i]["prompt"], want[i].first);
    const auto png = storage::read_png(jobs[i]["output"].get<std::string>());
    const json chunk = json::parse(png.texts.at("rgbaq"));
    EXPECT_EQ(chunk["template"], "a {red|blue} {fox|owl}");
    EXPECT_EQ(chunk["choices"], want[i].second);
    EXPECT_EQ(png.texts.at("parameters").rfind(want[i].first + "\n", 0), 0u);
  }
  // The CSV export: the template and the choices' JSON in their columns.
  const auto csv = rgbaq(d, {"export", "1", "--format", "csv"});
  const jobs::CsvDocument doc = jobs::read_csv(csv.out);
  ASSERT_TRUE(doc.errors.empty()) << csv.out;
  ASSERT_EQ(doc.records.size(), 5u);
  const auto& header = doc.records[0].fields;
  ASSERT_EQ(header[15].value, "template");
  ASSERT_EQ(header[16].value, "choices");
  EXPECT_EQ(doc.records[2].fields[15].value, "a {red|blue} {fox|owl}");
  EXPECT_EQ(json::parse(doc.records[2].fields[16].value), want[1].second);

  // The sheet by --x 2 --y 1: columns fox, owl; rows red, blue; each job in the cell its choices say.
  const fs::path sheet = dir.path() / "sheet.png";
  const auto s = rgbaq(d, {"sheet", "1", "--x", "2", "--y", "1", "-o", sheet.string()});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const json legend = json::parse(storage::read_png(sheet).texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["columns"], json({"fox", "owl"}));
  EXPECT_EQ(legend["rows"], json({"red", "blue"}));
  ASSERT_EQ(legend["cells"].size(), 4u);
  std::map<int64_t, json> by_id;
  for (const auto& j : jobs) by_id[j["id"].get<int64_t>()] = j;
  for (const auto& cell : legend["cells"]) {
    const json& job = by_id.at(cell[0].get<int64_t>());
    EXPECT_EQ(legend["rows"][cell[1].get<size_t>()], job["choices"]["1"]) << cell;
    EXPECT_EQ(legend["columns"][cell[2].get<size_t>()], job["choices"]["2"]) << cell;
  }
  // The seed across, variable 1 down: the other choice splits the rows (red / 2=fox, red / 2=owl, ...).
  const auto by_seed = rgbaq(d, {"sheet", "1", "--y", "1", "-o", sheet.string()});
  ASSERT_EQ(by_seed.exit_code, 0) << by_seed.err;
  const json seed_legend = json::parse(storage::read_png(sheet).texts.at("rgbaq-sheet"));
  EXPECT_EQ(seed_legend["columns"], json({"seed 1"}));
  EXPECT_EQ(seed_legend["rows"], json({"red", "red", "blue", "blue"}));
  EXPECT_EQ(seed_legend["row_details"], json({"2=fox", "2=owl", "2=fox", "2=owl"}));
  const auto unknown = rgbaq(d, {"sheet", "1", "--x", "colour"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--x \"colour\" is not one of prompt, seed, size, lora, lora:NAME, or a template variable of run 1: "
                             "no job has the template variable \"colour\" (the run's variables: 1, 2)"),
            std::string::npos)
      << unknown.err;
}

}  // namespace
}  // namespace rgbaq
