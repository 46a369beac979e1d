#pragma once
// The VAE decoder on the GPU, any legal size: channel-major fp32 maps; convolutions as the session's
// GEMMs (3x3 through im2col over row strips, or windows of one row where a row is wider than a strip,
// so the column buffer stays bounded; 1x1 straight); the mid attention through attention.h; the norms, upsampling and DupUp3D as kernels. The maps are sized
// once per image size and reused. Tiled (EngineOptions::vae_tiles, engine/vae_tile_plan.h): every
// decode from one up block on goes tile by tile with the session's first tiled block and tile side, so
// the maps stay within workspace_plan.h's kVaeTiledBudget; the tiled path has never run on a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/gemm.h"
#include "engine/vae_tile_plan.h"

namespace rgbaq::engine::cuda {

class CudaVae {
 public:
  // The weights from `source`: vae's checked views, or random ones (the views then give only the shapes).
  // `tiles`: decode tile by tile where the plan of the largest render the contract allows tiles.
  CudaVae(const cpu::VaeDecoder& vae, WeightSource& source, Gemm& gemm, cudaStream_t stream, bool tiles = false);
  // latents [h w, 64] -> image [4, 16 h, 16 w] in [-1, 1].
  Tensor decode(const Tensor& latents, int grid_height, int grid_width) { return decode(latents, plan(grid_height, grid_width)); }
  // The same with a given plan (its grid the latents'), e.g. tiles forced small (the gpu tests).
  Tensor decode(const Tensor& latents, const VaeTilePlan& plan);
  // Allocates the feature maps of a decode of up to `grid_pixels` latents now (any grid of them); throws
  // a DeviceFault when they do not fit.
  void reserve(int64_t grid_pixels);
  // For the gpu tests: 3x3 convolutions use at most this many im2col elements, so rows wider than that
  // take the windowed path a very wide image takes.
  void limit_columns_for_tests(int64_t elements) { column_limit_ = elements; }
  // The plan a decode of this grid follows.
  VaeTilePlan plan(int64_t grid_height, int64_t grid_width) const;

 private:
  struct Conv {
    int64_t out = 0, in = 0, k = 1;
    DeviceBuffer weight, bias;
  };
  struct ResBlock {
    DeviceBuffer norm1, norm2;
    Conv conv1, conv2, shortcut;
    bool has_shortcut = false;
  };
  struct UpBlock {
    std::vector<ResBlock> resnets;
    bool upsamples = false;
    Conv upsample_conv;
    int temporal_factor = 1;
  };
  Conv upload_conv(WeightSource& source, const cpu::VaeDecoder::Conv& c, const std::string& what);
  ResBlock upload_res(WeightSource& source, const cpu::VaeDecoder::ResBlock& r, const std::string& what);
  void ensure_maps(const VaeTilePlan& plan);
  // Up blocks [from, to) over x_ of height x width, which they update.
  void run_up_blocks(size_t from, size_t to, int64_t& height, int64_t& width);
  // h_ = conv_out(SiLU(norm_out(x_))), [4, height, width].
  void output(int64_t height, int64_t width);
  // The image [4, height, width] on the device, clamped to [-1, 1], copied out.
  Tensor clamped_to_host(float* image, int64_t height, int64_t width);
  // out [c.out, pixels] = conv(in [c.in, H, W] in the GEMM type) + bias.
  void conv(const void* in, int64_t height, int64_t width, const Conv& c, float* out);
  // x = res(x) over [C, H, W]; returns the new channel count (x_ and h_ swap).
  void res_block(const ResBlock& r, int64_t height, int64_t width);

  DeviceArena& arena_;
  Gemm& gemm_;
  cudaStream_t stream_;
  ElementType type_;
  VaeConfig config_;  // its decoder dims size the maps (workspace_plan.h)
  int64_t z_dim_ = 64;
  DeviceBuffer mean_, std_;
  Conv post_quant_, conv_in_, conv_out_, attn_qkv_, attn_proj_;
  ResBlock mid_0_, mid_1_;
  DeviceBuffer attn_norm_, norm_out_;
  std::vector<UpBlock> up_blocks_;
  std::vector<int64_t> dims_;
  VaeTilePlan session_plan_;  // tiled: its first tiled block and tile side serve every decode
  // Maps sized for the largest stage of the plans seen; level_ and image_ only for tiled plans.
  DeviceBuffer x_, h_, sc_, skip_, t_, col_, tokens_, scores_, probs_, level_, image_;
  int64_t col_elements_ = 0, score_elements_ = 0;
  int64_t column_limit_ = INT64_MAX;  // limit_columns_for_tests
};

}  // namespace rgbaq::engine::cuda
