#pragma once
// The DiT's velocity graph on the GPU, with the CPU backend's split: begin_image runs txt_in and every
// block over the L text rows once and keeps each block's text keys and values on the device; each step
// runs the N image rows, attending to those plus their own. fp32 residual stream; GEMMs in the session's
// type through cuBLASLt, each Linear in its format (LinearRunner: dense, int8 kept, fp8 for the
// blocks'); the workspace is sized once per (L, N) and reused. Blocks are resident, or streamed from
// pinned host memory (BlockStreamer) in their format when the weights do not fit. Never run on a GPU yet.
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <vector>

#include "engine/cpu/dit.h"
#include "engine/cuda/attention.h"
#include "engine/cuda/block_streamer.h"
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/gemm.h"
#include "engine/lora.h"
#include "host/rope.h"

namespace rgbaq::engine::cuda {

class CudaDit {
 public:
  // The weights from `source`: dit's checked views (the CPU object only lends them; it may be dropped
  // after), or random ones (their formats from dit's views, or dense when dit is null; blocks resident).
  // `fused_attention`: flash_attention.h's kernel instead of attention.h's GEMMs (bf16 only).
  // `fused_blocks` (--fused-blocks): each block's to_q|to_k|to_v and gate|up stacked into one Linear
  // each at open (any format, resident or streamed; refused when a stack mixes formats) and run as one
  // GEMM over chunks of kDitChunkRows rows, and each gated residual and the norm after it one pass
  // (kernels.h's gated_residual_norm).
  CudaDit(const DitConfig& config, const cpu::Dit* dit, WeightSource& source, LinearRunner& linears, cudaStream_t stream,
          bool stream_blocks, bool fused_attention = false, bool fused_blocks = false);

  void begin_image(const Tensor& txt_feats, const host::RopeTensors& rope);
  // vel [N, 64] into `vel` (host); waits for the device.
  void step(const Tensor& img_tokens, float t, float* vel);
  void end_image();
  // The LoRA adapters applied from the next begin_image on, unmerged: each adapter's A/B go up once (in
  // the GEMM type) and stay while recent sets use them; no weight is rewritten.
  void set_loras(const LoraSet& set);

  // Allocates the workspaces of an image of `image_tokens` with a text of `text_tokens` now (see
  // Graphs::reserve); throws a DeviceFault when they do not fit.
  void reserve(int64_t text_tokens, int64_t image_tokens);

  bool streams_blocks() const { return streamer_ != nullptr; }

 private:
  struct Block {
    std::vector<DeviceLinear> linears;  // resident: to_q, to_k, to_v, to_out, gate, proj, out (fused: stacks in to_q, gate)
    std::vector<LinearFormat> formats;  // each linear's, resident or streamed
    std::vector<int> first_part;        // streamed: each linear's first part in the block's parts
    std::vector<int> groups;            // streamed: each ConvRot linear's group (0 for the others)
    DeviceBuffer norm_q, norm_k;
  };
  // The scales a norm of the rows applies (layer_norm_modulate's): text below text_rows, else image.
  struct RowScales {
    const float* text;
    const float* image;
    int64_t text_rows;
  };
  void modulation(float t, float* out);
  void ensure_workspace(int64_t text_rows, int64_t image_rows);
  // h_ = the norm of x_'s first `rows` rows with `scales`.
  void norm_rows(int64_t rows, const RowScales& scales);
  // One block over `rows` rows of x_ (see cpu::Dit::run_block); prefix K/V of block i prepended when
  // prefix_rows > 0, this block's text K/V stored when `store`. Fused blocks: h_ comes normed, and the
  // block leaves the norm of its output with `next` in h_ (when given).
  void run_block(int i, int64_t rows, int64_t text_rows, const float* cos, const float* sin, int64_t prefix_rows, bool store,
                 const RowScales* next);
  void run_blocks(int64_t rows, int64_t text_rows, const float* cos, const float* sin, int64_t prefix_rows, bool store,
                  const RowScales* after);
  LinearView linear(int block, int which, const std::vector<const void*>* streamed) const;
  // y[rows, stacked out] = x W^T plus the LoRA terms of Linears index .. index + stacked - 1
  // (dit_linear_index order), each in its `out` columns; x in the GEMM type.
  void project(int index, const void* x, int64_t rows, const LinearView& w, int64_t out, int64_t in, float* y, int stacked = 1);

  // One adapter's matrices on the device, by module (LoraModule addresses stay valid: `adapter` holds them).
  struct DeviceLora {
    std::shared_ptr<const LoraAdapter> adapter;
    std::map<const LoraModule*, std::pair<DeviceBuffer, DeviceBuffer>> modules;  // down, up
  };
  struct DeviceLoraTerm {
    const void* down = nullptr;
    const void* up = nullptr;
    int64_t rank = 0;
    float scale = 0;
  };
  std::map<const LoraAdapter*, DeviceLora> lora_uploads_;
  std::vector<std::vector<DeviceLoraTerm>> lora_terms_;  // per Linear
  DeviceBuffer lora_mid_, lora_mid_t_;                   // x A^T: fp32 and in the GEMM type

  DitConfig config_;
  DeviceArena& arena_;
  LinearRunner& linears_;
  Gemm& gemm_;  // linears_'s, for the LoRA terms (always in the GEMM type)
  cudaStream_t stream_;
  ElementType type_;
  size_t esize_;
  bool fused_attention_ = false, fused_blocks_ = false;
  DeviceLinear img_in_, txt_in_, txt_out_, time_1_, time_2_, modulation_, norm_out_, proj_out_;
  DeviceBuffer text_norm_;
  std::vector<Block> blocks_;
  std::unique_ptr<BlockStreamer> streamer_;
  const std::vector<const void*>* streamed_ = nullptr;  // the current block's parts when streaming

  // Per image: RoPE on the device, the text modulation, the prefix K/V [layers, L, dim] each.
  int64_t text_len_ = 0, image_tokens_ = 0;
  DeviceBuffer txt_cos_, txt_sin_, img_cos_, img_sin_, text_mod_, image_mod_, prefix_k_, prefix_v_;
  // The time embedding's buffers and its host staging.
  DeviceBuffer emb_f32_, emb_, hidden_, hidden_t_, temb_, temb_t_;
  PinnedBuffer emb_host_;
  // The workspace, grown to the largest text and image rows seen.
  int64_t ws_text_ = 0, ws_image_ = 0;
  DeviceBuffer x_, h_, qf_, q_, k_, v_, attn_, attn_t_, delta_, gate_, up_, mlp_t_, scores_, probs_, tokens_, txt_, vel_;
  int64_t score_elements_ = 0;
};

}  // namespace rgbaq::engine::cuda
