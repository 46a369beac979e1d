#include "engine/cpu/text_encoder.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/cpu/attention.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/linear.h"
#include "engine/model/weight_schema.h"

namespace rgbaq::engine::cpu {

TextEncoder::TextEncoder(const WeightStore& weights, const TextEncoderConfig& config) : config_(config) {
  const std::string p = text_encoder_prefix(weights);
  const int64_t h = config.hidden, d = config.head_dim, q_dim = int64_t{config.heads} * d, kv_dim = int64_t{config.kv_heads} * d;
  embed_ = weights.require(p + "embed_tokens.weight", {config.vocab, h});
  for (int i = 0; i < config.layers; ++i) {
    const std::string l = p + "layers." + std::to_string(i) + ".";
    Layer layer;
    layer.input_norm = weights.require(l + "input_layernorm.weight", {h}).to_f32_vector();
    layer.post_norm = weights.require(l + "post_attention_layernorm.weight", {h}).to_f32_vector();
    layer.q_norm = weights.require(l + "self_attn.q_norm.weight", {d}).to_f32_vector();
    layer.k_norm = weights.require(l + "self_attn.k_norm.weight", {d}).to_f32_vector();
    layer.q = weights.require(l + "self_attn.q_proj.weight", {q_dim, h});
    layer.k = weights.require(l + "self_attn.k_proj.weight", {kv_dim, h});
    layer.v = weights.require(l + "self_attn.v_proj.weight", {kv_dim, h});
    layer.o = weights.require(l + "self_attn.o_proj.weight", {h, q_dim});
    layer.gate = weights.require(l + "mlp.gate_proj.weight", {config.intermediate, h});
    layer.up = weights.require(l + "mlp.up_proj.weight", {config.intermediate, h});
    layer.down = weights.require(l + "mlp.down_proj.weight", {h, config.intermediate});
    layers_.push_back(std::move(layer));
  }
}

void rotate_half_rope_tables(int64_t n, const TextEncoderConfig& config, std::vector<float>& cos, std::vector<float>& sin) {
  // The halves of each head share one angle per pair.
  const int half = config.head_dim / 2;
  const double d = config.head_dim;
  cos.resize(static_cast<size_t>(n * half));
  sin.resize(cos.size());
  for (int j = 0; j < half; ++j) {
    const float exponent = static_cast<float>(2 * j) / static_cast<float>(d);
    const float inv_freq = 1.0f / static_cast<float>(std::pow(config.rope_theta, static_cast<double>(exponent)));
    for (int64_t i = 0; i < n; ++i) {
      const double angle = static_cast<float>(static_cast<float>(i) * inv_freq);
      cos[static_cast<size_t>(i * half + j)] = static_cast<float>(std::cos(angle));
      sin[static_cast<size_t>(i * half + j)] = static_cast<float>(std::sin(angle));
    }
  }
}

Tensor TextEncoder::encode(std::span<const int32_t> ids, ThreadPool& pool) const {
  const int64_t n = static_cast<int64_t>(ids.size()), h = config_.hidden, d = config_.head_dim;
  const int64_t q_dim = int64_t{config_.heads} * d, kv_dim = int64_t{config_.kv_heads} * d, inter = config_.intermediate;
  const float eps = static_cast<float>(config_.rms_eps);
  Tensor out = Tensor::zeros(DType::kF32, {n, h});
  float* x = out.mutable_f32();
  const size_t row_bytes = static_cast<size_t>(h) * dtype_size(embed_.dtype());
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= config_.vocab) {
      throw std::invalid_argument("token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                  " is outside the encoder's vocabulary of " + std::to_string(config_.vocab));
    }
    to_f32(embed_.dtype(), static_cast<const uint8_t*>(embed_.data()) + ids[i] * row_bytes, x + i * h, static_cast<size_t>(h));
  }

  std::vector<float> cos, sin;
  rotate_half_rope_tables(n, config_, cos, sin);

  std::vector<float> normed(static_cast<size_t>(n * h)), q(static_cast<size_t>(n * q_dim)), k(static_cast<size_t>(n * kv_dim)),
      v(k.size()), attn(q.size()), gate(static_cast<size_t>(n * inter)), up(gate.size()), delta(normed.size());
  AttentionShape shape;
  shape.q_rows = shape.kv_rows = shape.causal_rows = n;
  shape.q_heads = config_.heads;
  shape.kv_heads = config_.kv_heads;
  shape.head_dim = static_cast<int>(d);
  shape.q_stride = shape.out_stride = q_dim;
  shape.k_stride = shape.v_stride = kv_dim;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));

  auto add = [&](const std::vector<float>& y) {
    pool.parallel_for(n * h, 1 << 14, [&](int64_t a, int64_t b) {
      for (int64_t i = a; i < b; ++i) x[i] += y[static_cast<size_t>(i)];
    });
  };
  ConvRotRows packed;  // a ConvRot encoder's shared input rows, rotated and quantized once per use
  for (const Layer& layer : layers_) {
    rms_norm(x, n, h, layer.input_norm.data(), 0.0f, eps, normed.data(), pool);
    SharedInput attn_in(normed.data(), n, h, packed, pool);
    attn_in.linear(layer.q, q.data(), q_dim);
    attn_in.linear(layer.k, k.data(), kv_dim);
    attn_in.linear(layer.v, v.data(), kv_dim);
    rms_norm(q.data(), n * config_.heads, d, layer.q_norm.data(), 0.0f, eps, q.data(), pool);
    rms_norm(k.data(), n * config_.kv_heads, d, layer.k_norm.data(), 0.0f, eps, k.data(), pool);
    rope_rotate_half(q.data(), n, q_dim, config_.heads, static_cast<int>(d), cos.data(), sin.data(), pool);
    rope_rotate_half(k.data(), n, kv_dim, config_.kv_heads, static_cast<int>(d), cos.data(), sin.data(), pool);
    attention(q.data(), k.data(), v.data(), attn.data(), shape, pool);
    linear(attn.data(), n, layer.o, delta.data(), pool);
    add(delta);
    rms_norm(x, n, h, layer.post_norm.data(), 0.0f, eps, normed.data(), pool);
    SharedInput mlp_in(normed.data(), n, h, packed, pool);
    mlp_in.linear(layer.gate, gate.data(), inter);
    mlp_in.linear(layer.up, up.data(), inter);
    swiglu(gate.data(), up.data(), n * inter, pool);
    linear(gate.data(), n, layer.down, delta.data(), pool);
    add(delta);
  }
  return out;
}

}  // namespace rgbaq::engine::cpu
