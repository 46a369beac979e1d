#include "engine/cpu/dit.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/cpu/attention.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/linear.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr int kTimestepDim = 256;

}  // namespace

Dit::Dit(const WeightStore& w, const DitConfig& c) : config_(c) {
  const int64_t dim = c.dim(), mlp = dim * c.mlp_ratio;
  img_in_ = w.require("img_in.weight", {dim, 64});
  text_norm_ = w.require("txt_in.text_norm.weight", {c.context_dim}).to_f32_vector();
  txt_in_ = w.require("txt_in.in_layer.weight", {dim, c.context_dim});
  txt_out_ = w.require("txt_in.out_layer.weight", {dim, dim});
  time_1_ = w.require("time_text_embed.timestep_embedder.linear_1.weight", {dim, kTimestepDim});
  time_2_ = w.require("time_text_embed.timestep_embedder.linear_2.weight", {dim, dim});
  modulation_ = w.require("modulation.1.weight", {4 * dim, dim});
  norm_out_ = w.require("norm_out.linear.weight", {dim, dim});
  proj_out_ = w.require("proj_out.weight", {64, dim});
  for (int i = 0; i < c.layers; ++i) {
    const std::string p = "transformer_blocks." + std::to_string(i) + ".";
    Block b;
    b.to_q = w.require(p + "attn.to_q.weight", {dim, dim});
    b.to_k = w.require(p + "attn.to_k.weight", {dim, dim});
    b.to_v = w.require(p + "attn.to_v.weight", {dim, dim});
    b.to_out = w.require(p + "attn.to_out.0.weight", {dim, dim});
    b.norm_q = w.require(p + "attn.norm_q.weight", {c.head_dim}).to_f32_vector();
    b.norm_k = w.require(p + "attn.norm_k.weight", {c.head_dim}).to_f32_vector();
    b.proj = w.require(p + "img_mlp.proj.weight", {mlp, dim});
    b.gate = w.require(p + "img_mlp.gate_layer.weight", {mlp, dim});
    b.out = w.require(p + "img_mlp.out.weight", {dim, mlp});
    blocks_.push_back(std::move(b));
  }
}

std::vector<float> Dit::timestep_embedding(float t) {
  // freqs = exp(-ln(10000) * arange(128) / 128), args = (1000 * t) * freqs, all fp32 as diffusers has them.
  const float neg_log_period = static_cast<float>(-std::log(10000.0));
  const float scaled_t = 1000.0f * t;
  std::vector<float> emb(kTimestepDim);
  for (int k = 0; k < kTimestepDim / 2; ++k) {
    const float freq = static_cast<float>(std::exp(static_cast<double>(neg_log_period * static_cast<float>(k) / 128.0f)));
    const double arg = static_cast<float>(scaled_t * freq);
    emb[k] = static_cast<float>(std::cos(arg));
    emb[k + kTimestepDim / 2] = static_cast<float>(std::sin(arg));
  }
  return emb;
}

Dit::Modulation Dit::modulation(float t, ThreadPool& pool) const {
  const int64_t dim = config_.dim();
  const auto emb = timestep_embedding(t);
  std::vector<float> hidden(dim), temb(dim);
  linear(emb.data(), 1, time_1_, hidden.data(), pool);
  for (float& v : hidden) v = silu(v);
  linear(hidden.data(), 1, time_2_, temb.data(), pool);
  for (float& v : temb) v = silu(v);  // both heads read silu(temb)
  Modulation m;
  m.blocks.resize(4 * dim);
  m.final_scale.resize(dim);
  linear(temb.data(), 1, modulation_, m.blocks.data(), pool);
  linear(temb.data(), 1, norm_out_, m.final_scale.data(), pool);
  // Stored ready to use: the gates through tanh.
  for (int64_t i = 0; i < dim; ++i) {
    m.blocks[dim + i] = std::tanh(m.blocks[dim + i]);
    m.blocks[3 * dim + i] = std::tanh(m.blocks[3 * dim + i]);
  }
  return m;
}

std::vector<float> Dit::embed_text(const Tensor& txt_feats, ThreadPool& pool) const {
  const int64_t l = txt_feats.dim(0), dim = config_.dim();
  std::vector<float> normed(static_cast<size_t>(l * config_.context_dim)), h(static_cast<size_t>(l * dim)), x(h.size());
  rms_norm(txt_feats.f32(), l, config_.context_dim, text_norm_.data(), 1.0f, static_cast<float>(config_.eps),
           normed.data(), pool);
  linear(normed.data(), l, txt_in_, h.data(), pool);
  gelu_tanh(h.data(), static_cast<int64_t>(h.size()), pool);
  linear(h.data(), l, txt_out_, x.data(), pool);
  return x;
}

std::vector<float> Dit::embed_image(const Tensor& img_tokens, ThreadPool& pool) const {
  std::vector<float> x(static_cast<size_t>(img_tokens.dim(0) * config_.dim()));
  linear(img_tokens.f32(), img_tokens.dim(0), img_in_, x.data(), pool);
  return x;
}

void Dit::run_block(const Block& b, std::vector<float>& x, int64_t rows, int64_t text_rows, const float* cos,
                    const float* sin, const Modulation& text_mod, const Modulation& image_mod, const float* prefix_k,
                    const float* prefix_v, int64_t prefix_rows, std::vector<float>* store_k,
                    std::vector<float>* store_v, ThreadPool& pool) const {
  const int64_t dim = config_.dim(), mlp = dim * config_.mlp_ratio, keys = prefix_rows + rows;
  const float eps = static_cast<float>(config_.eps);
  auto mod_of = [&](int64_t row) -> const float* {
    return row < text_rows ? text_mod.blocks.data() : image_mod.blocks.data();
  };
  std::vector<float> h(static_cast<size_t>(rows * dim)), q(h.size()), k(static_cast<size_t>(keys * dim)),
      v(k.size()), attn(h.size()), delta(h.size()), up(static_cast<size_t>(rows * mlp)), gate(up.size());

  // h = LN(x) * (1 + scale); which scale depends on the row.
  auto modulated_norm = [&](int64_t scale_offset) {
    layer_norm(x.data(), rows, dim, eps, h.data(), pool);
    pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* scale = mod_of(r) + scale_offset;
        for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1.0f + scale[i];
      }
    });
  };
  // x += gate * delta, the gate (already through tanh) by row.
  auto gated_add = [&](int64_t gate_offset) {
    pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* g = mod_of(r) + gate_offset;
        for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += g[i] * delta[r * dim + i];
      }
    });
  };

  modulated_norm(0);
  float* own_k = k.data() + prefix_rows * dim;
  float* own_v = v.data() + prefix_rows * dim;
  linear(h.data(), rows, b.to_q, q.data(), pool);
  linear(h.data(), rows, b.to_k, own_k, pool);
  linear(h.data(), rows, b.to_v, own_v, pool);
  rms_norm(q.data(), rows * config_.heads, config_.head_dim, b.norm_q.data(), 0.0f, eps, q.data(), pool);
  rms_norm(own_k, rows * config_.heads, config_.head_dim, b.norm_k.data(), 0.0f, eps, own_k, pool);
  rope_interleaved(q.data(), rows, dim, config_.heads, config_.head_dim, cos, sin, pool);
  rope_interleaved(own_k, rows, dim, config_.heads, config_.head_dim, cos, sin, pool);
  if (prefix_rows > 0) {
    std::memcpy(k.data(), prefix_k, sizeof(float) * static_cast<size_t>(prefix_rows * dim));
    std::memcpy(v.data(), prefix_v, sizeof(float) * static_cast<size_t>(prefix_rows * dim));
  }
  if (store_k) {
    store_k->assign(own_k, own_k + text_rows * dim);
    store_v->assign(own_v, own_v + text_rows * dim);
  }
  AttentionShape s;
  s.q_rows = rows;
  s.kv_rows = keys;
  s.q_heads = s.kv_heads = config_.heads;
  s.head_dim = config_.head_dim;
  s.q_stride = s.k_stride = s.v_stride = s.out_stride = dim;
  s.causal_rows = text_rows;  // text queries see the text keys up to themselves; image queries see all
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(config_.head_dim)));
  attention(q.data(), k.data(), v.data(), attn.data(), s, pool);
  linear(attn.data(), rows, b.to_out, delta.data(), pool);
  gated_add(dim);

  modulated_norm(2 * dim);
  linear(h.data(), rows, b.gate, gate.data(), pool);
  linear(h.data(), rows, b.proj, up.data(), pool);
  swiglu(gate.data(), up.data(), rows * mlp, pool);
  linear(gate.data(), rows, b.out, delta.data(), pool);
  gated_add(3 * dim);
}

Tensor Dit::project_out(const std::vector<float>& x, int64_t first_row, int64_t rows, const Modulation& image_mod,
                        ThreadPool& pool) const {
  const int64_t dim = config_.dim();
  std::vector<float> h(static_cast<size_t>(rows * dim));
  layer_norm(x.data() + first_row * dim, rows, dim, static_cast<float>(config_.eps), h.data(), pool);
  pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1.0f + image_mod.final_scale[i];
  });
  Tensor vel = Tensor::zeros(DType::kF32, {rows, 64});
  linear(h.data(), rows, proj_out_, vel.mutable_f32(), pool);
  return vel;
}

TextPrefix Dit::text_prefix(const Tensor& txt_feats, const host::RopeTensors& rope, ThreadPool& pool) const {
  const int64_t l = txt_feats.dim(0);
  const Modulation text_mod = modulation(0.0f, pool);
  std::vector<float> x = embed_text(txt_feats, pool);
  TextPrefix prefix;
  prefix.text_len = l;
  prefix.keys.resize(blocks_.size());
  prefix.values.resize(blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(blocks_[i], x, l, l, rope.txt_cos.data(), rope.txt_sin.data(), text_mod, text_mod, nullptr, nullptr, 0,
              &prefix.keys[i], &prefix.values[i], pool);
  }
  return prefix;
}

Tensor Dit::velocity(const Tensor& img_tokens, const TextPrefix& prefix, float t, const host::RopeTensors& rope,
                     ThreadPool& pool) const {
  const int64_t n = img_tokens.dim(0);
  if (prefix.text_len != rope.text_len || prefix.keys.size() != blocks_.size()) {
    throw std::invalid_argument("DiT: the text prefix is for L " + std::to_string(prefix.text_len) + ", RoPE for L " +
                                std::to_string(rope.text_len));
  }
  const Modulation image_mod = modulation(t, pool);
  std::vector<float> x = embed_image(img_tokens, pool);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(blocks_[i], x, n, 0, rope.img_cos.data(), rope.img_sin.data(), image_mod, image_mod,
              prefix.keys[i].data(), prefix.values[i].data(), prefix.text_len, nullptr, nullptr, pool);
  }
  return project_out(x, 0, n, image_mod, pool);
}

Tensor Dit::velocity_full(const Tensor& img_tokens, const Tensor& txt_feats, float t, const host::RopeTensors& rope,
                          ThreadPool& pool) const {
  const int64_t n = img_tokens.dim(0), l = txt_feats.dim(0);
  const Modulation text_mod = modulation(0.0f, pool), image_mod = modulation(t, pool);
  std::vector<float> x = embed_text(txt_feats, pool);
  const std::vector<float> image = embed_image(img_tokens, pool);
  x.insert(x.end(), image.begin(), image.end());
  std::vector<float> cos(rope.txt_cos), sin(rope.txt_sin);
  cos.insert(cos.end(), rope.img_cos.begin(), rope.img_cos.end());
  sin.insert(sin.end(), rope.img_sin.begin(), rope.img_sin.end());
  for (const Block& b : blocks_) {
    run_block(b, x, l + n, l, cos.data(), sin.data(), text_mod, image_mod, nullptr, nullptr, 0, nullptr, nullptr, pool);
  }
  return project_out(x, l, n, image_mod, pool);
}

}  // namespace rgbaq::engine::cpu
