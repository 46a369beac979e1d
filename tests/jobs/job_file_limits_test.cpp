// Job files against hostile and careless input: nesting that would overflow a parser's stack, numbers
// out of range (never wrapped), sizes the render would refuse, output names that clash, and sweeps of
// a million jobs handled as ranges (no job is built until the daemon inserts it).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "jobs/job_file.h"
#include "jobs/output_name.h"

namespace rgbaq::jobs {
namespace {

ParseOptions options() {
  ParseOptions o;
  o.defaults.size = "256";
  o.random_seed = [] { return uint64_t{1000}; };
  return o;
}

std::string errors_of(const JobFile& f) {
  std::string all;
  for (const auto& e : f.errors) all += e.to_string("f") + "\n";
  return all;
}

TEST(JobFileLimits, DeeplyNestedJsonIsAnErrorNamingTheLine) {
  const std::string deep = "{\"prompt\": \"x\", \"seed\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const auto f = parse_job_file("{\"prompt\": \"ok\", \"seed\": [1, 2]}\n" + deep + "\n", FileFormat::kJsonl, options());
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  EXPECT_EQ(f.errors[0].line, 2);
  EXPECT_EQ(f.errors[0].column, 40);  // the 16th "[" (the row object is the first level)
  EXPECT_NE(f.errors[0].message.find("nests deeper than 16 levels"), std::string::npos);
  // Brackets inside strings are text.
  EXPECT_TRUE(parse_job_file("{\"prompt\": \"" + std::string(100, '[') + "\"}\n", FileFormat::kJsonl, options()).errors.empty());
}

TEST(JobFileLimits, OutOfRangeNumbersAreErrorsNeverWrapped) {
  for (const char* p : {"1099511627777", "-2147483649", "2147483648", "1000001"}) {
    const auto f = parse_job_file(std::string("prompt,priority\nx,") + p + "\n", FileFormat::kCsv, options());
    ASSERT_EQ(f.errors.size(), 1u) << p;
    EXPECT_EQ(f.errors[0].field, "priority");
    EXPECT_EQ(f.errors[0].line, 2);
  }
  const auto j = parse_job_file("{\"prompt\": \"x\", \"priority\": 1099511627777}\n", FileFormat::kJsonl, options());
  ASSERT_EQ(j.errors.size(), 1u);
  EXPECT_EQ(j.errors[0].field, "priority");
  // The submit options' defaults are checked as rows are.
  ParseOptions o = options();
  o.defaults.priority = 2000000;
  o.defaults.count = 0;
  const auto d = parse_job_file("prompt\nx\n", FileFormat::kCsv, o);
  ASSERT_EQ(d.errors.size(), 2u) << errors_of(d);
  EXPECT_EQ(d.errors[0].field, "--count");
  EXPECT_EQ(d.errors[1].field, "--priority");
}

TEST(JobFileLimits, ASizeTheRenderWouldRefuseIsRefusedHere) {
  // 65536x16 is 4096 image tokens (in the contract's range) but puts tokens at x = -2048, which the
  // RoPE tables have no row for.
  const auto f = parse_job_file("prompt,size\nx,65536x16\n", FileFormat::kCsv, options());
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  EXPECT_EQ(f.errors[0].field, "size");
  EXPECT_NE(f.errors[0].message.find("RoPE position -2048 on axis 2"), std::string::npos) << f.errors[0].message;
  EXPECT_TRUE(parse_job_file("prompt,size\nx,4096x256\n", FileFormat::kCsv, options()).errors.empty());
}

TEST(JobFileLimits, ANameEqualToAnotherRowsPromptDerivedNameIsAClash) {
  const host::ImageSize s{256, 256};
  const std::string base = output_base_name("a red fox", "", s);  // "a-red-fox-<hash>"
  const auto f = parse_job_file("prompt,seed,name\na red fox,1-3,\nan owl,2," + base + "\n", FileFormat::kCsv, options());
  ASSERT_EQ(f.errors.size(), 1u) << errors_of(f);
  EXPECT_EQ(f.errors[0].line, 3);
  EXPECT_NE(f.errors[0].message.find("with seed 2 names the image of line 2 too"), std::string::npos) << f.errors[0].message;
}

TEST(JobFileLimits, AMillionJobSweepIsRowsNotJobs) {
  ParseOptions o = options();
  o.max_jobs = 1'250'000;  // counted before duplicates are left out
  o.expand = false;
  const auto t0 = std::chrono::steady_clock::now();
  const auto f = parse_job_file("prompt,seed\nfox,1-500000\nfox,250001-750000\nowl,1-250000\n", FileFormat::kCsv, o);
  ASSERT_TRUE(f.errors.empty()) << errors_of(f);
  EXPECT_EQ(f.job_count, 1'000'000u);
  EXPECT_EQ(f.duplicates_skipped, 250'000u);
  EXPECT_TRUE(f.jobs.empty());
  ASSERT_EQ(f.rows.size(), 3u);
  ASSERT_EQ(f.rows[1].seeds.size(), 1u);
  EXPECT_EQ(f.rows[1].seeds[0].first, 500001u);  // the overlap with line 2 left out
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1)) << "no per-job work";
  // Expansion, one job at a time, in row then seed order.
  uint64_t n = 0, last_fox = 0;
  for_each_job(f, [&](const JobSpec& j) {
    ++n;
    if (j.prompt == "fox") {
      EXPECT_EQ(j.seed, last_fox + 1);
      last_fox = j.seed;
    }
  });
  EXPECT_EQ(n, 1'000'000u);
  EXPECT_EQ(last_fox, 750'000u);
  // Over the limit: refused before anything is built, naming how to raise it.
  o.max_jobs = 100'000;
  const auto over = parse_job_file("prompt,seed\nfox,1-1000000\n", FileFormat::kCsv, o);
  ASSERT_EQ(over.errors.size(), 1u);
  EXPECT_NE(over.errors[0].message.find("--max-jobs"), std::string::npos);
}

// Linear, measured as a ratio in one run (a wall-clock bound fails on a slow or sanitized build): eight
// times the rows and list items take about eight times as long; a quadratic step would take 64.
TEST(JobFileLimits, ManyRowsOfOneNameAndLongSeedListsStayLinear) {
  const auto parse_seconds = [](int rows_n, int items_n) {
    std::string rows = "prompt,seed,name\n";
    for (int i = 0; i < rows_n; ++i) rows += "p" + std::to_string(i) + "," + std::to_string(i) + ",hero\n";
    std::string list;
    for (int i = 0; i < items_n; ++i) list += (i ? "," : "") + std::to_string(2 * i + 1);
    rows += "q,\"" + list + "\",\n";
    ParseOptions o = options();
    o.expand = false;
    const auto t0 = std::chrono::steady_clock::now();
    const auto f = parse_job_file(rows, FileFormat::kCsv, o);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_TRUE(f.errors.empty()) << errors_of(f).substr(0, 300);
    EXPECT_EQ(f.job_count, static_cast<size_t>(rows_n + items_n));
    return s;
  };
  // The best of three each: a pause the machine takes is not the parser's.
  const auto best = [&](int rows_n, int items_n) {
    return std::min({parse_seconds(rows_n, items_n), parse_seconds(rows_n, items_n), parse_seconds(rows_n, items_n)});
  };
  const double small = best(2500, 6250), big = best(20000, 50000);
  std::cout << "[ figures  ] 8,750 jobs parsed in " << small << " s, 70,000 in " << big << " s: " << big / small << "x\n";
  EXPECT_LT(big / small, 20.0) << "quadratic in rows or list items";
}

TEST(JobFileLimits, DuplicatesWithinAndAcrossRowsAreLeftOutInOrder) {
  const auto f = parse_job_file("prompt,seed\nfox,\"5,1-3,2,9\"\nfox,3-6\n", FileFormat::kCsv, options());
  ASSERT_TRUE(f.errors.empty()) << errors_of(f);
  std::vector<uint64_t> seeds;
  for (const auto& j : f.jobs) seeds.push_back(j.seed);
  EXPECT_EQ(seeds, (std::vector<uint64_t>{5, 1, 2, 3, 9, 4, 6}));
  EXPECT_EQ(f.duplicates_skipped, 3u);  // 2 in line 2; 3 and 5 in line 3
}

}  // namespace
}  // namespace rgbaq::jobs
