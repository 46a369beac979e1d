#include "engine/cuda/cuda_vae.h"

#include <algorithm>
#include <cmath>

#include "engine/cuda/attention.h"
#include "engine/cuda/attention_plan.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/workspace_plan.h"
#include "host/contract_limits.h"

namespace rgbaq::engine::cuda {
CudaVae::Conv CudaVae::upload_conv(WeightSource& source, const cpu::VaeDecoder::Conv& c, const std::string& what) {
  Conv d;
  d.out = c.out, d.in = c.in, d.k = c.k;
  d.weight = source.matrix(&c.weight, c.out, c.in * c.k * c.k, "VAE " + what);
  d.bias = source.vector(&c.bias, c.out, "VAE " + what, 0.0f);
  return d;
}

CudaVae::ResBlock CudaVae::upload_res(WeightSource& source, const cpu::VaeDecoder::ResBlock& r, const std::string& what) {
  ResBlock d;
  d.norm1 = source.vector(&r.norm1, static_cast<int64_t>(r.norm1.size()), "VAE " + what);
  d.norm2 = source.vector(&r.norm2, static_cast<int64_t>(r.norm2.size()), "VAE " + what);
  d.conv1 = upload_conv(source, r.conv1, what);
  d.conv2 = upload_conv(source, r.conv2, what);
  d.has_shortcut = r.has_shortcut;
  if (r.has_shortcut) d.shortcut = upload_conv(source, r.shortcut, what);
  return d;
}

namespace {

// dst[c, dst_y + y, dst_x + x] = src[c, src_y + y, src_x + x] for every channel, y < rows, x < cols:
// channel-major fp32 maps of src_height x src_width and dst_height x dst_width, one 3-D copy.
void copy_region(const float* src, int64_t src_height, int64_t src_width, int64_t src_y, int64_t src_x, float* dst,
                 int64_t dst_height, int64_t dst_width, int64_t dst_y, int64_t dst_x, int64_t channels, int64_t rows,
                 int64_t cols, cudaStream_t stream, int device) {
  const auto z = [](int64_t v) { return static_cast<size_t>(v); };
  cudaMemcpy3DParms p{};
  p.srcPtr = make_cudaPitchedPtr(const_cast<float*>(src), z(src_width) * sizeof(float), z(src_width), z(src_height));
  p.srcPos = make_cudaPos(z(src_x) * sizeof(float), z(src_y), 0);
  p.dstPtr = make_cudaPitchedPtr(dst, z(dst_width) * sizeof(float), z(dst_width), z(dst_height));
  p.dstPos = make_cudaPos(z(dst_x) * sizeof(float), z(dst_y), 0);
  p.extent = make_cudaExtent(z(cols) * sizeof(float), z(rows), z(channels));
  p.kind = cudaMemcpyDeviceToDevice;
  RGBAQ_CUDA_CHECK(cudaMemcpy3DAsync(&p, stream), device);
}

}  // namespace

CudaVae::CudaVae(const cpu::VaeDecoder& v, WeightSource& source, Gemm& gemm, cudaStream_t stream, bool tiles)
    : arena_(source.arena()), gemm_(gemm), stream_(stream), type_(source.type()), config_(v.config_) {
  // The latent statistics are the config's, not weights: as configured even with random weights.
  mean_ = source.constants(v.config_.latents_mean, "VAE latents_mean");
  std_ = source.constants(v.config_.latents_std, "VAE latents_std");
  post_quant_ = upload_conv(source, v.post_quant_, "post_quant_conv");
  conv_in_ = upload_conv(source, v.conv_in_, "conv_in");
  mid_0_ = upload_res(source, v.mid_0_, "mid_block.resnets.0");
  mid_1_ = upload_res(source, v.mid_1_, "mid_block.resnets.1");
  attn_norm_ = source.vector(&v.attn_norm_, static_cast<int64_t>(v.attn_norm_.size()), "VAE mid attention norm");
  attn_qkv_ = upload_conv(source, v.attn_qkv_, "mid attention to_qkv");
  attn_proj_ = upload_conv(source, v.attn_proj_, "mid attention proj");
  for (size_t i = 0; i < v.up_blocks_.size(); ++i) {
    const auto& b = v.up_blocks_[i];
    UpBlock d;
    for (size_t r = 0; r < b.resnets.size(); ++r) {
      d.resnets.push_back(upload_res(source, b.resnets[r], "up_blocks." + std::to_string(i) + ".resnets." + std::to_string(r)));
    }
    d.upsamples = b.upsamples;
    d.temporal_factor = b.temporal_factor;
    if (b.upsamples) d.upsample_conv = upload_conv(source, b.upsample_conv, "up_blocks." + std::to_string(i) + ".upsampler");
    up_blocks_.push_back(std::move(d));
  }
  norm_out_ = source.vector(&v.norm_out_, static_cast<int64_t>(v.norm_out_.size()), "VAE norm_out");
  conv_out_ = upload_conv(source, v.conv_out_, "conv_out");
  dims_ = v.dims_;
  // The plan the session's fit check counts (cuda_graphs.cpp: session_workspace_bytes at the largest render).
  session_plan_ = vae_session_plan(config_, static_cast<int64_t>(element_size(type_)), host::kMaxImageTokens, tiles);
}

VaeTilePlan CudaVae::plan(int64_t grid_height, int64_t grid_width) const {
  return vae_decode_plan(config_, session_plan_, grid_height, grid_width);
}

void CudaVae::reserve(int64_t grid_pixels) {
  // The bounding square's buffers hold those of every grid of no more latents (vae_session_plan).
  const int64_t side = vae_bounding_side(grid_pixels);
  ensure_maps(session_plan_.tiled() ? plan(side, side) : vae_untiled_plan(config_, 1, grid_pixels));
}

void CudaVae::ensure_maps(const VaeTilePlan& plan) {
  // The plan's buffers, in its order (workspace_plan.h), each grown only when this plan needs more. The
  // latents (fp32 [n, 64]) pass through tokens_ first, then the mid attention's [n, 3C] tokens.
  DeviceBuffer* buffers[] = {&x_, &h_, &sc_, &skip_, &t_, &col_, &tokens_, &scores_, &probs_, &level_, &image_};
  const int64_t e = static_cast<int64_t>(element_size(type_));
  const auto planned = vae_workspace(config_, e, plan);
  if (planned.size() != (plan.tiled() ? 11u : 9u)) throw std::logic_error("CudaVae: the workspace plan has another shape");
  for (size_t i = 0; i < planned.size(); ++i) arena_.ensure(*buffers[i], static_cast<size_t>(planned[i].bytes), planned[i].what);
  col_elements_ = static_cast<int64_t>(col_.bytes()) / e;
  const int64_t n = plan.grid_height * plan.grid_width;
  score_elements_ = attention_score_elements(1, n, n, kVaeScoreBudget);
}

void CudaVae::conv(const void* in, int64_t height, int64_t width, const Conv& c, float* out) {
  const int64_t pixels = height * width;
  fill_bias(out, c.bias.as<float>(), c.out, pixels, stream_);
  if (c.k == 1) {
    gemm_.run({c.out, pixels, c.in, c.in, pixels, pixels, false, 1, 0, 0, 0}, type_, c.weight.get(), in, out, 1.0f, 1.0f);
    return;
  }
  const int64_t taps = c.in * 9, columns = std::min(col_elements_, column_limit_);
  if (taps * width > columns) {
    // One row is wider than the strip (a very wide image: up to 32768 px): row by row, in windows of
    // whole multiples of 8 columns; each window's outputs are contiguous in its row of `out`.
    const int64_t window = columns / taps / 8 * 8;
    if (window < 8) throw std::logic_error("CudaVae: the im2col strip holds fewer than 8 columns of a 3x3 conv");
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x0 = 0; x0 < width; x0 += window) {
        const int64_t x1 = std::min(width, x0 + window), cols = x1 - x0;
        im2col3x3(in, type_, c.in, height, width, y, y + 1, x0, x1, col_.get(), stream_);
        gemm_.run({c.out, cols, taps, taps, cols, pixels, false, 1, 0, 0, 0}, type_, c.weight.get(), col_.get(),
                  out + y * width + x0, 1.0f, 1.0f);
      }
    }
    return;
  }
  const int64_t rows_per_strip = std::min(height, columns / (taps * width));
  for (int64_t y0 = 0; y0 < height; y0 += rows_per_strip) {
    const int64_t y1 = std::min(height, y0 + rows_per_strip), cols = (y1 - y0) * width;
    im2col3x3(in, type_, c.in, height, width, y0, y1, 0, width, col_.get(), stream_);
    gemm_.run({c.out, cols, taps, taps, cols, pixels, false, 1, 0, 0, 0}, type_, c.weight.get(), col_.get(), out + y0 * width,
              1.0f, 1.0f);
  }
}

void CudaVae::res_block(const ResBlock& r, int64_t height, int64_t width) {
  const int64_t pixels = height * width;
  const float* shortcut = x_.as<float>();
  if (r.has_shortcut) {
    convert(x_.as<float>(), r.conv1.in * pixels, t_.get(), type_, stream_);
    conv(t_.get(), height, width, r.shortcut, sc_.as<float>());
    shortcut = sc_.as<float>();
  }
  channel_rms_norm(x_.as<float>(), r.conv1.in, pixels, r.norm1.as<float>(), true, t_.get(), type_, stream_);
  conv(t_.get(), height, width, r.conv1, h_.as<float>());
  channel_rms_norm(h_.as<float>(), r.conv1.out, pixels, r.norm2.as<float>(), true, t_.get(), type_, stream_);
  conv(t_.get(), height, width, r.conv2, h_.as<float>());
  add(h_.as<float>(), shortcut, r.conv2.out * pixels, stream_);
  std::swap(x_, h_);
}

Tensor CudaVae::decode(const Tensor& latents, const VaeTilePlan& tile_plan) {
  const int64_t gh = tile_plan.grid_height, gw = tile_plan.grid_width, n = gh * gw;
  const int device = arena_.device();
  if (latents.shape() != Shape{n, 64} || tile_plan.up_blocks != static_cast<int>(up_blocks_.size())) {
    throw std::invalid_argument("CudaVae: latents " + shape_string(latents.shape()) + " for a plan of a " +
                                std::to_string(gh) + "x" + std::to_string(gw) + " grid over " +
                                std::to_string(tile_plan.up_blocks) + " up blocks");
  }
  ensure_maps(tile_plan);
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(tokens_.get(), latents.f32(), latents.nbytes(), cudaMemcpyHostToDevice, stream_), device);
  unpack_latents(tokens_.as<float>(), n, mean_.as<float>(), std_.as<float>(), h_.as<float>(), stream_);
  convert(h_.as<float>(), 64 * n, t_.get(), type_, stream_);
  conv(t_.get(), gh, gw, post_quant_, x_.as<float>());
  convert(x_.as<float>(), 64 * n, t_.get(), type_, stream_);
  conv(t_.get(), gh, gw, conv_in_, x_.as<float>());
  res_block(mid_0_, gh, gw);
  {  // the mid attention: one head over the pixels, C wide
    const int64_t c = dims_[0];
    channel_rms_norm(x_.as<float>(), c, n, attn_norm_.as<float>(), false, t_.get(), type_, stream_);
    conv(t_.get(), gh, gw, attn_qkv_, h_.as<float>());                 // [3C, n]
    transpose(h_.as<float>(), 3 * c, n, n, tokens_.get(), type_, stream_);  // [n, 3C]
    const int64_t e = static_cast<int64_t>(element_size(type_));
    AttentionArgs a;
    a.q = tokens_.get();
    a.k = static_cast<const char*>(tokens_.get()) + c * e;
    a.v = static_cast<const char*>(tokens_.get()) + 2 * c * e;
    a.out = sc_.as<float>();
    a.ldq = a.ldk = a.ldv = 3 * c, a.ldo = c;
    a.q_rows = a.kv_rows = n, a.causal_rows = 0;
    a.q_heads = a.kv_heads = 1, a.head_dim = static_cast<int>(c);
    a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c)));
    attention(gemm_, type_, a, {scores_.as<float>(), probs_.get(), score_elements_}, stream_);
    transpose(sc_.as<float>(), n, c, c, t_.get(), type_, stream_);  // back to [C, n]
    conv(t_.get(), gh, gw, attn_proj_, h_.as<float>());
    add(x_.as<float>(), h_.as<float>(), c * n, stream_);
  }
  res_block(mid_1_, gh, gw);
  int64_t height = gh, width = gw;
  const VaeTilePlan& p = tile_plan;
  run_up_blocks(0, static_cast<size_t>(p.first_tiled), height, width);
  if (!p.tiled()) {
    output(height, width);
    return clamped_to_host(h_.as<float>(), height, width);
  }
  // Tile by tile: each crop of the level map through the local rest of the decoder, its core kept.
  const int64_t level_channels = dims_[p.first_tiled], s = p.scale, out_height = height * s, out_width = width * s;
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(level_.get(), x_.get(), level_channels * height * width * sizeof(float),
                                   cudaMemcpyDeviceToDevice, stream_), device);
  for (const VaeTileSpan& row : p.rows)
    for (const VaeTileSpan& col : p.cols) {
      int64_t th = row.crop_end - row.crop_begin, tw = col.crop_end - col.crop_begin;
      copy_region(level_.as<float>(), height, width, row.crop_begin, col.crop_begin, x_.as<float>(), th, tw, 0, 0,
                  level_channels, th, tw, stream_, device);
      run_up_blocks(static_cast<size_t>(p.first_tiled), up_blocks_.size(), th, tw);
      output(th, tw);
      copy_region(h_.as<float>(), th, tw, (row.core_begin - row.crop_begin) * s, (col.core_begin - col.crop_begin) * s,
                  image_.as<float>(), out_height, out_width, row.core_begin * s, col.core_begin * s, 4,
                  (row.core_end - row.core_begin) * s, (col.core_end - col.core_begin) * s, stream_, device);
    }
  return clamped_to_host(image_.as<float>(), out_height, out_width);
}

Tensor CudaVae::clamped_to_host(float* image, int64_t height, int64_t width) {
  const int device = arena_.device();
  clamp_unit(image, 4 * height * width, stream_);
  check_launch(device, "the VAE's output kernels");
  Tensor out = Tensor::zeros(DType::kF32, {4, height, width});
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(out.mutable_f32(), image, out.nbytes(), cudaMemcpyDeviceToHost, stream_), device);
  RGBAQ_CUDA_CHECK(cudaStreamSynchronize(stream_), device);
  return out;
}

void CudaVae::run_up_blocks(size_t from, size_t to, int64_t& height, int64_t& width) {
  const int device = arena_.device();
  for (size_t i = from; i < to; ++i) {
    const UpBlock& b = up_blocks_[i];
    const int64_t in_channels = dims_[i];
    if (b.upsamples) {  // only an upsampling block adds its input back (DupUp3D), after its res blocks
      RGBAQ_CUDA_CHECK(cudaMemcpyAsync(skip_.get(), x_.get(), in_channels * height * width * sizeof(float),
                                       cudaMemcpyDeviceToDevice, stream_), device);
    }
    for (const ResBlock& r : b.resnets) res_block(r, height, width);
    if (b.upsamples) {
      const int64_t c = dims_[i + 1];
      upsample2x(x_.as<float>(), c, height, width, t_.get(), type_, stream_);
      conv(t_.get(), 2 * height, 2 * width, b.upsample_conv, h_.as<float>());
      add_dup_up(h_.as<float>(), c, 2 * height, 2 * width, skip_.as<float>(), in_channels, b.temporal_factor, stream_);
      std::swap(x_, h_);
      height *= 2, width *= 2;
    }
    check_launch(device, "a VAE up block's kernels");
  }
}

void CudaVae::output(int64_t height, int64_t width) {
  const int64_t pixels = height * width;
  channel_rms_norm(x_.as<float>(), dims_.back(), pixels, norm_out_.as<float>(), true, t_.get(), type_, stream_);
  conv(t_.get(), height, width, conv_out_, h_.as<float>());
}

}  // namespace rgbaq::engine::cuda
