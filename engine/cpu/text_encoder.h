#pragma once
// The Qwen3(-VL) text stack on the CPU: ids [Lfull] -> the residual stream after the last layer,
// before the final norm, [Lfull, hidden]. fp32 compute whatever the stored dtype; dims from config.json.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/cpu/thread_pool.h"
#include "engine/model/model_config.h"
#include "engine/model/tensor.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine::cpu {

class TextEncoder {
 public:
  // Checks every tensor's presence and shape; throws naming the file and tensor at fault.
  TextEncoder(const WeightStore& weights, const TextEncoderConfig& config);

  // Throws std::invalid_argument naming the position of an id outside the vocabulary.
  Tensor encode(std::span<const int32_t> ids, ThreadPool& pool) const;

  const TextEncoderConfig& config() const { return config_; }

  // The checked weights, for a backend that uploads them (engine/cuda).
  struct Layer {
    std::vector<float> input_norm, post_norm, q_norm, k_norm;
    Tensor q, k, v, o, gate, up, down;
  };
  const std::vector<Layer>& layers() const { return layers_; }
  const Tensor& embedding() const { return embed_; }

 private:
  TextEncoderConfig config_;
  Tensor embed_;
  std::vector<Layer> layers_;
};

// The rotate-half RoPE tables for positions 0..n-1, [n, head_dim / 2] each (every backend uses these).
void rotate_half_rope_tables(int64_t n, const TextEncoderConfig& config, std::vector<float>& cos, std::vector<float>& sin);

}  // namespace rgbaq::engine::cpu
