#pragma once
// QwenImage21Transformer2DModel on the CPU: the contract's velocity graph.
//
// Text rows never attend to image rows and are modulated at t = 0, so they are the same at every step.
// The text part (txt_in, then every block over the L text rows) runs once per image and keeps each
// block's text keys and values (TextPrefix); each step then runs the N image rows only, attending to
// the cached text keys plus their own. velocity_full() is the plain recompute of all L + N rows with
// the block-causal mask, kept to prove the two agree.
#include <vector>

#include "engine/cpu/linear.h"
#include "engine/cpu/thread_pool.h"
#include "engine/lora.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor.h"
#include "engine/model/weight_store.h"
#include "host/rope.h"

namespace rgbaq::engine::cpu {

struct TextPrefix {
  int64_t text_len = 0;
  std::vector<std::vector<float>> keys, values;  // per block: [L, dim], post norm and RoPE
};

// Per-row modulation: [scale1 | gate1 | scale2 | gate2] (4 * dim, gates through tanh) and the final scale.
struct DitModulation {
  std::vector<float> blocks, final_scale;
};

// The buffers a forward works in. They grow to the largest rows seen and are then reused, so the
// steps of an image (same N, same L) allocate nothing.
struct DitWorkspace {
  std::vector<float> x, h, q, k, v, attn, delta, up, gate;
  std::vector<float> emb, hidden, temb;  // the time embedding's
  DitModulation text_mod, image_mod;
  ConvRotRows packed;  // a ConvRot DiT's shared input rows (q/k/v, gate/proj), rotated and quantized once
  void reserve(int64_t rows, int64_t keys, int64_t dim, int64_t mlp);
};

class Dit {
 public:
  // Checks every tensor's presence and shape; throws naming the file and tensor.
  Dit(const WeightStore& weights, const DitConfig& config);

  // Fills `prefix` (its storage reused when it already holds one of the same L).
  void text_prefix(const Tensor& txt_feats, const host::RopeTensors& rope, DitWorkspace& ws, TextPrefix& prefix,
                   ThreadPool& pool) const;
  // vel [N, 64] for the image tokens at timestep t, into `vel` (N * 64 floats).
  void velocity(const Tensor& img_tokens, const TextPrefix& prefix, float t, const host::RopeTensors& rope,
                DitWorkspace& ws, float* vel, ThreadPool& pool) const;
  // The same result computed over all L + N rows at once, without the prefix cache (tests).
  Tensor velocity_full(const Tensor& img_tokens, const Tensor& txt_feats, float t, const host::RopeTensors& rope,
                       ThreadPool& pool) const;

  const DitConfig& config() const { return config_; }
  // The LoRA adapters every later forward applies, unmerged (empty: none). Kept alive by the Dit.
  void set_loras(const LoraSet& set);

  // The checked weights, for a backend that uploads them (engine/cuda).
  struct Block {
    Tensor to_q, to_k, to_v, to_out, proj, gate, out;
    std::vector<float> norm_q, norm_k;
  };
  const std::vector<Block>& blocks() const { return blocks_; }
  const Tensor& img_in() const { return img_in_; }
  const Tensor& txt_in() const { return txt_in_; }
  const Tensor& txt_out() const { return txt_out_; }
  const Tensor& time_1() const { return time_1_; }
  const Tensor& time_2() const { return time_2_; }
  const Tensor& modulation_weight() const { return modulation_; }
  const Tensor& norm_out() const { return norm_out_; }
  const Tensor& proj_out() const { return proj_out_; }
  const std::vector<float>& text_norm() const { return text_norm_; }

  // The 256-wide sinusoidal timestep embedding, [cos | sin], as diffusers computes it in fp32.
  static std::vector<float> timestep_embedding(float t);
  static void timestep_embedding(float t, float* emb);  // into 256 floats

 private:
  void modulation(float t, DitWorkspace& ws, DitModulation& out, ThreadPool& pool) const;
  // txt_in / img_in of the rows into x (at row offset `first_row`).
  void embed_text(const Tensor& txt_feats, DitWorkspace& ws, float* x, ThreadPool& pool) const;
  void embed_image(const Tensor& img_tokens, float* x, ThreadPool& pool) const;
  // One block over `rows` rows of ws.x. Rows below `text_rows` use ws.text_mod (t = 0), the rest
  // ws.image_mod. Keys/values of earlier rows may be given (`prefix_k/v`, prefix_rows of them) and are
  // prepended; this block's own text keys/values are stored to `store_k/v` when not null.
  void run_block(int block, DitWorkspace& ws, int64_t rows, int64_t text_rows, const float* cos, const float* sin,
                 const float* prefix_k, const float* prefix_v, int64_t prefix_rows, std::vector<float>* store_k,
                 std::vector<float>* store_v, ThreadPool& pool) const;
  void project_out(DitWorkspace& ws, int64_t first_row, int64_t rows, float* vel, ThreadPool& pool) const;
  // y = x W^T plus the LoRA terms of Linear `index` (dit_linear_index order), contiguous rows.
  void linear_lora(const float* x, int64_t rows, const Tensor& w, int index, float* y, ThreadPool& pool) const;
  // The same on an input several Linears share (its ConvRot packing done once); LoRA from the fp32 rows.
  void linear_lora(SharedInput& x, const Tensor& w, int index, float* y, ThreadPool& pool) const;

  DitConfig config_;
  Tensor img_in_, txt_in_, txt_out_, time_1_, time_2_, modulation_, norm_out_, proj_out_;
  std::vector<float> text_norm_;
  std::vector<Block> blocks_;
  LoraSet loras_;
  std::vector<std::vector<LoraTerm>> lora_terms_;  // per Linear; empty lists when no LoRA
};

}  // namespace rgbaq::engine::cpu
