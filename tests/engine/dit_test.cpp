// The CPU DiT's text-prefix cache against the full recompute, and the timestep embedding. (The DiT
// against its float64 reference runs for every backend in graphs_reference_test.cpp.)
#include "engine/cpu/dit.h"

#include <gtest/gtest.h>

#include <iostream>

#include "host/rope.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/dit_reference.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine::cpu {
namespace {

struct Inputs {
  Tensor img, txt;
  host::RopeTensors rope;
};

Inputs make_inputs(const DitConfig& c, int64_t l, const host::ImageSize& size, uint32_t seed) {
  Inputs in;
  in.img = Tensor::from_f32({size.tokens(), 64}, testing::random_floats(size.tokens() * 64, seed, 1.7f));
  in.txt = Tensor::from_f32({l, c.context_dim}, testing::random_floats(l * c.context_dim, seed + 1, 3.0f));
  in.rope = host::build_rope(host::RopeTables::from_formula(), static_cast<int>(l), size);
  return in;
}

TEST(Dit, TextPrefixCacheEqualsTheFullRecompute) {
  const TinyModel model(DType::kF32, 3);
  const auto weights = WeightStore::open(model.dir() / "transformer");
  const auto config = load_dit_config(model.dir() / "transformer" / "config.json");
  const Dit dit(weights, config);
  ThreadPool pool(2);
  const Inputs in = make_inputs(config, 21, {256, 256}, 9);
  DitWorkspace ws;
  TextPrefix prefix;
  dit.text_prefix(in.txt, in.rope, ws, prefix, pool);
  std::vector<float> cached(static_cast<size_t>(in.img.numel()));
  for (float t : {1.0f, 0.845148f, 0.414568f}) {  // one prefix serves every step
    dit.velocity(in.img, prefix, t, in.rope, ws, cached.data(), pool);
    const auto full = dit.velocity_full(in.img, in.txt, t, in.rope, pool).to_f32_vector();
    const double err = testing::relative_error(cached, testing::widen(full));
    EXPECT_LT(err, 1e-6) << "t " << t;
    std::cout << "prefix cache vs full recompute at t " << t << ": relative error " << err << (cached == full ? " (bit-identical)" : "") << "\n";
  }
}

TEST(Dit, TimestepEmbeddingIsCosThenSin) {
  const auto e = Dit::timestep_embedding(0.5f);
  EXPECT_FLOAT_EQ(e[0], static_cast<float>(std::cos(500.0)));
  EXPECT_FLOAT_EQ(e[128], static_cast<float>(std::sin(500.0)));
  EXPECT_NEAR(e[1], std::cos(500.0 * std::exp(-std::log(10000.0) / 128)), 2e-4);
  const auto zero = Dit::timestep_embedding(0.0f);
  EXPECT_EQ(zero[7], 1.0f);
  EXPECT_EQ(zero[200], 0.0f);
}

}  // namespace
}  // namespace rgbaq::engine::cpu
