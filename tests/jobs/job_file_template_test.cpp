// Templates in job files: each combination a row (row order, then the template's order, then seeds),
// its template and choices recorded, named rows' files numbered by combination, LoRA tags in
// alternatives, --sample, every error at the line and column of the character at fault (through CSV
// quoting and JSON escapes, counted by hand) with nothing queued, and the job limit applied to the
// counted combinations (10^12 refused at once).
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>

#include "jobs/job_file.h"
#include "jobs/output_name.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::jobs {
namespace {

ParseOptions fixed_options(WildcardSet* wildcards = nullptr) {
  ParseOptions o;
  o.defaults.size = "256";
  uint64_t next = 1000;
  o.random_seed = [next]() mutable { return next++; };
  o.wildcards = wildcards;
  return o;
}

std::string all_errors(const JobFile& f) {
  std::string all;
  for (const auto& e : f.errors) all += "\n  " + e.to_string("f");
  return all;
}

// The file's one error, as to_string names it; nothing of the file is queued.
std::string only_error(const JobFile& f) {
  EXPECT_EQ(f.errors.size(), 1u) << all_errors(f);
  EXPECT_TRUE(f.rows.empty());
  EXPECT_TRUE(f.jobs.empty());
  EXPECT_EQ(f.job_count, 0u);
  return f.errors.empty() ? "" : f.errors[0].to_string("f");
}

TEST(JobFileTemplates, EachCombinationIsARowInOrderThenItsSeeds) {
  const auto f = parse_job_file("prompt,seed,name\n"
                                "\"{red|blue} {sword|shield}\",1-2,\n"
                                "plain fox,7,\n"
                                "\"a {cat|dog}\",3,pet\n"
                                "\"x {a|b}\",,\n",
                                FileFormat::kCsv, fixed_options());
  ASSERT_TRUE(f.errors.empty()) << all_errors(f);
  std::vector<std::tuple<std::string, uint64_t, std::string, std::string>> got;
  for (const auto& j : f.jobs) got.emplace_back(j.prompt, j.seed, j.name, j.choices_json);
  const std::vector<std::tuple<std::string, uint64_t, std::string, std::string>> want = {
      {"red sword", 1, "", R"({"1":"red","2":"sword"})"},   {"red sword", 2, "", R"({"1":"red","2":"sword"})"},
      {"red shield", 1, "", R"({"1":"red","2":"shield"})"}, {"red shield", 2, "", R"({"1":"red","2":"shield"})"},
      {"blue sword", 1, "", R"({"1":"blue","2":"sword"})"}, {"blue sword", 2, "", R"({"1":"blue","2":"sword"})"},
      {"blue shield", 1, "", R"({"1":"blue","2":"shield"})"}, {"blue shield", 2, "", R"({"1":"blue","2":"shield"})"},
      {"plain fox", 7, "", ""},
      // One name, two prompts: each combination's files are NAME-K.
      {"a cat", 3, "pet-1", R"({"1":"cat"})"}, {"a dog", 3, "pet-2", R"({"1":"dog"})"},
      // No seed: one drawn for the row, the same for each of its combinations (a grid by variable).
      {"x a", 1000, "", R"({"1":"a"})"}, {"x b", 1000, "", R"({"1":"b"})"}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(f.job_count, 13u);
  EXPECT_EQ(f.jobs[0].template_text, "{red|blue} {sword|shield}");
  EXPECT_EQ(f.jobs[8].template_text, "");
  EXPECT_EQ(f.jobs[9].line, 4);
  EXPECT_TRUE(f.jobs[11].seed_was_random);
  EXPECT_EQ(output_file_name(f.jobs[9].prompt, f.jobs[9].name, f.jobs[9].seed, f.jobs[9].size), "pet-1_3.png");
}

TEST(JobFileTemplates, LoraTagsInAlternativesGiveEachCombinationItsLoras) {
  const auto f = parse_job_file("{\"prompt\": \"{<lora:pixel-art:0.8> |}a sword\", \"seed\": 1}\n", FileFormat::kJsonl, fixed_options());
  ASSERT_TRUE(f.errors.empty()) << all_errors(f);
  ASSERT_EQ(f.jobs.size(), 2u);
  EXPECT_EQ(f.jobs[0].prompt, "<lora:pixel-art:0.8> a sword");
  EXPECT_EQ(f.jobs[0].lora, "pixel-art:0.8");
  EXPECT_EQ(f.jobs[1].prompt, "a sword");
  EXPECT_EQ(f.jobs[1].lora, "");
  // A bad tag in one combination is the row's error, naming the combination.
  const auto bad = parse_job_file("prompt\n\"{ok|<lora:x:99>} a sword\"\n", FileFormat::kCsv, fixed_options());
  EXPECT_NE(only_error(bad).find("f:2:1: prompt: combination 2 (1=<lora:x:99>): "), std::string::npos) << all_errors(bad);
}

TEST(JobFileTemplates, WildcardsFromAFolder) {
  TempDir dir;
  std::ofstream(dir.path() / "style.txt") << "pixel art\n# not an option\n\nink {wash|line}\n";
  std::filesystem::create_directories(dir.path() / "animals");
  std::ofstream(dir.path() / "animals" / "cats.txt") << "tabby\n";
  auto files = WildcardSet::from_folder(dir.path());
  const auto f = parse_job_file("prompt,seed\n\"a __animals/cats__, __style__\",5\n", FileFormat::kCsv, fixed_options(&files));
  ASSERT_TRUE(f.errors.empty()) << all_errors(f);
  std::vector<std::string> prompts;
  for (const auto& j : f.jobs) prompts.push_back(j.prompt);
  EXPECT_EQ(prompts, (std::vector<std::string>{"a tabby, pixel art", "a tabby, ink wash", "a tabby, ink line"}));
  EXPECT_EQ(f.jobs[2].choices_json, R"({"animals/cats":"tabby","style":"ink line","style.1":"line"})");
  // What the CLI sends with the submit: the texts it read, by name.
  EXPECT_EQ(files.texts().size(), 2u);
  EXPECT_EQ(files.texts().at("animals/cats"), "tabby\n");
}

TEST(JobFileTemplates, ErrorsNameTheLineAndColumnAndQueueNothing) {
  TempDir dir;
  std::ofstream(dir.path() / "empty.txt") << "# nothing here\n\n";
  std::ofstream(dir.path() / "a.txt") << "x __b__\n";
  std::ofstream(dir.path() / "b.txt") << "y\n__a__ again\n";
  std::ofstream(dir.path() / "bad.txt") << "fine\n\tstray } here\n";
  auto files = WildcardSet::from_folder(dir.path());
  const std::string d = dir.path().string();
  const auto csv = [&](const std::string& text) { return parse_job_file(text, FileFormat::kCsv, fixed_options(&files)); };

  // Counted by hand: line 2 is `"say ""hi"" {a|b"`; its '{' is the 13th character (the quote, then
  // each doubled quote two characters).
  EXPECT_EQ(only_error(csv("prompt\nok\n\"say \"\"hi\"\" {a|b\"\n")), "f:3:13: prompt: this '{' is never closed: no '}' ends its "
                                                                      "group (write \\{ for a '{' of the prompt)");
  // A quoted field over two lines: the '{' is on the second, 6th character.
  EXPECT_EQ(only_error(csv("prompt,seed\n\"line one\nline {two\",1\n")).rfind("f:3:6: prompt: this '{' is never closed", 0), 0u);
  // A stray '}' after a column before the prompt.
  EXPECT_EQ(only_error(csv("seed,prompt\n4,a} b\n")).rfind("f:2:4: prompt: a '}' that closes no '{' (write \\} for", 0), 0u);
  EXPECT_EQ(only_error(csv("prompt\n\"a __colour__ b\"\n")), "f:2:4: prompt: unknown wildcard __colour__: there is no colour.txt in " + d);
  EXPECT_EQ(only_error(csv("prompt\n__empty__\n")),
            "f:2:1: prompt: wildcard __empty__: " + d + "/empty.txt has no options (each of its lines is blank or a # comment)");
  EXPECT_EQ(only_error(csv("prompt\n\"{__a__|b}\"\n")), "f:2:3: prompt: in __a__, " + d + "/a.txt:1:3: in __b__, " + d +
                                                           "/b.txt:2:1: a wildcard cycle: __a__ -> __b__ -> __a__ (a wildcard may "
                                                           "not name itself, even through others)");
  // In a wildcard's file: its line and column (a tab is one character).
  EXPECT_EQ(only_error(csv("prompt\nuse __bad__\n")).rfind("f:2:5: prompt: in __bad__, " + d + "/bad.txt:2:8: a '}' that closes", 0), 0u);

  // JSONL: through the escapes, counted by hand: `{"seed": 1, "PROMPT": "a \"q\" \u00e9 }"}` has its
  // '}' at character 39 (\" is two, \u00e9 six).
  const auto j = parse_job_file("{\"seed\": 1, \"PROMPT\": \"a \\\"q\\\" \\u00e9 }\"}\n", FileFormat::kJsonl,
                                fixed_options(&files));
  EXPECT_EQ(only_error(j).rfind("f:1:39: prompt: a '}' that closes no '{'", 0), 0u);

  // Several rows with errors: each reported, nothing queued.
  const auto two = csv("prompt\n{a|b}\na {\nb }\n");
  EXPECT_EQ(two.errors.size(), 2u) << all_errors(two);
  EXPECT_TRUE(two.rows.empty());
  // A combination with no text.
  EXPECT_NE(only_error(csv("prompt\n\"{|}\"\n")).find("combination 1 (1=): is empty"), std::string::npos);
}

TEST(JobFileTemplates, TheLimitCountsCombinationsAndRefusesTenToTheTwelveAtOnce) {
  std::string twelve;
  for (int i = 0; i < 12; ++i) twelve += "{0|1|2|3|4|5|6|7|8|9}";
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = parse_job_file("prompt\n" + twelve + "\n", FileFormat::kCsv, fixed_options());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
  EXPECT_EQ(only_error(f), "f:2:1: prompt: this row's template makes 1000000000000 combinations; one submit may hold at most "
                           "100000 images (rgbaq submit --max-jobs raises it, up to the daemon's --max-jobs-per-submit)");

  ParseOptions small = fixed_options();
  small.max_jobs = 10;
  EXPECT_EQ(only_error(parse_job_file("prompt,seed\n{a|b|c|d},1-3\n", FileFormat::kCsv, small))
                .rfind("f:2:1: prompt: this row's template makes 4 combinations x 3 images each = 12 images; ", 0),
            0u);
  // Rows together: the file's total, counted, is said.
  EXPECT_EQ(only_error(parse_job_file("prompt\n{a|b|c|d|e|f}\n{a|b|c|d|e|f}\nz\n", FileFormat::kCsv, small)),
            "f:3:1: prompt: with line 3 the file would hold more than 10 images (rgbaq submit --max-jobs raises it, up to the "
            "daemon's --max-jobs-per-submit); it would make 13 in all");
}

TEST(JobFileTemplates, SampleDrawsDistinctCombinationsReproducibly) {
  std::string thousand;
  for (int i = 0; i < 3; ++i) thousand += "{0|1|2|3|4|5|6|7|8|9}";
  const std::string text = "prompt,seed\n" + thousand + ",1\nplain,1\n{x|y},1\n";
  const auto sampled = [&](uint64_t seed, uint64_t n) {
    ParseOptions o = fixed_options();
    o.sample = n;
    o.sample_seed = seed;
    const auto f = parse_job_file(text, FileFormat::kCsv, o);
    EXPECT_TRUE(f.errors.empty()) << all_errors(f);
    std::vector<std::string> prompts;
    for (const auto& j : f.jobs) prompts.push_back(j.prompt);
    return prompts;
  };
  const auto a = sampled(5, 10), b = sampled(5, 10), c = sampled(6, 10);
  ASSERT_EQ(a.size(), 13u);  // 10 drawn, the plain row, both of {x|y} (fewer than 10: all)
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::set<std::string>(a.begin(), a.begin() + 10).size(), 10u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.begin() + 10)) << "in the template's order";
  EXPECT_EQ(std::vector<std::string>(a.begin() + 10, a.end()), (std::vector<std::string>{"plain", "x", "y"}));
  // The limit counts what is drawn, not the 1000 combinations.
  ParseOptions o = fixed_options();
  o.sample = 5;
  o.max_jobs = 8;
  EXPECT_TRUE(parse_job_file(text, FileFormat::kCsv, o).errors.empty());
}

TEST(JobFileTemplates, ExportsAndLiteralSubmitsTakePromptsAsWritten) {
  const std::string header = "job,run,state,prompt,seed,width,height,name,lora,output,error,attempts,seconds,host,mark,template,choices\n";
  const auto f = parse_job_file(header + "1,1,done,\"a {b} c\",7,256,256,,,/o/a.png,,1,0.5,h,,\"{a|b} {b} c\",\"{\"\"1\"\":\"\"a\"\"}\"\n",
                                FileFormat::kCsv, fixed_options());
  ASSERT_TRUE(f.errors.empty()) << all_errors(f);
  ASSERT_EQ(f.jobs.size(), 1u);
  EXPECT_EQ(f.jobs[0].prompt, "a {b} c");
  EXPECT_EQ(f.jobs[0].template_text, "");
  ParseOptions literal = fixed_options();
  literal.templates = false;
  const auto g = parse_job_file("prompt\n\"a } {\"\n", FileFormat::kCsv, literal);
  ASSERT_TRUE(g.errors.empty()) << all_errors(g);
  EXPECT_EQ(g.jobs[0].prompt, "a } {");
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST(JobFileTemplates, AnExpansionOverThePromptLimitIsRefusedAtOnceWhereItIs) {
  // a: 100 of {__long__|x}, __long__ 1000 bytes: its 66th group (column 65 * 13 + 1) makes 66065 bytes.
  std::string a;
  for (int i = 0; i < 100; ++i) a += "{__long__|x} ";
  auto files = WildcardSet::from_texts({{"a", a}, {"long", std::string(1000, 'y')}}, "");
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = parse_job_file("{\"prompt\":\"ok\"}\n{\"seed\":1,\"prompt\":\"fox __a__\"}\n", FileFormat::kJsonl, fixed_options(&files));
  EXPECT_EQ(only_error(f), "f:2:25: prompt: in __a__, a.txt:1:846: with this, one expansion is up to 66065 bytes long; "
                           "a prompt may have at most 65536");
  EXPECT_LT(seconds_since(t0), 1.0);
}

TEST(JobFileTemplates, ATemplateIsAtMostSixteenKiBAndItsRowsShareOneCopy) {
  const std::string big = "{a|" + std::string(20000, 'x') + "} {b|c}";  // 20010 bytes
  EXPECT_EQ(only_error(parse_job_file("name,prompt\nn1," + big + "\n", FileFormat::kCsv, fixed_options())),
            "f:2:4: prompt: a template may be at most 16384 bytes; this prompt is 20010 bytes (long options go in a wildcard file)");
  // As long a prompt without a template is taken as written (the encoder's check refuses it, or not).
  const std::string tmpl = "{a|b} {c|d} {e|f} {g|h}";
  const auto f = parse_job_file("prompt\n" + std::string(20000, 'x') + "\n" + tmpl + "\n", FileFormat::kCsv, fixed_options());
  ASSERT_TRUE(f.errors.empty()) << all_errors(f);
  ASSERT_EQ(f.rows.size(), 17u);
  EXPECT_EQ(f.rows[0].template_text, nullptr);
  ASSERT_NE(f.rows[1].template_text, nullptr);
  EXPECT_EQ(*f.rows[1].template_text, tmpl);
  for (size_t r = 2; r < 17; ++r) EXPECT_EQ(f.rows[r].template_text.get(), f.rows[1].template_text.get()) << r;
  EXPECT_EQ(f.rows[16].prompt, "b d f h");
  EXPECT_EQ(f.jobs[16].template_text, tmpl);
}

TEST(JobFileTemplates, AWildcardThatFailsIsParsedOnce) {
  // 4 MiB whose '{' is never closed, named by 100 rows: one parse, not one per row.
  auto files = WildcardSet::from_texts({{"bad", "{" + std::string((size_t{4} << 20) - 2, 'x')}}, "");
  std::string file = "prompt\n";
  for (int i = 0; i < 100; ++i) file += "an __bad__\n";
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = parse_job_file(file, FileFormat::kCsv, fixed_options(&files));
  EXPECT_LT(seconds_since(t0), 2.0);  // one parse took 0.2 s here; one per row, 20
  ASSERT_EQ(f.errors.size(), 100u);
  const std::string what = ": prompt: in __bad__, bad.txt:1:1: this '{' is never closed: no '}' ends its group (write \\{ for a '{' of the prompt)";
  EXPECT_EQ(f.errors[0].to_string("f"), "f:2:4" + what);
  EXPECT_EQ(f.errors[99].to_string("f"), "f:101:4" + what);
}

TEST(JobFileTemplates, ErrorsStopAfterAHundredAndArePlacedWithoutRescanningTheFile) {
  // A 1 MB prompt first, then 10000 unclosed groups: 100 errors, each placed from its own field (one per
  // row, each read from the file's start, was 10 GB read).
  std::string file = "prompt\n\"" + std::string(1'000'000, 'x') + "\"\n";
  for (int i = 0; i < 10'000; ++i) file += "a {b\n";
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = parse_job_file(file, FileFormat::kCsv, fixed_options());
  EXPECT_LT(seconds_since(t0), 1.0);
  ASSERT_EQ(f.errors.size(), 101u);
  const std::string what = ": prompt: this '{' is never closed: no '}' ends its group (write \\{ for a '{' of the prompt)";
  EXPECT_EQ(f.errors[0].to_string("f"), "f:3:3" + what);
  EXPECT_EQ(f.errors[99].to_string("f"), "f:102:3" + what);
  EXPECT_EQ(f.errors[100].to_string("f"), "f: stopping after 100 errors; the file may hold more");
  EXPECT_TRUE(f.rows.empty());
}

}  // namespace
}  // namespace rgbaq::jobs
