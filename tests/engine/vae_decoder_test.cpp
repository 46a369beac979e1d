// The CPU VAE decoder with 4-D conv weights on the smallest legal N against its float64 reference
// (vae_reference.h), and shape errors. (The 5-D weights on a non-square grid run for every backend in
// graphs_reference_test.cpp.)
#include "engine/cpu/vae_decoder.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/cpu/vector_exp.h"
#include "engine/model/safetensors.h"
#include "host/rgba8.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/vae_reference.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine::cpu {
namespace {

using testing::Vec;

void expect_matches(const std::filesystem::path& vae_dir, int h, int w) {
  const auto weights = WeightStore::open(vae_dir);
  const auto config = load_vae_config(vae_dir / "config.json");
  const VaeDecoder vae(weights, config);
  ThreadPool pool(2);
  const auto latents = testing::random_floats(static_cast<size_t>(h * w * 64), 21, 1.5f);
  const Tensor image = vae.decode(Tensor::from_f32({h * w, 64}, latents), h, w, pool);
  ASSERT_EQ(image.shape(), (Shape{4, 16 * h, 16 * w}));
  const Vec want = testing::VaeReference{weights}.decode(latents, h, w, config);
  const double err = testing::relative_error(image.to_f32_vector(), want);
  EXPECT_LT(err, 1e-4) << h << "x" << w;
  std::cout << "VAE at a " << h << "x" << w << " grid: relative error " << err << "\n";
  // The image is not trivially clipped: some values inside (-1, 1).
  int inside = 0;
  for (double v : want) inside += std::abs(v) < 0.99;
  EXPECT_GT(inside, static_cast<int>(want.size() / 2));
}

// Feature maps come from buffers kept across decodes: decodes at changing sizes on one decoder must give
// the bytes a fresh decoder gives (no stale data from a larger or smaller earlier map).
TEST(VaeDecoder, ReusedBuffersAcrossSizesGiveTheSameImages) {
  const TinyModel model(DType::kBF16);
  const auto weights = WeightStore::open(model.dir() / "vae");
  const auto config = load_vae_config(model.dir() / "vae" / "config.json");
  ThreadPool pool(2);
  auto decode = [&](const VaeDecoder& vae, int h, int w) {
    const auto latents = testing::random_floats(static_cast<size_t>(h * w * 64), static_cast<uint32_t>(h * 100 + w), 1.5f);
    return vae.decode(Tensor::from_f32({h * w, 64}, latents), h, w, pool).to_f32_vector();
  };
  const VaeDecoder reused(weights, config);
  const auto small_first = decode(reused, 4, 6);
  const auto large = decode(reused, 10, 8);
  const auto small_again = decode(reused, 4, 6);
  EXPECT_EQ(small_first, small_again);
  EXPECT_EQ(large, decode(VaeDecoder(weights, config), 10, 8));
  EXPECT_EQ(small_first, decode(VaeDecoder(weights, config), 4, 6));
}

TEST(VaeDecoder, MatchesFloat64ReferenceSmallestGridWithFourDimensionalConvs) {
  const TinyModel model(DType::kF32, 4);
  // Rewrite every 5-D conv weight as the 4-D [out, in, kh, kw] a 2-D export would store: its last tap.
  const auto path = model.dir() / "vae" / "diffusion_pytorch_model.safetensors";
  std::vector<std::pair<std::string, Tensor>> rewritten;
  {
    const auto file = SafetensorsFile::open(path);
    for (const auto& name : file.names()) {
      Tensor t = file.tensor(name);
      if (t.rank() == 5 && name.find("time_conv") == std::string::npos) {
        const auto& s = t.shape();
        const auto all = t.to_f32_vector();
        std::vector<float> last;
        const int64_t taps = s[3] * s[4];
        for (int64_t oi = 0; oi < s[0] * s[1]; ++oi)
          for (int64_t k = 0; k < taps; ++k) last.push_back(all[(oi * s[2] + s[2] - 1) * taps + k]);
        t = Tensor::from_f32({s[0], s[1], s[3], s[4]}, std::move(last));
      } else {
        t = Tensor::from_f32(t.shape(), t.to_f32_vector());  // own the data before the file is replaced
      }
      rewritten.emplace_back(name, std::move(t));
    }
  }
  write_safetensors(path, rewritten);
  expect_matches(model.dir() / "vae", 8, 8);  // N = 64, the smallest legal grid
}

// The channel norm + SiLU, AVX2 (where the CPU has it) and portable, on a grid whose maps are no
// multiple of 8 pixels at any level (the vector loops' tails).
TEST(VaeDecoder, MatchesFloat64ReferenceOnBothKernelPathsOddGrid) {
  const TinyModel model(DType::kF32, 5);
  for (bool portable : {false, true}) {
    SCOPED_TRACE(portable ? "portable path" : "AVX2 path where available");
    avx2_paths_disabled() = portable;
    expect_matches(model.dir() / "vae", 5, 7);
  }
  avx2_paths_disabled() = false;
}

// Tiled = untiled (engine/vae_tile_plan.h): the tiny model, its tiles forced small, from several up
// blocks, on square and non-square grids and tiles that do not divide the level map, against the
// whole-map decode: the 8-bit images (the PNGs' conversion) within 1 level, the floats within 1e-5.
TEST(VaeDecoder, TiledDecodeEqualsTheUntiledOne) {
  const TinyModel model(DType::kBF16, 6);
  const auto weights = WeightStore::open(model.dir() / "vae");
  const auto config = load_vae_config(model.dir() / "vae" / "config.json");
  const VaeDecoder vae(weights, config);
  ThreadPool pool(2);
  struct Case {
    int h, w, first_tiled;
    int64_t tile;
  };
  double worst = 0;
  for (const Case k : {Case{8, 8, 1, 5}, Case{6, 10, 2, 7}, Case{9, 4, 3, 16}, Case{8, 8, 4, 48}, Case{5, 7, 0, 2}}) {
    const VaeTilePlan plan = vae_tile_plan(config, k.h, k.w, k.first_tiled, k.tile);
    SCOPED_TRACE(std::to_string(k.h) + "x" + std::to_string(k.w) + " from up block " + std::to_string(k.first_tiled) +
                 ", tile " + std::to_string(k.tile));
    ASSERT_GE(plan.tile_count(), 4);
    const auto latents = Tensor::from_f32({int64_t{k.h} * k.w, 64},
                                          testing::random_floats(static_cast<size_t>(k.h * k.w * 64), 30 + k.h, 1.5f));
    const auto whole = vae.decode(latents, vae_untiled_plan(config, k.h, k.w), pool).to_f32_vector();
    const auto tiled = vae.decode(latents, plan, pool).to_f32_vector();
    ASSERT_EQ(tiled.size(), whole.size());
    double most = 0;
    for (size_t i = 0; i < whole.size(); ++i) most = std::max(most, static_cast<double>(std::abs(tiled[i] - whole[i])));
    EXPECT_LT(most, 1e-5);
    const int width = 16 * k.w, height = 16 * k.h;
    std::vector<uint8_t> a(static_cast<size_t>(4 * width * height)), b(a.size());
    host::image_to_rgba8(whole, width, height, a);
    host::image_to_rgba8(tiled, width, height, b);
    int levels = 0;
    for (size_t i = 0; i < a.size(); ++i) levels = std::max(levels, std::abs(int{a[i]} - int{b[i]}));
    EXPECT_LE(levels, 1);
    std::cout << "VAE tiled (" << plan.tile_count() << " tiles) vs untiled at " << k.h << "x" << k.w << " from up block "
              << k.first_tiled << ": max difference " << most << ", " << levels << " 8-bit levels\n";
    worst = std::max(worst, most);
  }
  std::cout << "VAE tiled vs untiled: worst " << worst << "\n";
  // The default budget leaves the tiny model untiled: decode() is the whole-map decode, bit for bit.
  const auto latents = Tensor::from_f32({64, 64}, testing::random_floats(64 * 64, 9, 1.5f));
  EXPECT_EQ(vae.decode(latents, 8, 8, pool).to_f32_vector(), vae.decode(latents, vae_untiled_plan(config, 8, 8), pool).to_f32_vector());
}

// A small map budget makes decode() plan tiles itself; the result is still the whole-map decode's.
TEST(VaeDecoder, SmallMapBudgetTilesWithTheSameImage) {
  const TinyModel model(DType::kBF16, 7);
  const auto weights = WeightStore::open(model.dir() / "vae");
  const auto config = load_vae_config(model.dir() / "vae" / "config.json");
  const int h = 12, w = 10;
  const int64_t budget = 8 << 20;  // the whole-map decode holds 6 x 16 x 192 x 160 floats (11 MiB)
  EXPECT_GT(VaeDecoder::map_bytes(config, vae_untiled_plan(config, h, w)), budget);
  const VaeTilePlan plan = VaeDecoder::plan(config, h, w, budget);
  ASSERT_TRUE(plan.tiled());
  EXPECT_GT(plan.tile_count(), 1);
  EXPECT_EQ(plan.budget, budget);
  EXPECT_LE(VaeDecoder::map_bytes(config, plan), budget);
  ThreadPool pool(2);
  const auto latents = Tensor::from_f32({h * w, 64}, testing::random_floats(static_cast<size_t>(h * w * 64), 5, 1.5f));
  const auto tiled = VaeDecoder(weights, config, budget).decode(latents, h, w, pool).to_f32_vector();
  const auto whole = VaeDecoder(weights, config).decode(latents, h, w, pool).to_f32_vector();
  ASSERT_EQ(tiled.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(tiled[i], whole[i], 1e-5) << i;
}

TEST(VaeDecoder, WrongConvShapeNamesTheTensor) {
  const TinyModel model(DType::kBF16);
  auto config = load_vae_config(model.dir() / "vae" / "config.json");
  config.decoder_base_dim = 4;
  const auto weights = WeightStore::open(model.dir() / "vae");
  try {
    VaeDecoder vae(weights, config);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("decoder.conv_in.weight\" has shape [64, 64, 3, 3, 3]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rgbaq::engine::cpu
