// Re-seeding's rows (daemon/base/queue_row.h): a row's next seeds after its highest, skipping those it
// has, wrapping past 2^64 - 1; each candidate named as the submit names a job of that seed
// (OUT/NAME_SEED.png), its row key its row's; and no candidates for a job its row cannot rebuild.
// daemon_qa_test checks their content keys against a real resubmit's.
#include <gtest/gtest.h>

#include "daemon/base/queue_row.h"

namespace rgbaq::daemon {
namespace {

storage::Job queued_job(uint64_t seed) {
  jobs::JobSpec spec;
  spec.prompt = "a red fox";
  spec.seed = seed;
  spec.size = {128, 128};
  spec.name = "hero";
  spec.reseed_on = "cut_off";
  spec.reseed_max = 2;
  const storage::NewJob row = to_queue_row(spec, "/renders/out");
  storage::Job job;
  job.id = 5;
  job.prompt = row.prompt;
  job.seed = row.seed;
  job.width = row.width;
  job.height = row.height;
  job.name = row.name;
  job.output_path = row.output_path;
  job.content_key = row.content_key;
  job.row_key = row.row_key;
  job.reseed_on = row.reseed_on;
  job.reseed_max = row.reseed_max;
  return job;
}

std::vector<uint64_t> seeds_of(const std::vector<storage::NewJob>& rows) {
  std::vector<uint64_t> seeds;
  for (const auto& r : rows) seeds.push_back(r.seed);
  return seeds;
}

TEST(QueueRow, TheNextSeedsAfterTheRowsHighestSkippingThoseItHas) {
  const storage::Job job = queued_job(7);
  const auto rows = reseed_rows(job, {3, 7, 9, 11}, 4);
  ASSERT_TRUE(rows);
  EXPECT_EQ(seeds_of(*rows), (std::vector<uint64_t>{12, 13, 14, 15}));
  EXPECT_EQ((*rows)[0].output_path, "/renders/out/hero_12.png");
  for (const auto& r : *rows) {
    EXPECT_EQ(r.row_key, job.row_key);
    EXPECT_NE(r.content_key, job.content_key);
    EXPECT_EQ(r.reseed_on, "cut_off");
    EXPECT_EQ(r.reseed_max, 2);
  }
}

TEST(QueueRow, SeedsWrapPastTheLargest) {
  const uint64_t top = UINT64_MAX;
  const auto rows = reseed_rows(queued_job(top - 1), {0, 2, top - 1, top}, 3);
  ASSERT_TRUE(rows);
  EXPECT_EQ(seeds_of(*rows), (std::vector<uint64_t>{1, 3, 4}));
}

TEST(QueueRow, AJobItsRowCannotRebuildIsNotReseeded) {
  storage::Job job = queued_job(7);
  job.content_key ^= 1;  // keyed otherwise (an older rgbaq's job)
  EXPECT_FALSE(reseed_rows(job, {7}, 4));
  job = queued_job(7);
  job.row_key = 0;  // no row key: queued before rows had one
  EXPECT_FALSE(reseed_rows(job, {7}, 4));
}

TEST(QueueRow, RowsOfOtherContentHaveOtherRowKeys) {
  jobs::JobSpec a;
  a.prompt = "a red fox";
  a.size = {128, 128};
  jobs::JobSpec b = a;
  b.seed = 99;
  jobs::JobSpec c = a;
  c.size = {256, 128};
  EXPECT_EQ(to_queue_row(a, "/o").row_key, to_queue_row(b, "/o").row_key);
  EXPECT_NE(to_queue_row(a, "/o").row_key, to_queue_row(c, "/o").row_key);
  EXPECT_NE(to_queue_row(a, "/o").row_key, to_queue_row(a, "/p").row_key);
  EXPECT_NE(to_queue_row(a, "/o").row_key, to_queue_row(a, "/o").content_key);
}

}  // namespace
}  // namespace rgbaq::daemon
