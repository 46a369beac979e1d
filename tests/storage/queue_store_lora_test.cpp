// The queue's LoRA column on both stores: stored and read back, migrated forward from the schema before
// it (earlier jobs: no LoRA), and claims that prefer a loaded LoRA set after priority, then a cached
// prompt.
#include <gtest/gtest.h>

#include <type_traits>

#include "tests/storage/queue_store_backends.h"

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

WorkerInfo worker_info() { return {"h", "boot-1", 100, "cpu", "test cpu"}; }

template <class Backend>
class QueueStoreLoraTest : public QueueStoreTest<Backend> {};
TYPED_TEST_SUITE(QueueStoreLoraTest, QueueStoreBackends, BackendNames);

TYPED_TEST(QueueStoreLoraTest, ClaimsPreferALoadedSetAfterPriorityThenACachedPrompt) {
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info());
  s->submit({"r", "{}", "/o"}, {job("a", 1, ""), job("b", 2, "x:1"), job("c", 3, "y:0.5"), job("d", 4, "y:0.5"),
                                job("e", 5, "z:1", 5), job("f", 6, "x:1")});
  const uint64_t d_prompt = std::hash<std::string>{}("d");
  EXPECT_EQ(s->claim(w, {}, {"y:0.5"})->seed, 5u) << "never ahead of a higher priority";
  EXPECT_EQ(s->claim(w, {d_prompt}, {"y:0.5"})->seed, 4u) << "a loaded set with a cached prompt first";
  EXPECT_EQ(s->claim(w, {}, {"x:1"})->seed, 2u) << "then a loaded set, in submit order";
  const auto f = s->claim(w, {std::hash<std::string>{}("c")}, {"x:1"});
  EXPECT_EQ(f->seed, 6u) << "a loaded set before a cached prompt of another set";
  EXPECT_EQ(f->lora, "x:1");
  EXPECT_EQ(s->claim(w, {std::hash<std::string>{}("c")}, {"none:1"})->seed, 3u) << "no set loaded: the cached prompt";
  EXPECT_EQ(s->claim(w)->seed, 1u);
  EXPECT_FALSE(s->claim(w));
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreLoraTest, AQueueFromBeforeTheLoraColumnMigratesForwardWithNoLoraOnItsJobs) {
  const int latest = this->backend().known_schema_version();
  const int before_lora = std::is_same_v<TypeParam, PostgresBackend> ? 1 : 3;
  {
    auto s = this->open();
    s->submit({"r", "{}", "/o"}, {job("old", 1, "")});
  }
  // Back to the schema before the LoRA column (the migrations after it run again too).
  this->backend().exec(std::string(kDropV9Schema) + kDropDeathColumns + kDropMarkColumns +
                       "ALTER TABLE jobs DROP COLUMN step; ALTER TABLE jobs DROP COLUMN steps; "
                       "ALTER TABLE jobs DROP COLUMN decoding; ALTER TABLE jobs DROP COLUMN progress_at; "
                       "ALTER TABLE jobs DROP COLUMN interrupted_at_step; ALTER TABLE jobs DROP COLUMN interruptions_at_step; "
                       "DROP INDEX jobs_claim_lora; ALTER TABLE jobs DROP COLUMN lora");
  this->backend().set_schema_version(before_lora);
  auto s = this->open();
  EXPECT_EQ(s->schema_version(), latest);
  const int64_t w = s->register_worker(worker_info());
  const auto old = s->claim(w, {}, {""});
  ASSERT_TRUE(old);
  EXPECT_EQ(old->lora, "");
  s->submit({"r2", "{}", "/o"}, {job("new", 2, "style:0.8;detail:0.25")});
  EXPECT_EQ(s->claim(w)->lora, "style:0.8;detail:0.25");
  EXPECT_EQ(s->integrity_check(), "ok");
}

TYPED_TEST(QueueStoreLoraTest, ALoraSetWithQuotesAndBackslashesIsPreferredVerbatim) {
  // The names rgbaq accepts have neither, but the store must not depend on that (PostgreSQL takes the
  // loaded sets as an array literal).
  auto s = this->open();
  const int64_t w = s->register_worker(worker_info());
  s->submit({"r", "{}", "/o"}, {job("a", 1, ""), job("b", 2, "q\"uo\\te:1")});
  EXPECT_EQ(s->claim(w, {}, {"q\"uo\\te:1"})->seed, 2u);
}

}  // namespace
}  // namespace rgbaq::storage
