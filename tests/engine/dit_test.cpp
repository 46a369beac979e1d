// The DiT on the tiny checkpoint against a float64 naive implementation of QwenImage21's forward
// (written here from the model's definition, over all L + N rows with the block-causal mask), on a
// non-square grid and the smallest legal N; and the text-prefix cache against the full recompute.
#include "engine/cpu/dit.h"

#include <gtest/gtest.h>

#include <iostream>

#include "host/rope.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine::cpu {
namespace {

using testing::Vec;

struct Reference {
  const WeightStore& w;
  const DitConfig& c;
  Vec get(const std::string& name) const { return testing::widen(w.get(name).to_f32_vector()); }

  // [scale1 | gate1 | scale2 | gate2] and the final scale, for timestep t.
  std::pair<Vec, Vec> modulation(double t) const {
    const int64_t dim = c.dim();
    Vec emb(256);
    for (int k = 0; k < 128; ++k) {
      const double arg = 1000 * t * std::exp(-std::log(10000.0) * k / 128);
      emb[k] = std::cos(arg);
      emb[k + 128] = std::sin(arg);
    }
    Vec h = testing::matmul_nt(emb, 1, 256, get("time_text_embed.timestep_embedder.linear_1.weight"), dim);
    for (double& v : h) v = testing::silu(v);
    Vec temb = testing::matmul_nt(h, 1, dim, get("time_text_embed.timestep_embedder.linear_2.weight"), dim);
    for (double& v : temb) v = testing::silu(v);
    return {testing::matmul_nt(temb, 1, dim, get("modulation.1.weight"), 4 * dim),
            testing::matmul_nt(temb, 1, dim, get("norm_out.linear.weight"), dim)};
  }

  Vec velocity(const std::vector<float>& img, const std::vector<float>& txt, int64_t l, int64_t n, double t,
               const host::RopeTensors& rope) const {
    const int64_t dim = c.dim(), rows = l + n, hd = c.head_dim, heads = c.heads, mlp = dim * c.mlp_ratio;
    const Vec text_mod = modulation(0.0).first;
    const auto [image_mod, image_final] = modulation(t);
    // Embed: text through txt_in, image through img_in, in the order [text | image].
    Vec tn = testing::rms_norm(testing::widen(txt), l, c.context_dim, get("txt_in.text_norm.weight"), 1.0, c.eps);
    Vec th = testing::matmul_nt(tn, l, c.context_dim, get("txt_in.in_layer.weight"), dim);
    for (double& v : th) v = testing::gelu_tanh(v);
    Vec x = testing::matmul_nt(th, l, dim, get("txt_in.out_layer.weight"), dim);
    const Vec xi = testing::matmul_nt(testing::widen(img), n, 64, get("img_in.weight"), dim);
    x.insert(x.end(), xi.begin(), xi.end());
    auto modv = [&](int64_t r, int64_t part, int64_t i) { return (r < l ? text_mod : image_mod)[part * dim + i]; };
    auto cos_of = [&](int64_t r, int64_t j) { return r < l ? rope.txt_cos[r * 64 + j] : rope.img_cos[(r - l) * 64 + j]; };
    auto sin_of = [&](int64_t r, int64_t j) { return r < l ? rope.txt_sin[r * 64 + j] : rope.img_sin[(r - l) * 64 + j]; };
    for (int b = 0; b < c.layers; ++b) {
      const std::string p = "transformer_blocks." + std::to_string(b) + ".";
      Vec h = testing::layer_norm(x, rows, dim, c.eps);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1 + modv(r, 0, i);
      Vec q = testing::matmul_nt(h, rows, dim, get(p + "attn.to_q.weight"), dim);
      Vec k = testing::matmul_nt(h, rows, dim, get(p + "attn.to_k.weight"), dim);
      const Vec v = testing::matmul_nt(h, rows, dim, get(p + "attn.to_v.weight"), dim);
      q = testing::rms_norm(q, rows * heads, hd, get(p + "attn.norm_q.weight"), 0, c.eps);
      k = testing::rms_norm(k, rows * heads, hd, get(p + "attn.norm_k.weight"), 0, c.eps);
      for (Vec* m : {&q, &k})
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t hh = 0; hh < heads; ++hh)
            for (int64_t j = 0; j < hd / 2; ++j) {
              double& a = (*m)[(r * heads + hh) * hd + 2 * j];
              double& bb = (*m)[(r * heads + hh) * hd + 2 * j + 1];
              const double a0 = a, b0 = bb, cs = cos_of(r, j), sn = sin_of(r, j);
              a = a0 * cs - b0 * sn;
              bb = a0 * sn + b0 * cs;
            }
      const Vec att = testing::attention(q, k, v, rows, rows, static_cast<int>(heads), static_cast<int>(heads),
                                         static_cast<int>(hd), l, 1 / std::sqrt(double(hd)));
      const Vec o = testing::matmul_nt(att, rows, dim, get(p + "attn.to_out.0.weight"), dim);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += std::tanh(modv(r, 1, i)) * o[r * dim + i];
      h = testing::layer_norm(x, rows, dim, c.eps);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1 + modv(r, 2, i);
      Vec g = testing::matmul_nt(h, rows, dim, get(p + "img_mlp.gate_layer.weight"), mlp);
      const Vec u = testing::matmul_nt(h, rows, dim, get(p + "img_mlp.proj.weight"), mlp);
      for (size_t i = 0; i < g.size(); ++i) g[i] = testing::silu(g[i]) * u[i];
      const Vec f = testing::matmul_nt(g, rows, mlp, get(p + "img_mlp.out.weight"), dim);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += std::tanh(modv(r, 3, i)) * f[r * dim + i];
    }
    Vec img_rows(x.begin() + l * dim, x.end());
    Vec hn = testing::layer_norm(img_rows, n, dim, c.eps);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < dim; ++i) hn[r * dim + i] *= 1 + image_final[i];
    return testing::matmul_nt(hn, n, dim, get("proj_out.weight"), 64);
  }
};

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

TEST(Dit, MatchesFloat64ReferenceNonSquareAndSmallestGrid) {
  const TinyModel model(DType::kBF16);
  const auto weights = WeightStore::open(model.dir() / "transformer");
  const auto config = load_dit_config(model.dir() / "transformer" / "config.json");
  const Dit dit(weights, config);
  ThreadPool pool(2);
  const Reference ref{weights, config};
  for (const auto& [size, l] : {std::pair{host::ImageSize{192, 128}, int64_t{13}}, std::pair{host::ImageSize{128, 128}, int64_t{8}}}) {
    const Inputs in = make_inputs(config, l, size, 5);
    const float t = 0.704534f;
    const auto prefix = dit.text_prefix(in.txt, in.rope, pool);
    const Tensor vel = dit.velocity(in.img, prefix, t, in.rope, pool);
    ASSERT_EQ(vel.shape(), (Shape{size.tokens(), 64}));
    const Vec want = ref.velocity(in.img.to_f32_vector(), in.txt.to_f32_vector(), l, size.tokens(), t, in.rope);
    const double err = testing::relative_error(vel.to_f32_vector(), want);
    EXPECT_LT(err, 1e-4) << size.to_string();
    std::cout << "DiT at " << size.to_string() << ", L " << l << ": relative error " << err << "\n";
  }
}

TEST(Dit, TextPrefixCacheEqualsTheFullRecompute) {
  const TinyModel model(DType::kF32, 3);
  const auto weights = WeightStore::open(model.dir() / "transformer");
  const auto config = load_dit_config(model.dir() / "transformer" / "config.json");
  const Dit dit(weights, config);
  ThreadPool pool(2);
  const Inputs in = make_inputs(config, 21, {256, 256}, 9);
  const auto prefix = dit.text_prefix(in.txt, in.rope, pool);
  for (float t : {1.0f, 0.845148f, 0.414568f}) {  // one prefix serves every step
    const auto cached = dit.velocity(in.img, prefix, t, in.rope, pool).to_f32_vector();
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
