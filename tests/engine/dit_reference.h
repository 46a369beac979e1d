#pragma once
// QwenImage21's forward in float64, written from the model's definition (not from the engine's code):
// all L + N rows with the block-causal mask, for tests to compare every backend's velocity against.
#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "engine/model/model_config.h"
#include "engine/model/weight_store.h"
#include "host/rope.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/w8a8_reference.h"

namespace rgbaq::testing {

struct DitReference {
  const engine::WeightStore& w;
  const engine::DitConfig& c;
  // Added to the named weights (LoRA tests merge W + scale B A here).
  const std::map<std::string, Vec>* deltas = nullptr;
  // The named Linears computed as ConvRot W8A8 from these weights (their deltas, a LoRA's, from the
  // unrotated input, added after).
  const std::map<std::string, ConvRotWeight>* w8a8 = nullptr;
  Vec get(const std::string& name) const {
    Vec v = widen(w.get(name).to_f32_vector());
    if (deltas && deltas->count(name)) {
      const Vec& d = deltas->at(name);
      for (size_t i = 0; i < v.size(); ++i) v[i] += d[i];
    }
    return v;
  }

  // x [rows, in] through Linear `name` [out, in].
  Vec linear(const Vec& x, int64_t rows, int64_t in, const std::string& name, int64_t out) const {
    if (!w8a8 || !w8a8->count(name)) return matmul_nt(x, rows, in, get(name), out);
    Vec y = w8a8_linear(x, rows, w8a8->at(name));
    if (deltas && deltas->count(name)) {
      const Vec d = matmul_nt(x, rows, in, deltas->at(name), out);
      for (size_t i = 0; i < y.size(); ++i) y[i] += d[i];
    }
    return y;
  }

  // [scale1 | gate1 | scale2 | gate2] and the final scale, for timestep t.
  std::pair<Vec, Vec> modulation(double t) const {
    const int64_t dim = c.dim();
    Vec emb(256);
    for (int k = 0; k < 128; ++k) {
      const double arg = 1000 * t * std::exp(-std::log(10000.0) * k / 128);
      emb[k] = std::cos(arg);
      emb[k + 128] = std::sin(arg);
    }
    Vec h = linear(emb, 1, 256, "time_text_embed.timestep_embedder.linear_1.weight", dim);
    for (double& v : h) v = silu(v);
    Vec temb = linear(h, 1, dim, "time_text_embed.timestep_embedder.linear_2.weight", dim);
    for (double& v : temb) v = silu(v);
    return {linear(temb, 1, dim, "modulation.1.weight", 4 * dim),
            linear(temb, 1, dim, "norm_out.linear.weight", dim)};
  }

  Vec velocity(const std::vector<float>& img, const std::vector<float>& txt, int64_t l, int64_t n, double t,
               const host::RopeTensors& rope) const {
    const int64_t dim = c.dim(), rows = l + n, hd = c.head_dim, heads = c.heads, mlp = dim * c.mlp_ratio;
    const Vec text_mod = modulation(0.0).first;
    const auto [image_mod, image_final] = modulation(t);
    // Embed: text through txt_in, image through img_in, in the order [text | image].
    Vec tn = rms_norm(widen(txt), l, c.context_dim, get("txt_in.text_norm.weight"), 1.0, c.eps);
    Vec th = linear(tn, l, c.context_dim, "txt_in.in_layer.weight", dim);
    for (double& v : th) v = gelu_tanh(v);
    Vec x = linear(th, l, dim, "txt_in.out_layer.weight", dim);
    const Vec xi = linear(widen(img), n, 64, "img_in.weight", dim);
    x.insert(x.end(), xi.begin(), xi.end());
    auto modv = [&](int64_t r, int64_t part, int64_t i) { return (r < l ? text_mod : image_mod)[part * dim + i]; };
    auto cos_of = [&](int64_t r, int64_t j) { return r < l ? rope.txt_cos[r * 64 + j] : rope.img_cos[(r - l) * 64 + j]; };
    auto sin_of = [&](int64_t r, int64_t j) { return r < l ? rope.txt_sin[r * 64 + j] : rope.img_sin[(r - l) * 64 + j]; };
    for (int b = 0; b < c.layers; ++b) {
      const std::string p = "transformer_blocks." + std::to_string(b) + ".";
      Vec h = layer_norm(x, rows, dim, c.eps);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1 + modv(r, 0, i);
      Vec q = linear(h, rows, dim, p + "attn.to_q.weight", dim);
      Vec k = linear(h, rows, dim, p + "attn.to_k.weight", dim);
      const Vec v = linear(h, rows, dim, p + "attn.to_v.weight", dim);
      q = rms_norm(q, rows * heads, hd, get(p + "attn.norm_q.weight"), 0, c.eps);
      k = rms_norm(k, rows * heads, hd, get(p + "attn.norm_k.weight"), 0, c.eps);
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
      const Vec att = attention(q, k, v, rows, rows, static_cast<int>(heads), static_cast<int>(heads),
                                         static_cast<int>(hd), l, 1 / std::sqrt(double(hd)));
      const Vec o = linear(att, rows, dim, p + "attn.to_out.0.weight", dim);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += std::tanh(modv(r, 1, i)) * o[r * dim + i];
      h = layer_norm(x, rows, dim, c.eps);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) h[r * dim + i] *= 1 + modv(r, 2, i);
      Vec g = linear(h, rows, dim, p + "img_mlp.gate_layer.weight", mlp);
      const Vec u = linear(h, rows, dim, p + "img_mlp.proj.weight", mlp);
      for (size_t i = 0; i < g.size(); ++i) g[i] = silu(g[i]) * u[i];
      const Vec f = linear(g, rows, mlp, p + "img_mlp.out.weight", dim);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < dim; ++i) x[r * dim + i] += std::tanh(modv(r, 3, i)) * f[r * dim + i];
    }
    Vec img_rows(x.begin() + l * dim, x.end());
    Vec hn = layer_norm(img_rows, n, dim, c.eps);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < dim; ++i) hn[r * dim + i] *= 1 + image_final[i];
    return linear(hn, n, dim, "proj_out.weight", 64);
  }
};

}  // namespace rgbaq::testing
