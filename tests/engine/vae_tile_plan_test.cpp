// The VAE's tile plan (engine/vae_tile_plan.h): the halo against counts by hand and a forward count of
// spoiled pixels, cores that partition the level map, and the CUDA workspace it bounds at the real dims.
#include "engine/vae_tile_plan.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/workspace_plan.h"
#include "tools/tiny_model.h"

namespace rgbaq::engine {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Forward, as the decoder runs: spoiled pixels at each cut edge after every 3x3 conv (+1 at its level)
// and upsample (x2), from the crop at block first_tiled's input to the output; the halo is that width
// brought back to the level (divided by the scale, rounded up).
int64_t forward_spoil_halo(const VaeConfig& c, int first_tiled) {
  const int blocks = static_cast<int>(c.dim_mult.size());
  int64_t spoiled = 0, scale = 1;
  for (int i = first_tiled; i < blocks; ++i) {
    spoiled += 2 * (c.num_res_blocks + 1);  // two convs per res block
    if (i + 1 < blocks) spoiled = 2 * spoiled + 1, scale *= 2;  // upsample, then the upsampler's conv
  }
  spoiled += 1;  // conv_out
  return (spoiled + scale - 1) / scale;
}

TEST(VaeTilePlan, HaloMatchesCountsByHand) {
  // Real and tiny dims share the structure (dim_mult 1 2 4 8 8: five up blocks, the first four
  // upsample; three res blocks each). Back from the output: conv_out 1; block 4: + 6 = 7; block 3:
  // + 1 = 8, /2 = 4, + 6 = 10; block 2: 11 -> 6 -> 12; block 1: 13 -> 7 -> 13; block 0: 14 -> 7 -> 13.
  for (const VaeConfig& c : {tools::real_vae_config(), tools::tiny_vae_config()}) {
    const std::vector<int64_t> by_hand = {13, 13, 12, 10, 7};
    for (int f = 0; f < 5; ++f) {
      EXPECT_EQ(vae_tile_halo(c, f), by_hand[f]) << f;
      EXPECT_EQ(vae_tile_halo(c, f), forward_spoil_halo(c, f)) << f;
    }
  }
  // Another shape: dim_mult 1 2 4 (three up blocks, 0 and 1 upsample), num_res_blocks 1 (two res
  // blocks, four convs a block). Back: 1 + 4 = 5; 6 -> 3 -> 7; 8 -> 4 -> 8.
  VaeConfig small = tools::tiny_vae_config();
  small.dim_mult = {1, 2, 4};
  small.num_res_blocks = 1;
  EXPECT_EQ(vae_tile_halo(small, 2), 5);
  EXPECT_EQ(vae_tile_halo(small, 1), 7);
  EXPECT_EQ(vae_tile_halo(small, 0), 8);
  for (int f = 0; f < 3; ++f) EXPECT_EQ(vae_tile_halo(small, f), forward_spoil_halo(small, f)) << f;
}

TEST(VaeTilePlan, CoresPartitionTheLevelAndCropsAreCoresWithTheHalo) {
  const VaeConfig c = tools::tiny_vae_config();
  struct Case {
    int64_t h, w;
    int first;
    int64_t tile;
  };
  for (const Case k : {Case{8, 8, 3, 16}, Case{5, 7, 2, 6}, Case{4, 12, 4, 50}, Case{3, 3, 0, 2}, Case{8, 8, 1, 100}}) {
    const VaeTilePlan p = vae_tile_plan(c, k.h, k.w, k.first, k.tile);
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + " from block " + std::to_string(k.first));
    ASSERT_TRUE(p.tiled());
    EXPECT_EQ(p.level_height, k.h << k.first);
    EXPECT_EQ(p.level_width, k.w << k.first);
    EXPECT_EQ(p.scale, int64_t{1} << (4 - std::min(k.first, 4)));
    EXPECT_EQ(p.halo, vae_tile_halo(c, k.first));
    std::vector<int> covered(static_cast<size_t>(p.level_height * p.level_width), 0);
    for (const VaeTileSpan& r : p.rows)
      for (const VaeTileSpan& col : p.cols) {
        for (int64_t y = r.core_begin; y < r.core_end; ++y)
          for (int64_t x = col.core_begin; x < col.core_end; ++x) ++covered[y * p.level_width + x];
      }
    for (int v : covered) ASSERT_EQ(v, 1);
    for (const auto* axis : {&p.rows, &p.cols}) {
      const int64_t length = axis == &p.rows ? p.level_height : p.level_width;
      for (const VaeTileSpan& s : *axis) {
        EXPECT_LE(s.core_end - s.core_begin, k.tile);
        EXPECT_EQ(s.crop_begin, std::max<int64_t>(0, s.core_begin - p.halo));
        EXPECT_EQ(s.crop_end, std::min(length, s.core_end + p.halo));
        EXPECT_LE(s.crop_end - s.crop_begin, axis == &p.rows ? p.crop_bound_height() : p.crop_bound_width());
      }
    }
  }
  EXPECT_FALSE(vae_untiled_plan(c, 8, 8).tiled());
  EXPECT_THROW(vae_tile_plan(c, 8, 8, 6, 4), std::invalid_argument);
  EXPECT_THROW(vae_tile_plan(c, 8, 8, 2, 0), std::invalid_argument);
}

// Issue 21's bounds on the CUDA workspace (workspace_plan.h's buffer list for the plan), bf16.
TEST(VaeTilePlan, CudaWorkspaceAtRealDimsIsBounded) {
  const VaeConfig c = tools::real_vae_config();
  const int64_t e = 2;
  const double untiled = static_cast<double>(bytes_of(cuda::vae_workspace(c, e, vae_untiled_plan(c, 64, 64))));
  EXPECT_GT(untiled, 4.5 * kGiB);  // 4.75 GiB (CudaWorkspacePlan)
  struct Case {
    int64_t grid;
    double bound_gib;
  };
  for (const Case k : {Case{64, 1.0}, Case{128, 2.0}}) {
    const VaeTilePlan p = cuda::vae_tiled_plan(c, e, k.grid, k.grid);
    const double bytes = static_cast<double>(bytes_of(cuda::vae_workspace(c, e, p)));
    ASSERT_TRUE(p.tiled());
    EXPECT_LE(bytes, k.bound_gib * kGiB) << k.grid;
    EXPECT_EQ(p.budget, static_cast<int64_t>(k.bound_gib * kGiB));
    std::cout << "VAE at " << 16 * k.grid << "x" << 16 * k.grid << " (real dims, bf16): untiled "
              << bytes_of(cuda::vae_workspace(c, e, vae_untiled_plan(c, k.grid, k.grid))) / kGiB << " GiB, tiled "
              << bytes / kGiB << " GiB: " << p.tile_count() << " tiles of " << p.tile << " px from up block "
              << p.first_tiled << " (halo " << p.halo << ", recompute x" << p.recompute_ratio() << ")\n";
  }
}

TEST(VaeTilePlan, SmallImagesStayUntiled) {
  // The CPU rule (1 GiB of maps): the tiny model at 1024x1024, the real dims at 256x256; the real dims
  // at 512x512 (six fp32 maps of 288 x 512 x 512 = 1.7 GiB) tile.
  EXPECT_FALSE(cpu::VaeDecoder::plan(tools::tiny_vae_config(), 64, 64, cpu::kVaeMapBudget).tiled());
  EXPECT_FALSE(cpu::VaeDecoder::plan(tools::real_vae_config(), 16, 16, cpu::kVaeMapBudget).tiled());
  const VaeTilePlan p = cpu::VaeDecoder::plan(tools::real_vae_config(), 32, 32, cpu::kVaeMapBudget);
  EXPECT_TRUE(p.tiled());
  EXPECT_LE(cpu::VaeDecoder::map_bytes(tools::real_vae_config(), p), cpu::kVaeMapBudget);
  // CUDA: the tiny model's session plan, even asked to tile, needs no tiles.
  EXPECT_FALSE(cuda::vae_session_plan(tools::tiny_vae_config(), 2, 4096, true).tiled());
  // The untiled session plan's buffers are the untiled plan's of any grid of those pixels.
  const VaeConfig real = tools::real_vae_config();
  EXPECT_EQ(bytes_of(cuda::vae_workspace(real, 2, cuda::vae_session_plan(real, 2, 4096, false))),
            bytes_of(cuda::vae_workspace(real, 2, vae_untiled_plan(real, 32, 128))));
}

// The session's tiled layout bounds every grid it may decode: a grid of no more latents planned with
// the same first tiled block and tile never needs more of any buffer.
TEST(VaeTilePlan, SessionPlanBoundsEveryGridOfNoMoreLatents) {
  const VaeConfig c = tools::real_vae_config();
  const VaeTilePlan session = cuda::vae_session_plan(c, 2, 4096, true);
  ASSERT_TRUE(session.tiled());
  const auto bound = cuda::vae_workspace(c, 2, session);
  for (const auto& [h, w] : std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {16, 256}, {256, 16}, {48, 80}, {8, 8}, {63, 65}}) {
    if (h * w > 4096) continue;
    const auto buffers = cuda::vae_workspace(c, 2, vae_tile_plan(c, h, w, session.first_tiled, session.tile));
    ASSERT_EQ(buffers.size(), bound.size());
    for (size_t i = 0; i < buffers.size(); ++i) EXPECT_LE(buffers[i].bytes, bound[i].bytes) << h << "x" << w << " " << buffers[i].what;
  }
}

}  // namespace
}  // namespace rgbaq::engine
