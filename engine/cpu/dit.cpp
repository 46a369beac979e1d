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
  lora_terms_.resize(dit_linear_modules(c).size());
}

void Dit::set_loras(const LoraSet& set) {
  auto terms = bind_loras(set, config_);  // throws before anything changes
  loras_ = set;
  lora_terms_ = std::move(terms);
}

void Dit::linear_lora(const float* x, int64_t rows, const Tensor& w, int index, float* y, ThreadPool& pool) const {
  linear(x, rows, w, y, pool);
  add_lora(x, rows, w.dim(1), lora_terms_[static_cast<size_t>(index)], y, w.dim(0), pool);
}

void Dit::linear_lora(SharedInput& x, const Tensor& w, int index, float* y, ThreadPool& pool) const {
  x.linear(w, y, w.dim(0));
  add_lora(x.x(), x.rows(), x.ldx(), lora_terms_[static_cast<size_t>(index)], y, w.dim(0), pool);
}

std::vector<float> Dit::timestep_embedding(float t) {
  std::vector<float> emb(kTimestepDim);
  timestep_embedding(t, emb.data());
  return emb;
}

void Dit::timestep_embedding(float t, float* emb) {
  // freqs = exp(-ln(10000) * arange(128) / 128), args = (1000 * t) * freqs, all fp32 as diffusers has them.
  const float neg_log_period = static_cast<float>(-std::log(10000.0));
  const float scaled_t = 1000.0f * t;
  for (int k = 0; k < kTimestepDim / 2; ++k) {
    const float freq = static_cast<float>(std::exp(static_cast<double>(neg_log_period * static_cast<float>(k) / 128.0f)));
    const double arg = static_cast<float>(scaled_t * freq);
    emb[k] = static_cast<float>(std::cos(arg));
    emb[k + kTimestepDim / 2] = static_cast<float>(std::sin(arg));
  }
}

namespace {

void grow(std::vector<float>& v, int64_t n) {
  if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
}

}  // namespace

void DitWorkspace::reserve(int64_t rows, int64_t keys, int64_t dim, int64_t mlp) {
  for (auto* b : {&x, &h, &q, &attn, &delta}) grow(*b, rows * dim);
  for (auto* b : {&k, &v}) grow(*b, keys * dim);
  for (auto* b : {&up, &gate}) grow(*b, rows * mlp);
  for (auto* b : {&hidden, &temb}) grow(*b, dim);
  grow(emb, kTimestepDim);
  for (auto* m : {&text_mod, &image_mod}) {
    grow(m->blocks, 4 * dim);
    grow(m->final_scale, dim);
  }
}

void Dit::modulation(float t, DitWorkspace& ws, DitModulation& m, ThreadPool& pool) const {
  const int64_t dim = config_.dim();
  timestep_embedding(t, ws.emb.data());
  linear_lora(ws.emb.data(), 1, time_1_, kTime1, ws.hidden.data(), pool);
  for (int64_t i = 0; i < dim; ++i) ws.hidden[i] = silu(ws.hidden[i]);
  linear_lora(ws.hidden.data(), 1, time_2_, kTime2, ws.temb.data(), pool);
  for (int64_t i = 0; i < dim; ++i) ws.temb[i] = silu(ws.temb[i]);  // both heads read silu(temb)
  linear_lora(ws.temb.data(), 1, modulation_, kModulation, m.blocks.data(), pool);
  linear_lora(ws.temb.data(), 1, norm_out_, kNormOut, m.final_scale.data(), pool);
  // Stored ready to use: the gates through tanh.
  for (int64_t i = 0; i < dim; ++i) {
    m.blocks[dim + i] = std::tanh(m.blocks[dim + i]);
    m.blocks[3 * dim + i] = std::tanh(m.blocks[3 * dim + i]);
  }
}

void Dit::embed_text(const Tensor& txt_feats, DitWorkspace& ws, float* x, ThreadPool& pool) const {
  const int64_t l = txt_feats.dim(0);
  // h and attn are free before the blocks run: the norm's output and the hidden layer.
  grow(ws.h, l * config_.context_dim);
  rms_norm(txt_feats.f32(), l, config_.context_dim, text_norm_.data(), 1.0f, static_cast<float>(config_.eps),
           ws.h.data(), pool);
  linear_lora(ws.h.data(), l, txt_in_, kTxtIn, ws.attn.data(), pool);
  gelu_tanh(ws.attn.data(), l * config_.dim(), pool);
  linear_lora(ws.attn.data(), l, txt_out_, kTxtOut, x, pool);
}

void Dit::embed_image(const Tensor& img_tokens, float* x, ThreadPool& pool) const {
  linear_lora(img_tokens.f32(), img_tokens.dim(0), img_in_, kImgIn, x, pool);
}

void Dit::run_block(int block, DitWorkspace& ws, int64_t rows, int64_t text_rows, const float* cos,
                    const float* sin, const float* prefix_k, const float* prefix_v, int64_t prefix_rows,
                    std::vector<float>* store_k, std::vector<float>* store_v, ThreadPool& pool) const {
  const Block& b = blocks_[static_cast<size_t>(block)];
  const int64_t dim = config_.dim(), mlp = dim * config_.mlp_ratio, keys = prefix_rows + rows;
  const float eps = static_cast<float>(config_.eps);
  float* x = ws.x.data();
  float* h = ws.h.data();
  float* delta = ws.delta.data();
  auto mod_of = [&](int64_t row) -> const float* {
    return row < text_rows ? ws.text_mod.blocks.data() : ws.image_mod.blocks.data();
  };

  // h = LN(x) * (1 + scale); which scale depends on the row.
  auto modulated_norm = [&](int64_t scale_offset) {
    layer_norm(x, rows, dim, eps, h, pool);
    pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) modulate_row(h + r * dim, mod_of(r) + scale_offset, dim);
    });
  };
  // x += gate * delta, the gate (already through tanh) by row.
  auto gated_add = [&](int64_t gate_offset) {
    pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) gated_add_row(x + r * dim, mod_of(r) + gate_offset, delta + r * dim, dim);
    });
  };

  modulated_norm(0);
  float* q = ws.q.data();
  float* own_k = ws.k.data() + prefix_rows * dim;
  float* own_v = ws.v.data() + prefix_rows * dim;
  SharedInput attn_in(h, rows, dim, ws.packed, pool);
  linear_lora(attn_in, b.to_q, dit_linear_index(block, kToQ), q, pool);
  linear_lora(attn_in, b.to_k, dit_linear_index(block, kToK), own_k, pool);
  linear_lora(attn_in, b.to_v, dit_linear_index(block, kToV), own_v, pool);
  rms_norm(q, rows * config_.heads, config_.head_dim, b.norm_q.data(), 0.0f, eps, q, pool);
  rms_norm(own_k, rows * config_.heads, config_.head_dim, b.norm_k.data(), 0.0f, eps, own_k, pool);
  rope_interleaved(q, rows, dim, config_.heads, config_.head_dim, cos, sin, pool);
  rope_interleaved(own_k, rows, dim, config_.heads, config_.head_dim, cos, sin, pool);
  if (prefix_rows > 0) {
    std::memcpy(ws.k.data(), prefix_k, sizeof(float) * static_cast<size_t>(prefix_rows * dim));
    std::memcpy(ws.v.data(), prefix_v, sizeof(float) * static_cast<size_t>(prefix_rows * dim));
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
  attention(q, ws.k.data(), ws.v.data(), ws.attn.data(), s, pool);
  linear_lora(ws.attn.data(), rows, b.to_out, dit_linear_index(block, kToOut), delta, pool);
  gated_add(dim);

  modulated_norm(2 * dim);
  SharedInput mlp_in(h, rows, dim, ws.packed, pool);
  linear_lora(mlp_in, b.gate, dit_linear_index(block, kMlpGate), ws.gate.data(), pool);
  linear_lora(mlp_in, b.proj, dit_linear_index(block, kMlpProj), ws.up.data(), pool);
  swiglu(ws.gate.data(), ws.up.data(), rows * mlp, pool);
  linear_lora(ws.gate.data(), rows, b.out, dit_linear_index(block, kMlpOut), delta, pool);
  gated_add(3 * dim);
}

void Dit::project_out(DitWorkspace& ws, int64_t first_row, int64_t rows, float* vel, ThreadPool& pool) const {
  const int64_t dim = config_.dim();
  float* h = ws.h.data();
  layer_norm(ws.x.data() + first_row * dim, rows, dim, static_cast<float>(config_.eps), h, pool);
  pool.parallel_for(rows, 8, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) modulate_row(h + r * dim, ws.image_mod.final_scale.data(), dim);
  });
  linear_lora(h, rows, proj_out_, kProjOut, vel, pool);
}

void Dit::text_prefix(const Tensor& txt_feats, const host::RopeTensors& rope, DitWorkspace& ws, TextPrefix& prefix,
                      ThreadPool& pool) const {
  const int64_t l = txt_feats.dim(0), dim = config_.dim();
  ws.reserve(l, l, dim, dim * config_.mlp_ratio);
  modulation(0.0f, ws, ws.text_mod, pool);
  embed_text(txt_feats, ws, ws.x.data(), pool);
  prefix.text_len = l;
  prefix.keys.resize(blocks_.size());
  prefix.values.resize(blocks_.size());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(static_cast<int>(i), ws, l, l, rope.txt_cos.data(), rope.txt_sin.data(), nullptr, nullptr, 0, &prefix.keys[i],
              &prefix.values[i], pool);
  }
}

void Dit::velocity(const Tensor& img_tokens, const TextPrefix& prefix, float t, const host::RopeTensors& rope,
                   DitWorkspace& ws, float* vel, ThreadPool& pool) const {
  const int64_t n = img_tokens.dim(0), dim = config_.dim();
  if (prefix.text_len != rope.text_len || prefix.keys.size() != blocks_.size()) {
    throw std::invalid_argument("DiT: the text prefix is for L " + std::to_string(prefix.text_len) + ", RoPE for L " +
                                std::to_string(rope.text_len));
  }
  ws.reserve(n, prefix.text_len + n, dim, dim * config_.mlp_ratio);
  modulation(t, ws, ws.image_mod, pool);
  embed_image(img_tokens, ws.x.data(), pool);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(static_cast<int>(i), ws, n, 0, rope.img_cos.data(), rope.img_sin.data(), prefix.keys[i].data(),
              prefix.values[i].data(), prefix.text_len, nullptr, nullptr, pool);
  }
  project_out(ws, 0, n, vel, pool);
}

Tensor Dit::velocity_full(const Tensor& img_tokens, const Tensor& txt_feats, float t, const host::RopeTensors& rope,
                          ThreadPool& pool) const {
  const int64_t n = img_tokens.dim(0), l = txt_feats.dim(0), dim = config_.dim();
  DitWorkspace ws;
  ws.reserve(l + n, l + n, dim, dim * config_.mlp_ratio);
  modulation(0.0f, ws, ws.text_mod, pool);
  modulation(t, ws, ws.image_mod, pool);
  embed_text(txt_feats, ws, ws.x.data(), pool);
  embed_image(img_tokens, ws.x.data() + l * dim, pool);
  std::vector<float> cos(rope.txt_cos), sin(rope.txt_sin);
  cos.insert(cos.end(), rope.img_cos.begin(), rope.img_cos.end());
  sin.insert(sin.end(), rope.img_sin.begin(), rope.img_sin.end());
  for (size_t i = 0; i < blocks_.size(); ++i) {
    run_block(static_cast<int>(i), ws, l + n, l, cos.data(), sin.data(), nullptr, nullptr, 0, nullptr, nullptr, pool);
  }
  Tensor vel = Tensor::zeros(DType::kF32, {n, 64});
  project_out(ws, l, n, vel.mutable_f32(), pool);
  return vel;
}

}  // namespace rgbaq::engine::cpu
