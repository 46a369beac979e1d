#pragma once
// The Qwen3 text stack in float64, written from the model's definition (not from the engine's code),
// for tests to compare every backend's encoder against.
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weight_store.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::testing {

// The Qwen3 text stack in float64, straight from the definition.
inline Vec reference_encode(const engine::WeightStore& w, const engine::TextEncoderConfig& c, const std::vector<int32_t>& ids) {
  const std::string p = "model.language_model.";
  const int64_t n = static_cast<int64_t>(ids.size()), h = c.hidden, d = c.head_dim;
  auto get = [&](const std::string& name) { return widen(w.get(p + name).to_f32_vector()); };
  const Vec embed = get("embed_tokens.weight");
  Vec x(static_cast<size_t>(n * h));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < h; ++j) x[i * h + j] = embed[ids[i] * h + j];
  auto rope = [&](Vec& t, int heads) {
    for (int64_t i = 0; i < n; ++i)
      for (int hh = 0; hh < heads; ++hh)
        for (int64_t j = 0; j < d / 2; ++j) {
          const double angle = i * std::pow(c.rope_theta, -2.0 * j / d);
          double& a = t[(i * heads + hh) * d + j];
          double& b = t[(i * heads + hh) * d + j + d / 2];
          const double a0 = a, b0 = b;
          a = a0 * std::cos(angle) - b0 * std::sin(angle);
          b = b0 * std::cos(angle) + a0 * std::sin(angle);
        }
  };
  for (int layer = 0; layer < c.layers; ++layer) {
    const std::string l = "layers." + std::to_string(layer) + ".";
    Vec hn = rms_norm(x, n, h, get(l + "input_layernorm.weight"), 0, c.rms_eps);
    Vec q = matmul_nt(hn, n, h, get(l + "self_attn.q_proj.weight"), c.heads * d);
    Vec k = matmul_nt(hn, n, h, get(l + "self_attn.k_proj.weight"), c.kv_heads * d);
    Vec v = matmul_nt(hn, n, h, get(l + "self_attn.v_proj.weight"), c.kv_heads * d);
    q = rms_norm(q, n * c.heads, d, get(l + "self_attn.q_norm.weight"), 0, c.rms_eps);
    k = rms_norm(k, n * c.kv_heads, d, get(l + "self_attn.k_norm.weight"), 0, c.rms_eps);
    rope(q, c.heads);
    rope(k, c.kv_heads);
    const Vec a = attention(q, k, v, n, n, c.heads, c.kv_heads, static_cast<int>(d), n, 1 / std::sqrt(double(d)));
    const Vec o = matmul_nt(a, n, c.heads * d, get(l + "self_attn.o_proj.weight"), h);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    hn = rms_norm(x, n, h, get(l + "post_attention_layernorm.weight"), 0, c.rms_eps);
    Vec g = matmul_nt(hn, n, h, get(l + "mlp.gate_proj.weight"), c.intermediate);
    const Vec u = matmul_nt(hn, n, h, get(l + "mlp.up_proj.weight"), c.intermediate);
    for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
    const Vec down = matmul_nt(g, n, c.intermediate, get(l + "mlp.down_proj.weight"), h);
    for (size_t i = 0; i < x.size(); ++i) x[i] += down[i];
  }
  return x;
}

}  // namespace rgbaq::testing
