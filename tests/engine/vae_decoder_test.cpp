// The VAE decoder on the tiny checkpoint against a float64 naive implementation written from
// diffusers' module definitions (direct convolution loops, F.normalize, the mid attention, and DupUp3D
// done literally as repeat_interleave -> view -> permute -> first-chunk slice), on a non-square grid
// and the smallest legal N; 5-D and 4-D conv weights.
#include "engine/cpu/vae_decoder.h"

#include <gtest/gtest.h>

#include <iostream>

#include "engine/safetensors.h"
#include "tests/engine/reference_math.h"
#include "tests/engine/tiny_model_fixture.h"

namespace rgbaq::engine::cpu {
namespace {

using testing::Vec;

struct Map {
  int64_t c, h, w;
  Vec v;
  double& at(int64_t ch, int64_t y, int64_t x) { return v[(ch * h + y) * w + x]; }
  double at(int64_t ch, int64_t y, int64_t x) const { return v[(ch * h + y) * w + x]; }
};

struct Reference {
  const WeightStore& ws;
  Vec get(const std::string& n) const { return testing::widen(ws.get(n).to_f32_vector()); }

  // A causal conv3d on one frame: only the last time tap of a 5-D weight sees data.
  Map conv(const Map& x, const std::string& name, int64_t out) const {
    const Tensor wt = ws.get(name + ".weight");
    const Vec w = testing::widen(wt.to_f32_vector()), b = get(name + ".bias");
    const int64_t kt = wt.rank() == 5 ? wt.dim(2) : 1, k = wt.dim(wt.rank() - 1), pad = (k - 1) / 2;
    Map y{out, x.h, x.w, Vec(static_cast<size_t>(out * x.h * x.w))};
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

  Map norm(const Map& x, const std::string& gamma_name, bool silu) const {
    const Vec g = get(gamma_name);
    Map y = x;
    for (int64_t yy = 0; yy < x.h; ++yy)
      for (int64_t xx = 0; xx < x.w; ++xx) {
        double n2 = 0;
        for (int64_t c = 0; c < x.c; ++c) n2 += x.at(c, yy, xx) * x.at(c, yy, xx);
        const double denom = std::max(std::sqrt(n2), 1e-12);
        for (int64_t c = 0; c < x.c; ++c) {
          const double v = x.at(c, yy, xx) / denom * std::sqrt(double(x.c)) * g[c];
          y.at(c, yy, xx) = silu ? testing::silu(v) : v;
        }
      }
    return y;
  }

  Map resnet(const Map& x, const std::string& p, int64_t out) const {
    const Map shortcut = x.c != out ? conv(x, p + ".conv_shortcut", out) : x;
    Map h = conv(norm(x, p + ".norm1.gamma", true), p + ".conv1", out);
    h = conv(norm(h, p + ".norm2.gamma", true), p + ".conv2", out);
    for (size_t i = 0; i < h.v.size(); ++i) h.v[i] += shortcut.v[i];
    return h;
  }

  Map attention(const Map& x) const {
    const std::string p = "decoder.mid_block.attentions.0.";
    const Map qkv = conv(norm(x, p + "norm.gamma", false), p + "to_qkv", 3 * x.c);
    const int64_t n = x.h * x.w, c = x.c;
    Vec q(static_cast<size_t>(n * c)), k(q.size()), v(q.size());
    for (int64_t t = 0; t < n; ++t)
      for (int64_t ch = 0; ch < c; ++ch) {
        q[t * c + ch] = qkv.v[ch * n + t];
        k[t * c + ch] = qkv.v[(c + ch) * n + t];
        v[t * c + ch] = qkv.v[(2 * c + ch) * n + t];
      }
    const Vec a = testing::attention(q, k, v, n, n, 1, 1, static_cast<int>(c), 0, 1 / std::sqrt(double(c)));
    Map att{c, x.h, x.w, Vec(x.v.size())};
    for (int64_t t = 0; t < n; ++t)
      for (int64_t ch = 0; ch < c; ++ch) att.v[ch * n + t] = a[t * c + ch];
    Map y = conv(att, p + "proj", c);
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += x.v[i];
    return y;
  }

  // DupUp3D(in, out, factor_t, factor_s = 2) on a one-frame input, first_chunk = True.
  static Map dup_up(const Map& x, int64_t out, int64_t ft) {
    const int64_t fs = 2, factor = ft * fs * fs, repeats = out * factor / x.c;
    // repeat_interleave over channels: channel j of the result is channel j / repeats of x.
    // view [out, ft, fs, fs, T=1, H, W]; permute (out, T, ft, H, fs, W, fs); reshape [out, T*ft, 2H, 2W];
    // keep frames ft-1 onwards (one frame).
    Map y{out, x.h * 2, x.w * 2, Vec(static_cast<size_t>(out * x.h * x.w * 4))};
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

  Vec decode(const std::vector<float>& latents, int64_t h, int64_t w, const VaeConfig& c) const {
    Map x{64, h, w, Vec(static_cast<size_t>(64 * h * w))};
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
      const Map skip = x;
      for (int r = 0; r <= c.num_res_blocks; ++r) x = resnet(x, p + "resnets." + std::to_string(r), dims[i + 1]);
      if (i + 1 < c.dim_mult.size()) {
        Map up{x.c, x.h * 2, x.w * 2, Vec(x.v.size() * 4)};
        for (int64_t ch = 0; ch < x.c; ++ch)
          for (int64_t yy = 0; yy < up.h; ++yy)
            for (int64_t xx = 0; xx < up.w; ++xx) up.at(ch, yy, xx) = x.at(ch, yy / 2, xx / 2);
        x = conv(up, p + "upsampler.resample.1", dims[i + 1]);
        const Map shortcut = dup_up(skip, dims[i + 1], temporal_up[i] ? 2 : 1);
        for (size_t k = 0; k < x.v.size(); ++k) x.v[k] += shortcut.v[k];
      }
    }
    x = conv(norm(x, "decoder.norm_out.gamma", true), "decoder.conv_out", 4);
    for (double& v : x.v) v = std::clamp(v, -1.0, 1.0);
    return x.v;
  }
};

void expect_matches(const std::filesystem::path& vae_dir, int h, int w) {
  const auto weights = WeightStore::open(vae_dir);
  const auto config = load_vae_config(vae_dir / "config.json");
  const VaeDecoder vae(weights, config);
  ThreadPool pool(2);
  const auto latents = testing::random_floats(static_cast<size_t>(h * w * 64), 21, 1.5f);
  const Tensor image = vae.decode(Tensor::from_f32({h * w, 64}, latents), h, w, pool);
  ASSERT_EQ(image.shape(), (Shape{4, 16 * h, 16 * w}));
  const Vec want = Reference{weights}.decode(latents, h, w, config);
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

TEST(VaeDecoder, MatchesFloat64ReferenceNonSquare) {
  const TinyModel model(DType::kBF16);
  expect_matches(model.dir() / "vae", 8, 12);  // 128 x 192 px
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
