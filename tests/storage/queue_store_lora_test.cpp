// The queue's LoRA column: stored and read back, migrated forward from schema 2 (earlier jobs: no
// LoRA), and claims that prefer a loaded LoRA set after priority, then a cached prompt.
#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include "storage/queue_store.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::storage {
namespace {

NewJob job(const std::string& prompt, uint64_t seed, const std::string& lora, int priority = 0) {
  NewJob j;
  j.prompt = prompt;
  j.seed = seed;
  j.width = j.height = 256;
  j.priority = priority;
  j.lora = lora;
  j.output_path = "/out/" + prompt + "_" + lora + "_" + std::to_string(seed) + ".png";
  j.content_key = std::hash<std::string>{}(prompt + "|" + lora + "|" + std::to_string(seed));
  j.prompt_key = std::hash<std::string>{}(prompt);
  return j;
}

TEST(QueueStoreLora, ClaimsPreferALoadedSetAfterPriorityThenACachedPrompt) {
  TempDir dir;
  QueueStore s(dir.path() / "q.db");
  s.submit({"r", "{}", "/o"}, {job("a", 1, ""), job("b", 2, "x:1"), job("c", 3, "y:0.5"), job("d", 4, "y:0.5"),
                               job("e", 5, "z:1", 5), job("f", 6, "x:1")});
  const uint64_t d_prompt = std::hash<std::string>{}("d");
  EXPECT_EQ(s.claim("w", {}, {"y:0.5"})->seed, 5u) << "never ahead of a higher priority";
  EXPECT_EQ(s.claim("w", {d_prompt}, {"y:0.5"})->seed, 4u) << "a loaded set with a cached prompt first";
  EXPECT_EQ(s.claim("w", {}, {"x:1"})->seed, 2u) << "then a loaded set, in submit order";
  const auto f = s.claim("w", {std::hash<std::string>{}("c")}, {"x:1"});
  EXPECT_EQ(f->seed, 6u) << "a loaded set before a cached prompt of another set";
  EXPECT_EQ(f->lora, "x:1");
  EXPECT_EQ(s.claim("w", {std::hash<std::string>{}("c")}, {"none:1"})->seed, 3u) << "no set loaded: the cached prompt";
  EXPECT_EQ(s.claim("w")->seed, 1u);
  EXPECT_FALSE(s.claim("w"));
}

TEST(QueueStoreLora, ASchema2QueueMigratesForwardWithNoLoraOnItsJobs) {
  TempDir dir;
  const auto path = dir.path() / "q.db";
  {
    QueueStore s(path);
    s.submit({"r", "{}", "/o"}, {job("old", 1, "")});
  }
  {  // back to what schema 2 had: no lora column
    SQLite::Database db(path.string(), SQLite::OPEN_READWRITE);
    db.exec("DROP INDEX jobs_claim_lora; ALTER TABLE jobs DROP COLUMN lora; UPDATE schema_version SET version = 2");
  }
  QueueStore s(path);
  EXPECT_EQ(s.schema_version(), 3);
  const auto old = s.claim("w", {}, {""});
  ASSERT_TRUE(old);
  EXPECT_EQ(old->lora, "");
  s.submit({"r2", "{}", "/o"}, {job("new", 2, "style:0.8;detail:0.25")});
  EXPECT_EQ(s.claim("w")->lora, "style:0.8;detail:0.25");
  EXPECT_EQ(s.integrity_check(), "ok");
}

}  // namespace
}  // namespace rgbaq::storage
