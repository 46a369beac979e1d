#pragma once
// AutoencoderKLQwenImage21's decoder in float64, written from diffusers' module definitions (direct
// convolution loops, F.normalize, the mid attention, and DupUp3D done literally as repeat_interleave ->
// view -> permute -> first-chunk slice), for tests to compare every backend's decoder against.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/weight_store.h"
#include "tests/engine/reference_math.h"

namespace rgbaq::testing {

struct FeatureMap {
  int64_t c, h, w;
  Vec v;
  double& at(int64_t ch, int64_t y, int64_t x) { return v[(ch * h + y) * w + x]; }
  double at(int64_t ch, int64_t y, int64_t x) const { return v[(ch * h + y) * w + x]; }
};

struct VaeReference {
  const engine::WeightStore& ws;
  Vec get(const std::string& n) const { return widen(ws.get(n).to_f32_vector()); }

  // A causal conv3d on one frame: only the last time tap of a 5-D weight sees data.
  FeatureMap conv(const FeatureMap& x, const std::string& name, int64_t out) const {
    const engine::Tensor wt = ws.get(name + ".weight");
    const Vec w = widen(wt.to_f32_vector()), b = get(name + ".bias");
    const int64_t kt = wt.rank() == 5 ? wt.dim(2) : 1, k = wt.dim(wt.rank() - 1), pad = (k - 1) / 2;
    FeatureMap y{out, x.h, x.w, Vec(static_cast<size_t>(out * x.h * x.w))};
    for (int64_t o = 0; o < out; ++o)
      for (int64_t yy = 0; yy < x.h; ++yy)
        for (int64_t xx = 0; xx < x.w; ++xx) {
          double s = b[o];
          for (int64_t i = 0; i < x.c; ++i)
            for (int64_t ky = 0; ky < k; ++ky)
              for (int64_t kx = 0; kx < k; ++kx) {
                const int64_t sy = yy + ky - pad, sx = xx + kx - pad;
                if (sy < 0 || sy >= x.h || sx < 0 || sx >= x.w) continue;
                s += w[(((o * x.c + i) * kt + kt - 1) * k + ky) * k + kx] * x.at(i, sy, sx);
              }
          y.at(o, yy, xx) = s;
        }
    return y;
  }

  FeatureMap norm(const FeatureMap& x, const std::string& gamma_name, bool then_silu) const {
    const Vec g = get(gamma_name);
    FeatureMap y = x;
    for (int64_t yy = 0; yy < x.h; ++yy)
      for (int64_t xx = 0; xx < x.w; ++xx) {
        double n2 = 0;
        for (int64_t c = 0; c < x.c; ++c) n2 += x.at(c, yy, xx) * x.at(c, yy, xx);
        const double denom = std::max(std::sqrt(n2), 1e-12);
        for (int64_t c = 0; c < x.c; ++c) {
          const double v = x.at(c, yy, xx) / denom * std::sqrt(double(x.c)) * g[c];
          y.at(c, yy, xx) = then_silu ? silu(v) : v;
        }
      }
    return y;
  }

  FeatureMap resnet(const FeatureMap& x, const std::string& p, int64_t out) const {
    const FeatureMap shortcut = x.c != out ? conv(x, p + ".conv_shortcut", out) : x;
    FeatureMap h = conv(norm(x, p + ".norm1.gamma", true), p + ".conv1", out);
    h = conv(norm(h, p + ".norm2.gamma", true), p + ".conv2", out);
    for (size_t i = 0; i < h.v.size(); ++i) h.v[i] += shortcut.v[i];
    return h;
  }

  FeatureMap attention(const FeatureMap& x) const {
    const std::string p = "decoder.mid_block.attentions.0.";
    const FeatureMap qkv = conv(norm(x, p + "norm.gamma", false), p + "to_qkv", 3 * x.c);
    const int64_t n = x.h * x.w, c = x.c;
    Vec q(static_cast<size_t>(n * c)), k(q.size()), v(q.size());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t ch = 0; ch < c; ++ch) {
        q[t * c + ch] = qkv.v[ch * n + t];
        k[t * c + ch] = qkv.v[(c + ch) * n + t];
        v[t * c + ch] = qkv.v[(2 * c + ch) * n + t];
      }
    const Vec a = testing::attention(q, k, v, n, n, 1, 1, static_cast<int>(c), 0, 1 / std::sqrt(double(c)));
    FeatureMap att{c, x.h, x.w, Vec(x.v.size())};
    for (int64_t t = 0; t < n; ++t)
      for (int64_t ch = 0; ch < c; ++ch) att.v[ch * n + t] = a[t * c + ch];
    FeatureMap y = conv(att, p + "proj", c);
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += x.v[i];
    return y;
  }

  // DupUp3D(in, out, factor_t, factor_s = 2) on a one-frame input, first_chunk = True.
  static FeatureMap dup_up(const FeatureMap& x, int64_t out, int64_t ft) {
    const int64_t fs = 2, factor = ft * fs * fs, repeats = out * factor / x.c;
    // repeat_interleave over channels: channel j of the result is channel j / repeats of x.
    // view [out, ft, fs, fs, T=1, H, W]; permute (out, T, ft, H, fs, W, fs); reshape [out, T*ft, 2H, 2W];
    // keep frames ft-1 onwards (one frame).
    FeatureMap y{out, x.h * 2, x.w * 2, Vec(static_cast<size_t>(out * x.h * x.w * 4))};
    for (int64_t o = 0; o < out; ++o)
      for (int64_t t = 0; t < ft; ++t)
        for (int64_t a = 0; a < fs; ++a)
          for (int64_t b = 0; b < fs; ++b)
            for (int64_t hh = 0; hh < x.h; ++hh)
              for (int64_t ww = 0; ww < x.w; ++ww) {
                const int64_t j = ((o * ft + t) * fs + a) * fs + b;  // index in the viewed channel axis
                if (t != ft - 1) continue;                         // the first-chunk slice
                y.at(o, hh * fs + a, ww * fs + b) = x.at(j / repeats, hh, ww);
              }
    return y;
  }

  Vec decode(const std::vector<float>& latents, int64_t h, int64_t w, const engine::VaeConfig& c) const {
    FeatureMap x{64, h, w, Vec(static_cast<size_t>(64 * h * w))};
    for (int64_t t = 0; t < h * w; ++t)
      for (int64_t ch = 0; ch < 64; ++ch) x.v[ch * h * w + t] = latents[t * 64 + ch] * double(c.latents_std[ch]) + c.latents_mean[ch];
    x = conv(x, "post_quant_conv", 64);
    std::vector<int64_t> dims = {int64_t{c.decoder_base_dim} * c.dim_mult.back()};
    for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(int64_t{c.decoder_base_dim} * *it);
    x = conv(x, "decoder.conv_in", dims[0]);
    x = resnet(x, "decoder.mid_block.resnets.0", dims[0]);
    x = attention(x);
    x = resnet(x, "decoder.mid_block.resnets.1", dims[0]);
    const std::vector<bool> temporal_up(c.temporal_downsample.rbegin(), c.temporal_downsample.rend());
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      const std::string p = "decoder.up_blocks." + std::to_string(i) + ".";
      const FeatureMap skip = x;
      for (int r = 0; r <= c.num_res_blocks; ++r) x = resnet(x, p + "resnets." + std::to_string(r), dims[i + 1]);
      if (i + 1 < c.dim_mult.size()) {
        FeatureMap up{x.c, x.h * 2, x.w * 2, Vec(x.v.size() * 4)};
        for (int64_t ch = 0; ch < x.c; ++ch)
          for (int64_t yy = 0; yy < up.h; ++yy)
            for (int64_t xx = 0; xx < up.w; ++xx) up.at(ch, yy, xx) = x.at(ch, yy / 2, xx / 2);
        x = conv(up, p + "upsampler.resample.1", dims[i + 1]);
        const FeatureMap shortcut = dup_up(skip, dims[i + 1], temporal_up[i] ? 2 : 1);
        for (size_t k = 0; k < x.v.size(); ++k) x.v[k] += shortcut.v[k];
      }
    }
    x = conv(norm(x, "decoder.norm_out.gamma", true), "decoder.conv_out", 4);
    for (double& v : x.v) v = std::clamp(v, -1.0, 1.0);
    return x.v;
  }
};

}  // namespace rgbaq::testing
