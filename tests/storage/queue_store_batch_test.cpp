// Submits in batches: a run is invisible to claims and listings until its last batch commits, an
// interrupted one is discarded at the next start, and each output path is owned by one image.
#include <gtest/gtest.h>

#include "storage/sqlite/sqlite_queue_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

NewJob job(const std::string& prompt, uint64_t seed, const std::string& path = "") {
  NewJob j;
  j.line = static_cast<int>(seed) + 1;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.output_path = path.empty() ? "/out/" + prompt + "_" + std::to_string(seed) + ".png" : path;
  j.content_key = std::hash<std::string>{}(prompt + "|" + std::to_string(seed));
  return j;
}

TEST(QueueStoreBatch, APendingRunIsInvisibleUntilPublishedAndDiscardedAtRecovery) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db");
  const RunOptions opts{.name = "big", .out_dir = "/out"};
  const int64_t run = s.begin_run(opts);
  EXPECT_EQ(s.append_jobs(run, opts, {job("a", 1), job("a", 2)}).inserted, 2u);
  EXPECT_EQ(s.append_jobs(run, opts, {job("a", 3)}).inserted, 1u);
  EXPECT_FALSE(s.claim("w")) << "no job of a pending run is claimed";
  EXPECT_TRUE(s.list_runs().empty());
  EXPECT_EQ(s.counts()[0], 0);
  EXPECT_FALSE(s.cancel_job(1));
  EXPECT_EQ(s.integrity_check(), "ok");
  s.publish_run(run, 3);
  EXPECT_EQ(s.run(run)->total(), 3);
  EXPECT_TRUE(s.claim("w"));

  // A submit cut off after one batch (the process died): recover() removes it and its path claims.
  const int64_t cut = s.begin_run(opts);
  s.append_jobs(cut, opts, {job("b", 1), job("b", 2)});
  const auto r = s.recover();
  EXPECT_EQ(r.discarded_jobs, 2);
  EXPECT_EQ(s.list_jobs(std::nullopt, std::nullopt).size(), 3u);
  // The paths are free again for a different image.
  NewJob other = job("c", 1, "/out/b_1.png");
  EXPECT_EQ(s.submit(opts, {other}).inserted, 1u);
  EXPECT_EQ(s.integrity_check(), "ok");
}

TEST(QueueStoreBatch, AnOutputPathIsOwnedByOneImageAcrossRuns) {
  TempDir dir;
  SqliteQueueStore s(dir.path() / "q.db");
  const RunOptions opts{.name = "r", .out_dir = "/out"};
  s.submit(opts, {job("fox", 1, "/out/x_1.png")});
  // The same image again (a resubmission) may share its path.
  EXPECT_EQ(s.submit(opts, {job("fox", 1, "/out/x_1.png")}).inserted, 1u);
  // A different image for that path is refused, naming the row and the path; nothing is queued.
  try {
    s.submit(opts, {job("owl", 5, "/out/y_5.png"), job("cat", 7, "/out/x_1.png")});
    FAIL();
  } catch (const OutputClashError& e) {
    ASSERT_EQ(e.clashes().size(), 1u);
    EXPECT_EQ(e.clashes()[0].line, 8);
    EXPECT_EQ(e.clashes()[0].path, "/out/x_1.png");
    EXPECT_EQ(e.clashes()[0].owner_run, 1);
  }
  EXPECT_EQ(s.list_runs().size(), 2u);
  EXPECT_EQ(s.list_jobs(std::nullopt, std::nullopt).size(), 2u);
  // Within one submit too: two rows, one path.
  EXPECT_THROW(s.submit(opts, {job("p", 1, "/out/z.png"), job("q", 2, "/out/z.png")}), OutputClashError);
  EXPECT_EQ(s.submit(opts, {job("owl", 5, "/out/y_5.png")}).inserted, 1u) << "the refused submit claimed nothing";
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
