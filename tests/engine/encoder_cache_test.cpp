// The encoder cache's disk copy within its byte budget (issue 26, item 14): ~1 MB per prompt at real
// dims made a 100,000-prompt run 100-650 GB, and entries of an old encoder stayed for ever. The folder
// stays within the budget, the least recently used go first (use recorded by the cache, and kept
// across a restart), and another encoder identity's entries go before any of this one's.
#include "engine/encoder_cache.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/test_temp_dir.h"

namespace rgbaq::engine {
namespace {

namespace fs = std::filesystem;

// One entry's file, by the layout in encoder_cache.cpp: magic 8, identity length 4 + identity, id count
// 4 + ids 4 each, rows 4, cols 4, payload 4 a value, checksum 8.
constexpr uint64_t kEntryBytes = 8 + 4 + 9 + 4 + 4 * 4 + 4 + 4 + 4 * 4 * 16 + 8;  // "encoder-a", 4 ids, [4, 16]

Tensor embedding(float value) { return Tensor::from_f32({4, 16}, std::vector<float>(64, value)); }
std::vector<int32_t> ids(int32_t n) { return {n, n + 1, n + 2, n + 3}; }

uint64_t folder_bytes(const fs::path& dir) {
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) total += e.file_size();
  return total;
}

// Whether a cache of `identity` with nothing in memory finds `n` on disk.
bool on_disk(const fs::path& dir, const std::string& identity, int32_t n) {
  EncoderCache fresh(identity, 0, dir);
  CacheSource source{};
  const auto t = fresh.find(ids(n), &source);
  return t && source == CacheSource::kDisk;
}

TEST(EncoderCacheDisk, TheFolderStaysWithinItsBudgetAndTheLeastRecentlyUsedGoFirstAcrossARestart) {
  TempDir dir;
  const fs::path cache_dir = dir.path() / "embeddings";
  {
    EncoderCache cache("encoder-a", 1 << 20, cache_dir, 3 * kEntryBytes);
    for (int32_t n : {10, 20, 30}) cache.put(ids(n), embedding(float(n)));
    EXPECT_EQ(folder_bytes(cache_dir), 3 * kEntryBytes);
    ASSERT_TRUE(cache.find(ids(10)));  // a hit from memory is a use of the disk copy too
    cache.put(ids(40), embedding(40));
    EXPECT_EQ(folder_bytes(cache_dir), 3 * kEntryBytes);
    const auto usage = cache.disk_usage();
    EXPECT_EQ(usage.bytes, 3 * kEntryBytes);
    EXPECT_EQ(usage.entries, 3u);
    EXPECT_EQ(usage.budget, 3 * kEntryBytes);
  }
  // 20 went (the least recently used); 10, used after 30 was written, outlives 30 after a restart.
  {
    EncoderCache restarted("encoder-a", 1 << 20, cache_dir, 3 * kEntryBytes);
    EXPECT_EQ(restarted.disk_usage().entries, 3u) << "the folder is indexed at start";
    restarted.put(ids(50), embedding(50));
  }
  EXPECT_EQ(folder_bytes(cache_dir), 3 * kEntryBytes);
  EXPECT_TRUE(on_disk(cache_dir, "encoder-a", 10));
  EXPECT_FALSE(on_disk(cache_dir, "encoder-a", 20));
  EXPECT_FALSE(on_disk(cache_dir, "encoder-a", 30));
  EXPECT_TRUE(on_disk(cache_dir, "encoder-a", 40));
  EXPECT_TRUE(on_disk(cache_dir, "encoder-a", 50));
}

TEST(EncoderCacheDisk, AnotherEncoderIdentitysEntriesGoFirst) {
  TempDir dir;
  const fs::path cache_dir = dir.path() / "embeddings";
  {
    EncoderCache old_model("encoder-b", 1 << 20, cache_dir);  // the same identity length: the same entry size
    old_model.put(ids(1), embedding(1));
    old_model.put(ids(2), embedding(2));
  }
  fs::create_directories(cache_dir);
  std::ofstream(cache_dir / "00112233445566ff.emb") << std::string(kEntryBytes, 'x');  // named before names carried the identity
  EncoderCache cache("encoder-a", 1 << 20, cache_dir, 4 * kEntryBytes);
  EXPECT_EQ(cache.disk_usage().bytes, 3 * kEntryBytes);
  cache.put(ids(10), embedding(10));  // 4 entries: within the budget
  cache.put(ids(20), embedding(20));  // the stranded ones go, however recently they were written
  cache.put(ids(30), embedding(30));
  cache.put(ids(40), embedding(40));
  EXPECT_EQ(folder_bytes(cache_dir), 4 * kEntryBytes);
  EXPECT_FALSE(fs::exists(cache_dir / "00112233445566ff.emb"));
  EXPECT_FALSE(on_disk(cache_dir, "encoder-b", 1));
  EXPECT_FALSE(on_disk(cache_dir, "encoder-b", 2));
  for (int32_t n : {10, 20, 30, 40}) EXPECT_TRUE(on_disk(cache_dir, "encoder-a", n)) << n;
  cache.put(ids(50), embedding(50));  // now this identity's least recently used
  EXPECT_FALSE(on_disk(cache_dir, "encoder-a", 10));
  EXPECT_TRUE(on_disk(cache_dir, "encoder-a", 50));
}

TEST(EncoderCacheDisk, AFolderOverALowerBudgetIsBroughtWithinItAtStart) {
  TempDir dir;
  const fs::path cache_dir = dir.path() / "embeddings";
  {
    EncoderCache cache("encoder-a", 1 << 20, cache_dir);
    for (int32_t n : {10, 20, 30}) cache.put(ids(n), embedding(float(n)));
  }
  EncoderCache smaller("encoder-a", 1 << 20, cache_dir, kEntryBytes);
  EXPECT_EQ(folder_bytes(cache_dir), kEntryBytes);
  EXPECT_EQ(smaller.disk_usage().entries, 1u);
  EXPECT_TRUE(on_disk(cache_dir, "encoder-a", 30)) << "the last written stays";
  EncoderCache none("encoder-a", 1 << 20, cache_dir, 0);
  none.put(ids(60), embedding(60));
  EXPECT_TRUE(fs::is_empty(cache_dir)) << "a budget of 0 keeps nothing on disk";
}

}  // namespace
}  // namespace rgbaq::engine
