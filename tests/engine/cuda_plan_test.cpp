// The CUDA backend's plain-C++ arithmetic on the host (no GPU needed): attention's query chunks and
// their padded score strides (engine/cuda/attention_plan.h), the DiT block streamer's copy-ahead
// schedule (engine/cuda/block_schedule.h), against the CPU attention's mask and a simulated pair of
// slots; and the graphs' workspaces (engine/cuda/workspace_plan.h) against sums worked out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/cuda/attention_plan.h"
#include "engine/cuda/block_schedule.h"
#include "engine/cuda/workspace_plan.h"
#include "tools/tiny_model.h"

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

namespace rgbaq::engine::cuda {
namespace {

// The workspace a real-dims bf16 session holds at the contract's largest render (L 512, Lfull 512,
// N 4096 = 1024 x 1024), worked out by hand from the graphs' buffers: what the fit check counts.
TEST(CudaWorkspacePlan, TheRealModelsLargestRenderIsCountedBufferByBuffer) {
  const int64_t mib = int64_t{1} << 20, e = 2;  // bf16
  const DitConfig dit = tools::real_dit_config();
  // DiT, rows max(L, N) = 4096 over L + N = 4608 keys, dim 4096, MLP 12288: fp32 rows of 4096 are
  // 64 MiB (x, projections, attention output, block output), bf16 ones 32 MiB (normed, queries,
  // attention output); keys and values 4608 x 4096 x 2 = 36 MiB each; the MLP's gate and up 192 MiB,
  // its hidden 96 MiB; scores at the 64 Mi-element budget 256 MiB, probabilities 128 MiB; image tokens
  // and velocity 4096 x 64 x 4 = 1 MiB each; the text features only the L rows, 512 x 4096 x 4 = 8 MiB.
  const auto ws = dit_workspace(dit, e, 512, 4096);
  ASSERT_EQ(ws.size(), 17u);
  EXPECT_EQ(bytes_of(ws), (64 + 32 + 64 + 32 + 36 + 36 + 64 + 32 + 64 + 192 + 192 + 96 + 256 + 128 + 1 + 8 + 1) * mib);
  EXPECT_STREQ(ws[12].what, "DiT attention scores");
  EXPECT_EQ(ws[12].bytes, 256 * mib);
  // --fused-blocks: Q|K|V and gate|up run 1024 rows at a time and share the gate buffer, a chunk of
  // gate|up, 1024 x 2 x 12288 fp32 = 96 MiB (Q|K|V's 1024 x 3 x 4096 is less); the projections (64 MiB)
  // and up (192 MiB) buffers go: 64 + 192 + (192 - 96) = 352 MiB less.
  const auto fused = dit_workspace(dit, e, 512, 4096, false, true);
  ASSERT_EQ(fused.size(), 17u);
  EXPECT_EQ(fused[2].bytes, 0);
  EXPECT_EQ(fused[9].bytes, 96 * mib);
  EXPECT_EQ(fused[10].bytes, 0);
  EXPECT_EQ(bytes_of(fused), bytes_of(ws) - 352 * mib);
  // An MLP narrower than 1.5 dim (ratio 1 here) leaves Q|K|V the wider of the two: 1024 x 3 x 4096 x 4.
  DitConfig narrow = dit;
  narrow.mlp_ratio = 1;
  EXPECT_EQ(dit_workspace(narrow, e, 512, 4096, false, true)[9].bytes, 48 * mib);
  // Fewer rows than a chunk: the chunk is the rows (a 256 x 256 image's 256 latents, L 512).
  EXPECT_EQ(dit_workspace(dit, e, 512, 256, false, true)[9].bytes, 512 * 2 * 12288 * 4);
  // RoPE: 512 and 4096 rows of 64 floats, twice; the text prefix: 32 blocks x 512 x 4096 x 2 bytes, K and V.
  EXPECT_EQ(bytes_of(dit_image_buffers(dit, e, 512, 4096)), 2 * 512 * 64 * 4 + 2 * 4096 * 64 * 4 + 2 * 128 * mib);
  // The VAE (decoder_base_dim 144, dim_mult 1 2 4 8 8): channels 1152 1152 1152 576 288 144; the widest
  // stage is 288 channels at the full 1024 x 1024 pixels, 301,989,888 values: three fp32 maps of them
  // and one bf16 conv input; the up block input only the last upsampling block's, 576 channels at
  // 512 x 512 (half as many values: the last block does not upsample, so it keeps no copy of its
  // input); the im2col strip at its 64 Mi-element budget; the attention's tokens 3 x 1152 x 2 bytes per
  // latent; its scores 4096 x 4096, fp32 and bf16.
  const VaeConfig vae = tools::real_vae_config();
  EXPECT_EQ(vae_decoder_dims(vae), (std::vector<int64_t>{1152, 1152, 1152, 576, 288, 144}));
  const int64_t widest = int64_t{288} * 1024 * 1024;
  EXPECT_EQ(bytes_of(vae_workspace(vae, e, vae_untiled_plan(vae, 64, 64))),
            3 * widest * 4 + int64_t{576} * 512 * 512 * 4 + widest * 2 + 64 * mib * 2 + 3 * 1152 * 2 * 4096 + 4096 * 4096 * (4 + 2));
  // The encoder at Lfull 512 (hidden 4096, 32 query and 8 key/value heads of 128, MLP 12288).
  const TextEncoderConfig enc = tools::real_text_encoder_config();
  EXPECT_EQ(bytes_of(encoder_workspace(enc, e, 512)),
            512 * 4 + 2 * 512 * 64 * 4 + 512 * 4096 * (4 + 2) + 512 * 12288 * 4 + 512 * 4096 * 2 + 2 * 512 * 1024 * 2 +
                512 * 4096 * 4 + 512 * 12288 * 4 + 512 * 12288 * 2 + 32 * 512 * 512 * (4 + 2));
  // Together, with cuBLASLt's 32 MiB: 6.43 GiB, where the fit check used to reserve a flat 4 GiB.
  const int64_t total = session_workspace_bytes(enc, dit, vae, e, 512, 512, 4096);
  EXPECT_EQ(total, int64_t{6901204992});
  EXPECT_GT(total, int64_t{4} << 30);
}

// The plan follows the size asked for: smaller renders need less, fp32 sessions more.
TEST(CudaWorkspacePlan, GrowsWithTheImageAndTheElementSize) {
  const auto enc = tools::real_text_encoder_config();
  const auto dit = tools::real_dit_config();
  const auto vae = tools::real_vae_config();
  int64_t last = 0;
  for (const int64_t n : {256, 1024, 4096}) {
    const int64_t bytes = session_workspace_bytes(enc, dit, vae, 2, 512, 512, n);
    EXPECT_GT(bytes, last) << n;
    EXPECT_GT(session_workspace_bytes(enc, dit, vae, 4, 512, 512, n), bytes) << n;
    last = bytes;
  }
}

}  // namespace
}  // namespace rgbaq::engine::cuda
