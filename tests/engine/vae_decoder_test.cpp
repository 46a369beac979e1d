// The CPU VAE decoder with 4-D conv weights on the smallest legal N against its float64 reference
// (vae_reference.h), and shape errors. (The 5-D weights on a non-square grid run for every backend in
// graphs_reference_test.cpp.)
#include "engine/cpu/vae_decoder.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/cpu/vector_exp.h"
#include "engine/safetensors.h"
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
