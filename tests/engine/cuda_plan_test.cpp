// The CUDA backend's plain-C++ arithmetic on the host (no GPU needed): attention's query chunks and
// their padded score strides (engine/cuda/attention_plan.h), and the DiT block streamer's copy-ahead
// schedule (engine/cuda/block_schedule.h), against the CPU attention's mask and a simulated pair of slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/cuda/attention_plan.h"
#include "engine/cuda/block_schedule.h"

namespace rgbaq::engine::cuda {
namespace {

// Visible keys of query q as engine/cpu/attention.cpp masks them.
int64_t cpu_visible(int64_t q, int64_t causal_rows, int64_t kv_rows) { return q < causal_rows ? q + 1 : kv_rows; }

TEST(CudaAttentionPlan, ChunksCoverEveryQueryWithItsKeysInsideTheWorkspace) {
  struct Case {
    int heads;
    int64_t q_rows, kv_rows, causal_rows, budget;
  };
  const std::vector<Case> cases = {
      {32, 4096, 4096 + 211, 0, int64_t{64} << 20},  // a DiT step at 1024: image rows see all keys
      {32, 211, 211, 211, int64_t{64} << 20},        // the DiT's text prefix: causal
      {32, 512, 512, 512, int64_t{16} << 20},        // the encoder at its longest, causal
      {32, 300, 300, 300, 32 * 8 * 7},               // a budget that forces tiny chunks
      {1, 4096, 4096, 0, int64_t{64} << 20},         // the VAE's mid attention at 1024
      {4, 109, 109 + 13, 13, 4 * 128},               // block-causal over [text | image], one row per chunk
      {2, 7, 7, 7, 1},                               // a budget below one row: one row anyway
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.heads << " heads, q " << c.q_rows << ", kv " << c.kv_rows << ", causal "
                                      << c.causal_rows << ", budget " << c.budget);
    const int64_t elements = attention_score_elements(c.heads, c.q_rows, c.kv_rows, c.budget);
    EXPECT_LE(elements, std::max(c.budget, int64_t{c.heads} * score_stride(c.kv_rows))) << "memory linear in the keys";
    const int64_t chunk = attention_chunk_rows(c.heads, c.q_rows, c.kv_rows, elements);
    ASSERT_GE(chunk, 1);
    int64_t covered = 0;
    for (int64_t q0 = 0; q0 < c.q_rows; q0 += chunk) {
      const int64_t rows = std::min(chunk, c.q_rows - q0), keys = attention_chunk_keys(q0, rows, c.causal_rows, c.kv_rows);
      const int64_t ld = score_stride(keys);
      EXPECT_EQ(ld % 8, 0);
      EXPECT_GE(ld, keys);
      EXPECT_LE(keys, c.kv_rows);
      EXPECT_LE(int64_t{c.heads} * rows * ld, elements) << "chunk at " << q0;
      for (int64_t r = 0; r < rows; ++r) EXPECT_LE(cpu_visible(q0 + r, c.causal_rows, c.kv_rows), keys) << "query " << q0 + r;
      covered += rows;
    }
    EXPECT_EQ(covered, c.q_rows);
  }
}

// Walks BlockStreamer::begin_block/end_block's logic over an image (the text prefix, then 8 steps) with
// two slots: every block must find its own weights in its slot, and a copy ahead must never target
// the slot of the block computing.
TEST(CudaBlockSchedule, EveryBlockFindsItsWeightsAndNoCopyHitsTheComputingSlot) {
  for (int blocks : {1, 2, 3, 4, 7, 32}) {
    SCOPED_TRACE(::testing::Message() << blocks << " blocks");
    int loaded[2] = {-1, -1};
    int copies = 0;
    for (int pass = 0; pass < 9; ++pass) {
      for (int i = 0; i < blocks; ++i) {
        const int slot = i % 2;
        if (loaded[slot] != i) loaded[slot] = i, ++copies;  // copied now; compute waits for it
        ASSERT_EQ(loaded[slot], i);
        const int next = copy_ahead_block(i, blocks);
        if (next >= 0 && loaded[next % 2] != next) {
          ASSERT_NE(next % 2, slot) << "block " << next << " copied over block " << i << " while it computes";
          loaded[next % 2] = next, ++copies;
        }
      }
    }
    if (blocks <= 2) {
      EXPECT_EQ(copies, blocks) << "blocks that fit both slots are copied once";
    }
    EXPECT_LE(copies, 9 * blocks + 1) << "at most one copy per block run (and the wrap's copy ahead)";
  }
}

}  // namespace
}  // namespace rgbaq::engine::cuda
