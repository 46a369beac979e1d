// A job file's re-seeding fields (issue 40): reseed_on (alpha-check flags, in CSV "a,b", in JSONL a
// string or a list) and reseed_max, per row or from the submit's defaults; kept in the flags' own order;
// "" for none; an unknown flag or a bad count is an error naming its line and field, and queues nothing.
#include <gtest/gtest.h>

#include "jobs/job_file.h"

namespace rgbaq::jobs {
namespace {

ParseOptions options(std::string reseed_on = "", int reseed_max = kDefaultReseedMax) {
  ParseOptions o;
  o.defaults.seeds = "1";
  o.defaults.size = "256";
  o.defaults.reseed_on = std::move(reseed_on);
  o.defaults.reseed_max = reseed_max;
  return o;
}

TEST(JobFileReseed, RowsSayTheirOwnOrTakeTheDefaults) {
  const auto f = parse_job_file("prompt,reseed_on,reseed_max\n"
                                "a,\"fragmented, cut_off\",3\n"
                                "b,,\n"
                                "c,\"\",\n",
                                FileFormat::kCsv, options("empty", 1));
  ASSERT_TRUE(f.errors.empty()) << f.errors[0].to_string("f.csv");
  ASSERT_EQ(f.jobs.size(), 3u);
  EXPECT_EQ(f.jobs[0].reseed_on, "cut_off,fragmented");  // the flags' own order
  EXPECT_EQ(f.jobs[0].reseed_max, 3);
  EXPECT_EQ(f.jobs[1].reseed_on, "empty");  // an empty cell: the default
  EXPECT_EQ(f.jobs[1].reseed_max, 1);
  EXPECT_EQ(f.jobs[2].reseed_on, "");  // a quoted "": none, whatever the default
  const auto j = parse_job_file("{\"prompt\": \"a\", \"reseed_on\": [\"no_alpha\", \"empty\"], \"reseed_max\": 0}\n"
                                "{\"prompt\": \"b\", \"reseed_on\": \"fake_transparency\"}\n",
                                FileFormat::kJsonl, options());
  ASSERT_TRUE(j.errors.empty()) << j.errors[0].to_string("f.jsonl");
  EXPECT_EQ(j.jobs[0].reseed_on, "empty,no_alpha");
  EXPECT_EQ(j.jobs[0].reseed_max, 0);
  EXPECT_EQ(j.jobs[1].reseed_on, "fake_transparency");
  EXPECT_EQ(j.jobs[1].reseed_max, 2);  // the default of defaults
}

TEST(JobFileReseed, AnUnknownFlagOrABadCountIsAnErrorOfItsLineAndField) {
  const auto f = parse_job_file("prompt,reseed_on,reseed_max\nfine,cut_off,1\nbad,\"cut_off,blurry\",2\nworse,empty,-1\n",
                                FileFormat::kCsv, options());
  ASSERT_EQ(f.errors.size(), 2u);
  EXPECT_TRUE(f.jobs.empty());
  EXPECT_EQ(f.errors[0].to_string("f.csv"),
            "f.csv:3:5: reseed_on: unknown flag 'blurry' (one of empty, no_alpha, cut_off, fragmented, fake_transparency)");
  EXPECT_EQ(f.errors[1].to_string("f.csv"), "f.csv:4:13: reseed_max: \"-1\" is not an integer in 0..1000");
  const auto d = parse_job_file("prompt\na\n", FileFormat::kCsv, options("ok", 1001));
  ASSERT_EQ(d.errors.size(), 2u);
  EXPECT_EQ(d.errors[0].field, "--reseed-on");
  EXPECT_NE(d.errors[0].message.find("'ok' is no flag"), std::string::npos) << d.errors[0].message;
  EXPECT_EQ(d.errors[1].field, "--reseed-max");
  const auto j = parse_job_file("{\"prompt\": \"a\", \"reseed_on\": 7}\n", FileFormat::kJsonl, options());
  ASSERT_EQ(j.errors.size(), 1u);
  EXPECT_EQ(j.errors[0].field, "reseed_on");
}

}  // namespace
}  // namespace rgbaq::jobs
