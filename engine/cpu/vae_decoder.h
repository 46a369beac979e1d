#pragma once
// AutoencoderKLQwenImage21's decoder on the CPU, for one frame: latents [N, 64] -> image [4, H, W] in
// [-1, 1], for any h x w grid. Causal 3-D convolutions see a single frame through their last time tap
// only, so 5-D weights [out, in, kt, kh, kw] are used as w[:, :, kt - 1]; 4-D weights as they are.
// Activations are channel-major [C, H, W]; 3x3 convolutions run as im2col + sgemm over row strips, so
// the scratch stays small at any size. A decode whose maps would pass the decoder's map budget goes
// tile by tile from an up block on (engine/vae_tile_plan.h), with the same result up to summation order.
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/cpu/thread_pool.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor.h"
#include "engine/vae_tile_plan.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine::cpu {

// The feature maps' bytes above which a decode is tiled: the tiny model and small images stay untiled.
inline constexpr int64_t kVaeMapBudget = int64_t{1} << 30;

class VaeDecoder {
 public:
  VaeDecoder(const WeightStore& weights, const VaeConfig& config, int64_t map_budget = kVaeMapBudget);
  ~VaeDecoder();

  // latents [h * w, 64] (token n = y * w + x) -> [4, 16h, 16w], planned by plan() at the decoder's map
  // budget. Feature maps come from buffers kept across calls (no allocation after the first decode at a
  // size); calls are serialised.
  Tensor decode(const Tensor& latents, int grid_height, int grid_width, ThreadPool& pool) const;
  // The same with a given plan (its grid the latents'), e.g. tiles forced small.
  Tensor decode(const Tensor& latents, const VaeTilePlan& plan, ThreadPool& pool) const;

  // The feature maps a decode planned so holds at its peak, as this decoder allocates them: about six
  // fp32 maps of its largest stage (a res block's input, normed input, conv output, shortcut, output and
  // the up block's input), plus, tiled, the map the tiles crop from and the image.
  static int64_t map_bytes(const VaeConfig& config, const VaeTilePlan& plan);
  // The plan whose map_bytes fit `map_budget` with the least repeated work (untiled when it fits).
  static VaeTilePlan plan(const VaeConfig& config, int64_t grid_height, int64_t grid_width, int64_t map_budget);

  // Multiply-adds x 2 of the convolutions and the mid attention for one decode (for benchmarks).
  double flops(int grid_height, int grid_width) const;

  struct Conv {
    int64_t out = 0, in = 0, k = 1;  // k x k spatial kernel
    std::vector<float> weight;       // [out, in * k * k]
    std::vector<float> bias;         // [out]
  };
  struct ResBlock {
    std::vector<float> norm1, norm2;
    Conv conv1, conv2;
    bool has_shortcut = false;
    Conv shortcut;
  };
  struct UpBlock {
    std::vector<ResBlock> resnets;
    bool upsamples = false;
    Conv upsample_conv;
    int temporal_factor = 1;  // DupUp3D's factor_t
  };
  class MapBuffers;

 // The checked, widened weights: read by the cuda backend, which uploads them (engine/cuda/cuda_vae.cpp).
  VaeConfig config_;
  Conv post_quant_, conv_in_, conv_out_;
  ResBlock mid_0_, mid_1_;
  std::vector<float> attn_norm_;
  Conv attn_qkv_, attn_proj_;
  std::vector<UpBlock> up_blocks_;
  std::vector<float> norm_out_;
  std::vector<int64_t> dims_;
  int64_t map_budget_;
  std::unique_ptr<MapBuffers> buffers_;
  mutable std::mutex buffers_mutex_;
};

}  // namespace rgbaq::engine::cpu
