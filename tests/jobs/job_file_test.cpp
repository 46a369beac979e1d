// CSV/JSONL job files: RFC 4180 details, every field's forms, every error class with its line, column
// and field, sweeps, defaults and the all-or-nothing rule.
#include "jobs/job_file.h"

#include <gtest/gtest.h>

#include "jobs/csv_reader.h"
#include "jobs/output_name.h"

namespace rgbaq::jobs {
namespace {

ParseOptions fixed_options() {
  ParseOptions o;
  o.defaults.size = "256";
  uint64_t next = 1000;
  o.random_seed = [next]() mutable { return next++; };
  return o;
}

JobFile parse_csv(std::string_view text, ParseOptions o = fixed_options()) { return parse_job_file(text, FileFormat::kCsv, o); }

void expect_error(const JobFile& f, int line, int column, const std::string& field, const std::string& fragment) {
  for (const auto& e : f.errors) {
    if (e.line == line && e.column == column && e.field == field && e.message.find(fragment) != std::string::npos) return;
  }
  std::string all;
  for (const auto& e : f.errors) all += "\n  " + e.to_string("f");
  ADD_FAILURE() << "no error " << line << ":" << column << " " << field << " \"" << fragment << "\" among:" << all;
}

TEST(CsvReader, Rfc4180) {
  const auto doc = read_csv("\xEF\xBB\xBFprompt,seed\r\n\"a, \"\"quoted\"\"\nmultiline\",7\r\nplain,8\n\n\"\",9");
  ASSERT_TRUE(doc.errors.empty());
  ASSERT_EQ(doc.records.size(), 4u);
  EXPECT_EQ(doc.records[0].fields[0].value, "prompt");
  EXPECT_EQ(doc.records[1].fields[0].value, "a, \"quoted\"\nmultiline");
  EXPECT_EQ(doc.records[1].line, 2);
  EXPECT_EQ(doc.records[2].line, 4);  // the quoted newline moved it down
  EXPECT_EQ(doc.records[2].fields[1].column, 7);
  EXPECT_EQ(doc.records[3].fields[0].value, "");  // "" is an empty field, not a blank line
  EXPECT_TRUE(doc.records[3].fields[0].quoted);
  const auto bad = read_csv("a,\"b\"c,d\ne,f\"g\n\"open");
  ASSERT_EQ(bad.errors.size(), 3u);
  EXPECT_EQ(bad.errors[0].line, 1);
  EXPECT_EQ(bad.errors[0].column, 6);
  EXPECT_EQ(bad.errors[1].line, 2);
  EXPECT_EQ(bad.errors[2].message, "a quoted field is never closed");
}

TEST(JobFile, SeedsRangesListsCountsAndDefaults) {
  const auto f = parse_csv("Prompt,SEED,count,size,name,priority\n"
                           "fox,7,,,,\n"
                           "cat,1-3,,512,,5\n"
                           "owl,\"10,12\",,192x128,owl-pic,\n"
                           "bee,40,2,,,\n"
                           "ant,,,,,\n");
  ASSERT_TRUE(f.errors.empty()) << f.errors[0].to_string("f");
  std::vector<std::pair<std::string, uint64_t>> got;
  for (const auto& j : f.jobs) got.emplace_back(j.prompt, j.seed);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, uint64_t>>{{"fox", 7}, {"cat", 1}, {"cat", 2}, {"cat", 3},
                                                               {"owl", 10}, {"owl", 12}, {"bee", 40}, {"bee", 41},
                                                               {"ant", 1000}}));
  EXPECT_EQ(f.jobs[1].size, (host::ImageSize{512, 512}));
  EXPECT_EQ(f.jobs[1].priority, 5);
  EXPECT_EQ(f.jobs[4].size, (host::ImageSize{192, 128}));
  EXPECT_EQ(f.jobs[4].name, "owl-pic");
  EXPECT_EQ(f.jobs[0].size, (host::ImageSize{256, 256}));  // the default
  EXPECT_TRUE(f.jobs[8].seed_was_random);
  EXPECT_EQ(f.jobs[8].line, 6);

  ParseOptions o = fixed_options();
  o.defaults.seeds = "1-2";
  const auto d = parse_csv("prompt\nx\ny\n", o);
  ASSERT_EQ(d.jobs.size(), 4u);
  EXPECT_EQ(d.jobs[3].prompt, "y");
  EXPECT_EQ(d.jobs[3].seed, 2u);
  // An empty prompt is no job (issue 27: the README says prompt is required).
  expect_error(parse_csv("prompt\nx\n\"\"\n", o), 3, 1, "prompt", "is empty");
}

TEST(JobFile, EveryErrorIsCollectedWithLineColumnAndField) {
  const auto f = parse_csv("prompt,seed,size,colour\n");
  expect_error(f, 1, 18, "colour", "unknown column \"colour\"");
  const auto g = parse_csv("prompt,seed,size,count,name,priority\n"
                           "ok,1,256,,,\n"
                           "a,-5,256,,,\n"          // line 3
                           "b,3-1,256,,,\n"         // line 4
                           "c,1,250,,,\n"           // line 5
                           "d,1,256,0,,\n"          // line 6
                           "e,1-4,256,2,,\n"        // line 7
                           "f,1,256,,../x,\n"       // line 8
                           "g,1,256,,,high\n"       // line 9
                           "h,1,256\n"              // line 10
                           "\"bad\xff\",1,256,,,\n"  // line 11
                           "i,99999999999999999999,256,,,\n");
  EXPECT_TRUE(g.jobs.empty()) << "nothing of a bad file is queued";
  expect_error(g, 3, 3, "seed", "\"-5\" is not an integer");
  expect_error(g, 4, 3, "seed", "runs backwards");
  expect_error(g, 5, 5, "size", "width 250 px is not a positive multiple of 16");
  expect_error(g, 6, 9, "count", "\"0\" is not a positive integer");
  expect_error(g, 7, 11, "count", "count goes with one starting seed");
  expect_error(g, 8, 10, "name", "is not a usable file name");
  expect_error(g, 9, 11, "priority", "\"high\" is not an integer");
  expect_error(g, 10, 0, "", "has 3 fields; the header has 6");
  expect_error(g, 11, 1, "prompt", "invalid UTF-8 at byte 4");
  expect_error(g, 12, 3, "seed", "is not an integer in 0..18446744073709551615");
  EXPECT_EQ(g.errors.size(), 10u);
  EXPECT_EQ(g.errors[1].to_string("p.csv"), "p.csv:3:3: seed: \"-5\" is not an integer in 0..18446744073709551615");
}

TEST(JobFile, SweepSizeIsCheckedBeforeAnythingIsBuilt) {
  const auto f = parse_csv("prompt,seed\nfox,1-100000000\n");
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].message.rfind("this row is 100000000 images; one submit may hold at most 100000 images "
                                      "(rgbaq submit --max-jobs raises it", 0), 0u) << f.errors[0].message;
  EXPECT_EQ(f.errors[0].field, "seed");
  const auto all = parse_csv("prompt,seed\nfox,0-18446744073709551615\n");
  EXPECT_NE(all.errors.at(0).message.find("18446744073709551615 images"), std::string::npos);
  ParseOptions o = fixed_options();
  o.max_jobs = 10;
  const auto two = parse_csv("prompt,seed\na,1-6\nb,1-6\n", o);
  ASSERT_EQ(two.errors.size(), 1u);
  EXPECT_EQ(two.errors[0].line, 3);
  // One cause, one error: the limit is passed once, however many rows follow.
  const auto many = parse_csv("prompt,seed\na,1-6\nb,1-6\nc,1-6\nd,1-6\n", o);
  ASSERT_EQ(many.errors.size(), 1u);
  EXPECT_EQ(many.errors[0].message, "with line 3 the file would hold more than 10 images (rgbaq submit --max-jobs raises it, "
                                    "up to the daemon's --max-jobs-per-submit); it would make 24 in all");
}

TEST(JobFile, OptionsAreBlamedOnceNotOnEveryRow) {
  ParseOptions o = fixed_options();
  o.defaults.size = "300";
  const auto bad_size = parse_csv("prompt\na\nb\nc\n", o);
  ASSERT_EQ(bad_size.errors.size(), 1u);
  EXPECT_EQ(bad_size.errors[0].line, 0);
  EXPECT_EQ(bad_size.errors[0].field, "--size");
  EXPECT_NE(bad_size.errors[0].message.find("300"), std::string::npos) << bad_size.errors[0].message;

  ParseOptions sweep = fixed_options();
  sweep.defaults.seeds = "1-200000";
  const auto big = parse_csv("prompt\na\nb\n", sweep);
  ASSERT_EQ(big.errors.size(), 1u);
  EXPECT_EQ(big.errors[0].field, "--seeds");
  EXPECT_EQ(big.errors[0].line, 0);
  EXPECT_EQ(big.errors[0].message.rfind("gives each row 200000 images; one submit may hold at most 100000 images", 0), 0u)
      << big.errors[0].message;

  ParseOptions counted = fixed_options();
  counted.defaults.count = 200000;
  EXPECT_EQ(parse_csv("prompt,seed\na,1\n", counted).errors.at(0).field, "--count");
}

TEST(JobFile, RowsWhoseSeedWinsOverTheOptionAreListed) {
  ParseOptions o = fixed_options();
  o.defaults.seeds = "1-2";
  const auto f = parse_csv("prompt,seed\na,7\nb,\nc,9-10\n", o);
  ASSERT_TRUE(f.errors.empty());
  EXPECT_EQ(f.seed_rows_over_option, (std::vector<int>{2, 4}));
  EXPECT_EQ(f.job_count, 1u + 2u + 2u);
  EXPECT_TRUE(parse_csv("prompt,seed\na,7\n").seed_rows_over_option.empty()) << "no --seeds, nothing overridden";
}

TEST(JobFile, PromptCheckAndDuplicates) {
  ParseOptions o = fixed_options();
  o.check_prompt = [](const std::string& p) { return p.size() > 5 ? std::string("too long: " + std::to_string(p.size())) : ""; };
  const auto f = parse_csv("prompt,seed\nshort,1\nwaytoolong,2\n", o);
  expect_error(f, 3, 1, "prompt", "too long: 10");
  const auto d = parse_csv("prompt,seed\nfox,1-3\nfox,2\n");
  EXPECT_EQ(d.jobs.size(), 3u);
  EXPECT_EQ(d.duplicates_skipped, 1u);
}

TEST(JobFile, OneNameOneImagePerSeed) {
  const auto f = parse_csv("prompt,seed,name\nfox,1-2,hero\ncat,2,hero\n");
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_EQ(f.errors[0].line, 3);
  EXPECT_EQ(f.errors[0].field, "name");
  EXPECT_NE(f.errors[0].message.find("names the image of line 2 too"), std::string::npos) << f.errors[0].message;
  EXPECT_TRUE(f.jobs.empty());
  EXPECT_TRUE(parse_csv("prompt,seed,name\nfox,1,hero\ncat,2,hero\n").errors.empty()) << "other seeds, other files";
}

TEST(JobFile, Jsonl) {
  const auto f = parse_job_file("{\"prompt\": \"fox\", \"seed\": 7, \"size\": 512}\n"
                                "\n"
                                "{\"prompt\": \"cat\", \"seed\": [1, \"5-6\"], \"name\": \"kitty\"}\r\n"
                                "{\"prompt\": \"owl\", \"seed\": \"3\", \"count\": 2, \"priority\": -1}\n",
                                FileFormat::kJsonl, fixed_options());
  ASSERT_TRUE(f.errors.empty()) << f.errors[0].to_string("f");
  ASSERT_EQ(f.jobs.size(), 6u);
  EXPECT_EQ(f.jobs[0].size, (host::ImageSize{512, 512}));
  EXPECT_EQ(f.jobs[2].seed, 5u);
  EXPECT_EQ(f.jobs[2].line, 3);
  EXPECT_EQ(f.jobs[5].seed, 4u);
  EXPECT_EQ(f.jobs[5].priority, -1);
  const auto bad = parse_job_file("{\"prompt\": 3}\n[1]\n{\"seed\": 1}\n{\"prompt\": \"x\", \"colour\": 1}\n{\"prompt\": \"\xc3\"}\n"
                                  "{\"prompt\": null}\n",
                                  FileFormat::kJsonl, fixed_options());
  expect_error(bad, 1, 0, "prompt", "wrong type (number)");
  expect_error(bad, 2, 0, "", "is not a JSON object");
  expect_error(bad, 3, 0, "prompt", "is missing");
  expect_error(bad, 4, 0, "colour", "unknown field");
  expect_error(bad, 5, 13, "", "invalid UTF-8");
  expect_error(bad, 6, 0, "prompt", "wrong type (null)");
  EXPECT_TRUE(bad.jobs.empty());
  EXPECT_EQ(format_for_path("x.JSONL"), FileFormat::kJsonl);
  EXPECT_EQ(format_for_path("x.csv"), FileFormat::kCsv);
}

TEST(OutputName, FunctionOfTheJobNeverTheRawPrompt) {
  const host::ImageSize s{256, 256};
  const std::string a = output_file_name("A red fox / ../etc", "", 7, s);
  EXPECT_EQ(a.rfind("a-red-fox-etc-", 0), 0u) << a;
  EXPECT_TRUE(a.ends_with("_7.png"));
  EXPECT_EQ(a, output_file_name("A red fox / ../etc", "", 7, s));
  EXPECT_NE(output_file_name("一只猫", "", 7, s), output_file_name("一只狗", "", 7, s));  // both slug to "image"
  EXPECT_NE(output_file_name("fox", "", 7, s), output_file_name("fox", "", 7, {512, 512}));
  EXPECT_EQ(output_file_name("fox", "Hero_Shot", 3, s), "Hero_Shot_3.png");  // a name is kept as written
  EXPECT_EQ(content_key("fox", 1, s, "", "/o"), content_key("fox", 1, s, "", "/o"));
  EXPECT_NE(content_key("fox", 1, s, "", "/o"), content_key("fox", 2, s, "", "/o"));
  EXPECT_NE(prompt_key("fox"), prompt_key("fox "));
}

}  // namespace
}  // namespace rgbaq::jobs
