#include "engine/cpu/vae_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/cpu/attention.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/linear.h"
#include "engine/cpu/vector_exp.h"

namespace rgbaq::engine::cpu {
namespace {

using Conv = VaeDecoder::Conv;

}  // namespace

// Storage for feature maps, kept across decodes: a decode asks for the same sequence of maps every
// time, so after the first call at a size every map is served from here without the allocator.
class VaeDecoder::MapBuffers {
 public:
  std::vector<float> take(size_t n) {
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {  // the smallest that fits, else the largest
      const size_t cap = free_[i].capacity();
      if (best == free_.size()) {
        best = i;
        continue;
      }
      const size_t best_cap = free_[best].capacity();
      if ((cap >= n && (best_cap < n || cap < best_cap)) || (best_cap < n && cap > best_cap)) best = i;
    }
    std::vector<float> v;
    if (best < free_.size()) {
      v = std::move(free_[best]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    }
    v.resize(n);
    return v;
  }
  void give(std::vector<float>&& v) {
    if (v.capacity() > 0) free_.push_back(std::move(v));
  }

 private:
  std::vector<std::vector<float>> free_;
};

namespace {

using MapBuffers = VaeDecoder::MapBuffers;

// What every step needs: the threads and the map storage.
struct Ctx {
  ThreadPool& pool;
  MapBuffers& buffers;
};

// A feature map: channel-major [c, h, w], its storage borrowed from the decoder's MapBuffers.
struct Map {
  int64_t c = 0, h = 0, w = 0;
  std::vector<float> v;
  MapBuffers* owner = nullptr;
  Map(Ctx& ctx, int64_t c_, int64_t h_, int64_t w_)
      : c(c_), h(h_), w(w_), v(ctx.buffers.take(static_cast<size_t>(c_ * h_ * w_))), owner(&ctx.buffers) {}
  Map(Map&& o) noexcept : c(o.c), h(o.h), w(o.w), v(std::move(o.v)), owner(o.owner) {}
  Map& operator=(Map&& o) noexcept {
    if (this != &o) {
      release();
      c = o.c, h = o.h, w = o.w, v = std::move(o.v), owner = o.owner;
    }
    return *this;
  }
  Map(const Map&) = delete;
  Map& operator=(const Map&) = delete;
  ~Map() { release(); }
  int64_t pixels() const { return h * w; }

 private:
  void release() {
    if (owner) owner->give(std::move(v));
    v = {};
  }
};

Conv load_conv(const WeightStore& ws, const std::string& name, int64_t out, int64_t in, int64_t k) {
  Conv c;
  c.out = out, c.in = in, c.k = k;
  Tensor w = ws.get(name + ".weight");
  const Shape& s = w.shape();
  const bool five_d = s.size() == 5 && s[0] == out && s[1] == in && s[2] >= 1 && s[3] == k && s[4] == k;
  const bool four_d = s == Shape{out, in, k, k};
  if (!five_d && !four_d) {
    throw std::runtime_error(ws.directory().string() + ": tensor \"" + name + ".weight\" has shape " + shape_string(s) +
                             ", expected " + shape_string({out, in, k, k}) + " or [" + std::to_string(out) + ", " +
                             std::to_string(in) + ", kt, " + std::to_string(k) + ", " + std::to_string(k) + "]");
  }
  const std::vector<float> all = w.to_f32_vector();
  const int64_t kt = five_d ? s[2] : 1, taps = k * k;
  c.weight.resize(static_cast<size_t>(out * in * taps));
  for (int64_t o = 0; o < out; ++o)
    for (int64_t i = 0; i < in; ++i)
      for (int64_t t = 0; t < taps; ++t)  // the last time tap: the only one that sees the frame
        c.weight[(o * in + i) * taps + t] = all[((o * in + i) * kt + (kt - 1)) * taps + t];
  c.bias = ws.require(name + ".bias", {out}).to_f32_vector();
  return c;
}

std::vector<float> load_gamma(const WeightStore& ws, const std::string& name, int64_t c) {
  Tensor g = ws.get(name);
  if (g.numel() != c || g.dim(0) != c) {
    throw std::runtime_error(ws.directory().string() + ": tensor \"" + name + "\" has shape " + shape_string(g.shape()) +
                             ", expected " + std::to_string(c) + " values");
  }
  return g.to_f32_vector();
}

VaeDecoder::ResBlock load_resblock(const WeightStore& ws, const std::string& p, int64_t in, int64_t out) {
  VaeDecoder::ResBlock r;
  r.norm1 = load_gamma(ws, p + ".norm1.gamma", in);
  r.conv1 = load_conv(ws, p + ".conv1", out, in, 3);
  r.norm2 = load_gamma(ws, p + ".norm2.gamma", out);
  r.conv2 = load_conv(ws, p + ".conv2", out, out, 3);
  r.has_shortcut = in != out;
  if (r.has_shortcut) r.shortcut = load_conv(ws, p + ".conv_shortcut", out, in, 1);
  return r;
}

// im2col floats per task: about 1 MiB, so a strip's columns stay in cache between im2col and sgemm.
constexpr int64_t kStripFloats = 256 * 1024;
// ...but at least this many columns: sgemm packs the whole weight (up to 1152 x 10368 at the real dims'
// low resolutions) on every call, which thin strips would repeat for a few columns each.
constexpr int64_t kMinStripCols = 256;
// Small maps give fewer strips than this many tasks; the output channels are then split too (a fixed
// rule, so results do not depend on the thread count).
constexpr int64_t kMinConvTasks = 4;

// out = conv(x) + bias (+ residual, which has out's shape), zero padding (k - 1) / 2.
Map conv2d(const Map& x, const Conv& c, Ctx& ctx, const Map* residual = nullptr) {
  if (x.c != c.in) throw std::logic_error("conv2d: channel mismatch");
  Map y(ctx, c.out, x.h, x.w);
  ThreadPool& pool = ctx.pool;
  const int64_t pixels = x.pixels();
  const int64_t rows_per_strip =
      c.k == 1 ? std::max<int64_t>(1, 8192 / x.w)
               : std::max({int64_t{1}, kStripFloats / (c.in * c.k * c.k * x.w), (kMinStripCols + x.w - 1) / x.w});
  const int64_t strips = (x.h + rows_per_strip - 1) / rows_per_strip, taps = c.k * c.k, pad = (c.k - 1) / 2;
  const int64_t out_chunks = std::clamp<int64_t>((kMinConvTasks + strips - 1) / strips, 1, std::max<int64_t>(1, c.out / 32));
  const int64_t out_per_chunk = (c.out + out_chunks - 1) / out_chunks;
  pool.run(strips * out_chunks, [&](int64_t task) {
    const int64_t strip = task / out_chunks, o_begin = (task % out_chunks) * out_per_chunk;
    const int64_t o_end = std::min(c.out, o_begin + out_per_chunk);
    const int64_t y0 = strip * rows_per_strip, y1 = std::min(x.h, y0 + rows_per_strip), cols = (y1 - y0) * x.w;
    const float* b;
    int64_t ldb;
    thread_local std::vector<float> col;
    if (c.k == 1) {
      b = x.v.data() + y0 * x.w;
      ldb = pixels;
    } else {
      col.resize(static_cast<size_t>(c.in * taps * cols));
      for (int64_t i = 0; i < c.in; ++i)
        for (int64_t ky = 0; ky < c.k; ++ky)
          for (int64_t kx = 0; kx < c.k; ++kx) {
            float* dst = col.data() + ((i * taps) + ky * c.k + kx) * cols;
            for (int64_t yy = y0; yy < y1; ++yy) {
              const int64_t sy = yy + ky - pad;
              float* row = dst + (yy - y0) * x.w;
              if (sy < 0 || sy >= x.h) {
                std::fill(row, row + x.w, 0.0f);
                continue;
              }
              // row[xx] = src[xx + dx] where that is inside the map, else 0.
              const float* src = x.v.data() + (i * x.h + sy) * x.w;
              const int64_t dx = kx - pad, lo = std::max<int64_t>(0, -dx), hi = std::min(x.w, x.w - dx);
              std::fill(row, row + lo, 0.0f);
              std::memcpy(row + lo, src + lo + dx, sizeof(float) * static_cast<size_t>(hi - lo));
              std::fill(row + hi, row + x.w, 0.0f);
            }
          }
      b = col.data();
      ldb = cols;
    }
    float* out = y.v.data() + y0 * x.w;
    for (int64_t o = o_begin; o < o_end; ++o) {
      float* row = out + o * pixels;
      if (residual) {
        const float* r = residual->v.data() + o * pixels + y0 * x.w;
        for (int64_t i = 0; i < cols; ++i) row[i] = r[i] + c.bias[o];
      } else {
        std::fill(row, row + cols, c.bias[o]);
      }
    }
    sgemm_nn(o_end - o_begin, cols, c.in * taps, c.weight.data() + o_begin * c.in * taps, c.in * taps, b, ldb,
             out + o_begin * pixels, pixels, true);
  });
  return y;
}

constexpr int64_t kNormPixels = 1024;

// Pixels [p0, p1) of channel_rms_norm: sums of squares in double, then scale, gamma and SiLU.
void channel_rms_norm_pixels(const Map& x, const std::vector<float>& gamma, bool then_silu, Map& y, int64_t p0,
                             int64_t p1, std::vector<double>& sums) {
  const int64_t pixels = x.pixels();
  const float root_c = static_cast<float>(std::sqrt(static_cast<double>(x.c)));
  sums.assign(static_cast<size_t>(p1 - p0), 0.0);
  for (int64_t c = 0; c < x.c; ++c) {
    const float* row = x.v.data() + c * pixels;
    for (int64_t p = p0; p < p1; ++p) sums[p - p0] += static_cast<double>(row[p]) * row[p];
  }
  for (int64_t c = 0; c < x.c; ++c) {
    const float* row = x.v.data() + c * pixels;
    float* out = y.v.data() + c * pixels;
    for (int64_t p = p0; p < p1; ++p) {
      const float scale = math::channel_rms_scale(sums[p - p0], root_c);
      const float v = row[p] * scale * gamma[c];
      out[p] = then_silu ? silu(v) : v;
    }
  }
}

#if RGBAQ_HAVE_AVX2_PATH
// The same with AVX2: the sums stay double (four lanes), SiLU's exp is exp8.
RGBAQ_AVX2_FMA void channel_rms_norm_pixels_avx2(const Map& x, const std::vector<float>& gamma, bool then_silu, Map& y,
                                                 int64_t p0, int64_t p1, std::vector<double>& sums) {
  const int64_t pixels = x.pixels(), n = p1 - p0, vector_end = p0 + n / 8 * 8;
  const float root_c = static_cast<float>(std::sqrt(static_cast<double>(x.c)));
  sums.assign(static_cast<size_t>(n), 0.0);
  double* sum = sums.data();
  for (int64_t c = 0; c < x.c; ++c) {
    const float* row = x.v.data() + c * pixels;
    int64_t p = p0;
    for (; p < vector_end; p += 8) {
      const __m256 v = _mm256_loadu_ps(row + p);
      const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v)), hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
      double* s = sum + (p - p0);
      _mm256_storeu_pd(s, _mm256_fmadd_pd(lo, lo, _mm256_loadu_pd(s)));
      _mm256_storeu_pd(s + 4, _mm256_fmadd_pd(hi, hi, _mm256_loadu_pd(s + 4)));
    }
    for (; p < p1; ++p) sum[p - p0] += static_cast<double>(row[p]) * row[p];
  }
  // sums now hold each pixel's scale, as floats in the first half.
  float* scale = reinterpret_cast<float*>(sum);
  for (int64_t i = 0; i < n; ++i) scale[i] = math::channel_rms_scale(sum[i], root_c);
  for (int64_t c = 0; c < x.c; ++c) {
    const float* row = x.v.data() + c * pixels;
    float* out = y.v.data() + c * pixels;
    const __m256 g = _mm256_set1_ps(gamma[c]);
    int64_t p = p0;
    for (; p < vector_end; p += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(row + p), _mm256_loadu_ps(scale + (p - p0))), g);
      _mm256_storeu_ps(out + p, then_silu ? silu8(v) : v);
    }
    for (; p < p1; ++p) {
      const float v = row[p] * scale[p - p0] * gamma[c];
      out[p] = then_silu ? silu_fast(v) : v;
    }
  }
}
#endif

// RMS_norm over channels: x / max(||x||, 1e-12) * sqrt(C) * gamma, per pixel; then SiLU when asked.
Map channel_rms_norm(const Map& x, const std::vector<float>& gamma, bool then_silu, Ctx& ctx) {
  Map y(ctx, x.c, x.h, x.w);
  ctx.pool.parallel_for(x.pixels(), kNormPixels, [&](int64_t begin, int64_t end) {
    thread_local std::vector<double> sums;
    for (int64_t p0 = begin; p0 < end; p0 += kNormPixels) {  // a block's channels stay in L2 for the second pass
      const int64_t p1 = std::min(end, p0 + kNormPixels);
#if RGBAQ_HAVE_AVX2_PATH
      if (avx2_fma_available()) {
        channel_rms_norm_pixels_avx2(x, gamma, then_silu, y, p0, p1, sums);
        continue;
      }
#endif
      channel_rms_norm_pixels(x, gamma, then_silu, y, p0, p1, sums);
    }
  });
  return y;
}

Map res_block(const Map& x, const VaeDecoder::ResBlock& r, Ctx& ctx) {
  Map h = conv2d(channel_rms_norm(x, r.norm1, true, ctx), r.conv1, ctx);
  if (!r.has_shortcut) return conv2d(channel_rms_norm(h, r.norm2, true, ctx), r.conv2, ctx, &x);
  const Map shortcut = conv2d(x, r.shortcut, ctx);
  return conv2d(channel_rms_norm(h, r.norm2, true, ctx), r.conv2, ctx, &shortcut);
}

Map upsample_nearest_2x(const Map& x, Ctx& ctx) {
  Map y(ctx, x.c, x.h * 2, x.w * 2);
  ctx.pool.parallel_for(x.c, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t yy = 0; yy < y.h; ++yy) {
        const float* src = x.v.data() + (c * x.h + yy / 2) * x.w;
        float* dst = y.v.data() + (c * y.h + yy) * y.w;
        for (int64_t xx = 0; xx < y.w; ++xx) dst[xx] = src[xx / 2];
      }
  });
  return y;
}

// DupUp3D for the first frame: out(o, Y, X) = src[c' / r, Y/2, X/2] with
// c' = ((o * ft + ft - 1) * 2 + Y % 2) * 2 + X % 2 and r = out * ft * 4 / in.
void add_dup_up(Map& y, const Map& x, int temporal_factor, ThreadPool& pool) {
  const int64_t ft = temporal_factor, repeats = y.c * ft * 4 / x.c;
  pool.parallel_for(y.c, 1, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      for (int64_t yy = 0; yy < y.h; ++yy) {  // even X reads channel c_even, odd X the next
        const int64_t c_even = ((o * ft + ft - 1) * 2 + yy % 2) * 2;
        const float* even = x.v.data() + ((c_even / repeats) * x.h + yy / 2) * x.w;
        const float* odd = x.v.data() + (((c_even + 1) / repeats) * x.h + yy / 2) * x.w;
        float* row = y.v.data() + (o * y.h + yy) * y.w;
        for (int64_t xx = 0; xx < x.w; ++xx) {
          row[2 * xx] += even[xx];
          row[2 * xx + 1] += odd[xx];
        }
      }
  });
}

// Up blocks [from, to) over x.
Map run_up_blocks(Map x, const std::vector<VaeDecoder::UpBlock>& blocks, size_t from, size_t to, Ctx& ctx) {
  for (size_t i = from; i < to; ++i) {
    const VaeDecoder::UpBlock& b = blocks[i];
    const Map skip = std::move(x);
    const Map* in = &skip;
    for (const VaeDecoder::ResBlock& r : b.resnets) {
      x = res_block(*in, r, ctx);
      in = &x;
    }
    if (b.upsamples) {
      x = conv2d(upsample_nearest_2x(x, ctx), b.upsample_conv, ctx);
      add_dup_up(x, skip, b.temporal_factor, ctx.pool);
    }
  }
  return x;
}

// Channels [c, h0:h1, w0:w1] of x.
Map crop(const Map& x, int64_t h0, int64_t h1, int64_t w0, int64_t w1, Ctx& ctx) {
  Map y(ctx, x.c, h1 - h0, w1 - w0);
  for (int64_t c = 0; c < x.c; ++c)
    for (int64_t yy = h0; yy < h1; ++yy)
      std::memcpy(y.v.data() + (c * y.h + yy - h0) * y.w, x.v.data() + (c * x.h + yy) * x.w + w0,
                  sizeof(float) * static_cast<size_t>(y.w));
  return y;
}

}  // namespace

VaeDecoder::VaeDecoder(const WeightStore& ws, const VaeConfig& c, int64_t map_budget)
    : config_(c), map_budget_(map_budget), buffers_(std::make_unique<MapBuffers>()) {
  dims_ = vae_decoder_dims(c);
  post_quant_ = load_conv(ws, "post_quant_conv", c.z_dim, c.z_dim, 1);
  conv_in_ = load_conv(ws, "decoder.conv_in", dims_[0], c.z_dim, 3);
  mid_0_ = load_resblock(ws, "decoder.mid_block.resnets.0", dims_[0], dims_[0]);
  mid_1_ = load_resblock(ws, "decoder.mid_block.resnets.1", dims_[0], dims_[0]);
  attn_norm_ = load_gamma(ws, "decoder.mid_block.attentions.0.norm.gamma", dims_[0]);
  attn_qkv_ = load_conv(ws, "decoder.mid_block.attentions.0.to_qkv", 3 * dims_[0], dims_[0], 1);
  attn_proj_ = load_conv(ws, "decoder.mid_block.attentions.0.proj", dims_[0], dims_[0], 1);
  const std::vector<bool> temporal_up(c.temporal_downsample.rbegin(), c.temporal_downsample.rend());
  for (size_t i = 0; i + 1 < dims_.size(); ++i) {
    const std::string p = "decoder.up_blocks." + std::to_string(i) + ".";
    UpBlock b;
    int64_t in = dims_[i];
    for (int r = 0; r <= c.num_res_blocks; ++r, in = dims_[i + 1]) {
      b.resnets.push_back(load_resblock(ws, p + "resnets." + std::to_string(r), in, dims_[i + 1]));
    }
    b.upsamples = i + 1 < c.dim_mult.size();
    if (b.upsamples) {
      b.upsample_conv = load_conv(ws, p + "upsampler.resample.1", dims_[i + 1], dims_[i + 1], 3);
      b.temporal_factor = temporal_up[i] ? 2 : 1;
      if (dims_[i + 1] * b.temporal_factor * 4 % dims_[i] != 0) {
        throw std::runtime_error(ws.directory().string() + ": up block " + std::to_string(i) +
                                 " channels do not divide for DupUp3D");
      }
    }
    up_blocks_.push_back(std::move(b));
  }
  norm_out_ = load_gamma(ws, "decoder.norm_out.gamma", dims_.back());
  conv_out_ = load_conv(ws, "decoder.conv_out", c.out_channels, dims_.back(), 3);
  if (c.out_channels != 4) throw std::runtime_error(ws.directory().string() + ": out_channels must be 4 (RGBA)");
}

VaeDecoder::~VaeDecoder() = default;

int64_t VaeDecoder::map_bytes(const VaeConfig& c, const VaeTilePlan& p) {
  int64_t floats = 6 * std::max(vae_whole_map_elements(c, p), vae_tile_map_elements(c, p));
  if (p.tiled()) {
    const int64_t level = p.level_height * p.level_width;
    floats += vae_decoder_dims(c)[p.first_tiled] * level + int64_t{c.out_channels} * level * p.scale * p.scale;
  }
  return 4 * floats;
}

VaeTilePlan VaeDecoder::plan(const VaeConfig& c, int64_t grid_height, int64_t grid_width, int64_t map_budget) {
  return plan_vae_tiles(
      c, grid_height, grid_width, [&](const VaeTilePlan& p) { return map_bytes(c, p); }, map_budget);
}

Tensor VaeDecoder::decode(const Tensor& latents, int grid_height, int grid_width, ThreadPool& pool) const {
  return decode(latents, plan(config_, grid_height, grid_width, map_budget_), pool);
}

Tensor VaeDecoder::decode(const Tensor& latents, const VaeTilePlan& plan, ThreadPool& pool) const {
  const int64_t h = plan.grid_height, w = plan.grid_width, n = h * w;
  if (latents.shape() != Shape{n, 64}) {
    throw std::invalid_argument("VAE: latents " + shape_string(latents.shape()) + " for a " + std::to_string(h) + "x" +
                                std::to_string(w) + " grid");
  }
  if (plan.up_blocks != static_cast<int>(up_blocks_.size())) {
    throw std::invalid_argument("VAE: a tile plan for " + std::to_string(plan.up_blocks) + " up blocks, the decoder has " +
                                std::to_string(up_blocks_.size()));
  }
  const std::lock_guard<std::mutex> lock(buffers_mutex_);  // one decode at a time uses the buffers
  Ctx ctx{pool, *buffers_};
  // Unpack tokens to [64, h, w] and undo the latent normalisation.
  Map x(ctx, 64, h, w);
  const float* z = latents.f32();
  for (int64_t c = 0; c < 64; ++c)
    for (int64_t t = 0; t < n; ++t) x.v[c * n + t] = z[t * 64 + c] * config_.latents_std[c] + config_.latents_mean[c];
  x = conv2d(x, post_quant_, ctx);
  x = conv2d(x, conv_in_, ctx);

  x = res_block(x, mid_0_, ctx);
  {  // the mid attention: one head over the h*w pixels, C wide
    const int64_t c = x.c, pixels = x.pixels();
    Map tokens(ctx, pixels, 3, c), out(ctx, pixels, 1, c);  // token-major [pixels, 3C] and [pixels, C]
    {
      const Map qkv = conv2d(channel_rms_norm(x, attn_norm_, false, ctx), attn_qkv_, ctx);
      for (int64_t ch = 0; ch < 3 * c; ++ch)
        for (int64_t p = 0; p < pixels; ++p) tokens.v[p * 3 * c + ch] = qkv.v[ch * pixels + p];
    }
    AttentionShape s;
    s.q_rows = s.kv_rows = pixels;
    s.q_heads = s.kv_heads = 1;
    s.head_dim = static_cast<int>(c);
    s.q_stride = s.k_stride = s.v_stride = 3 * c;
    s.out_stride = c;
    s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c)));
    attention(tokens.v.data(), tokens.v.data() + c, tokens.v.data() + 2 * c, out.v.data(), s, pool);
    Map attended(ctx, c, x.h, x.w);
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < pixels; ++p) attended.v[ch * pixels + p] = out.v[p * c + ch];
    x = conv2d(attended, attn_proj_, ctx, &x);
  }
  x = res_block(x, mid_1_, ctx);

  const size_t first_tiled = static_cast<size_t>(plan.first_tiled);
  x = run_up_blocks(std::move(x), up_blocks_, 0, first_tiled, ctx);
  if (!plan.tiled()) {
    x = conv2d(channel_rms_norm(x, norm_out_, true, ctx), conv_out_, ctx);
    Tensor image = Tensor::zeros(DType::kF32, {4, x.h, x.w});
    float* out = image.mutable_f32();
    for (size_t i = 0; i < x.v.size(); ++i) out[i] = std::clamp(x.v[i], -1.0f, 1.0f);
    return image;
  }
  // Tile by tile: each crop through the local rest of the decoder, its core's output kept.
  const int64_t s = plan.scale, height = x.h * s, width = x.w * s;
  Tensor image = Tensor::zeros(DType::kF32, {4, height, width});
  float* out = image.mutable_f32();
  for (const VaeTileSpan& row : plan.rows)
    for (const VaeTileSpan& col : plan.cols) {
      Map t = crop(x, row.crop_begin, row.crop_end, col.crop_begin, col.crop_end, ctx);
      t = run_up_blocks(std::move(t), up_blocks_, first_tiled, up_blocks_.size(), ctx);
      t = conv2d(channel_rms_norm(t, norm_out_, true, ctx), conv_out_, ctx);
      const int64_t dy = (row.core_begin - row.crop_begin) * s, dx = (col.core_begin - col.crop_begin) * s;
      const int64_t core_w = (col.core_end - col.core_begin) * s;
      for (int64_t c = 0; c < 4; ++c)
        for (int64_t yy = row.core_begin * s; yy < row.core_end * s; ++yy) {
          const float* src = t.v.data() + (c * t.h + yy - row.core_begin * s + dy) * t.w + dx;
          float* dst = out + (c * height + yy) * width + col.core_begin * s;
          for (int64_t i = 0; i < core_w; ++i) dst[i] = std::clamp(src[i], -1.0f, 1.0f);
        }
    }
  return image;
}

}  // namespace rgbaq::engine::cpu

namespace rgbaq::engine::cpu {

double VaeDecoder::flops(int grid_height, int grid_width) const {
  double total = 0, pixels = double(grid_height) * grid_width;
  auto conv = [&](const Conv& c) { total += 2.0 * c.out * c.in * c.k * c.k * pixels; };
  auto res = [&](const ResBlock& r) {
    conv(r.conv1);
    conv(r.conv2);
    if (r.has_shortcut) conv(r.shortcut);
  };
  conv(post_quant_);
  conv(conv_in_);
  res(mid_0_);
  conv(attn_qkv_);
  conv(attn_proj_);
  total += 4.0 * pixels * pixels * dims_[0];  // QK^T and PV
  res(mid_1_);
  for (const UpBlock& b : up_blocks_) {
    for (const ResBlock& r : b.resnets) res(r);
    if (b.upsamples) {
      pixels *= 4;
      conv(b.upsample_conv);
    }
  }
  conv(conv_out_);
  return total;
}

}  // namespace rgbaq::engine::cpu
