#pragma once
// The three components' config.json files, read into the dimensions the engine needs. Missing or
// ill-typed fields are errors naming the file and the field. With no model directory (single files
// alone), the same configs come from the weights' shapes and the family's published values
// (engine/model/family_defaults.h), checked by the same rules.
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/model/family_defaults.h"

namespace rgbaq::engine {

class WeightStore;

// Qwen3(-VL) text stack; a Qwen3-VL config keeps these under "text_config".
struct TextEncoderConfig {
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  double rms_eps = family::kTextRmsNormEps, rope_theta = family::kTextRopeTheta;
  friend bool operator==(const TextEncoderConfig&, const TextEncoderConfig&) = default;
};

// QwenImage21Transformer2DModel.
struct DitConfig {
  int in_channels = family::kLatentChannels, out_channels = family::kLatentChannels, layers = 0, heads = 0, head_dim = 0,
      context_dim = 0, mlp_ratio = family::kDitMlpRatio;
  std::array<int, 3> axes_dims = family::kDitAxesDimsRope;
  double eps = family::kDitEps;
  int dim() const { return heads * head_dim; }
  friend bool operator==(const DitConfig&, const DitConfig&) = default;
};

// AutoencoderKLQwenImage21 (decoder side).
struct VaeConfig {
  int z_dim = 0, base_dim = 0, decoder_base_dim = 0, num_res_blocks = family::kVaeNumResBlocks,
      out_channels = family::kVaeOutChannels;
  std::vector<int> dim_mult;
  std::vector<bool> temporal_downsample;
  bool is_residual = family::kVaeIsResidual;
  std::vector<float> latents_mean, latents_std;
  friend bool operator==(const VaeConfig&, const VaeConfig&) = default;
};

// A JSON file holding an object; throws naming the file when it cannot be opened or parsed, or is over
// common::kModelConfigJsonLimits (checked before parsing).
nlohmann::json read_json_object(const std::filesystem::path& path);

TextEncoderConfig load_text_encoder_config(const std::filesystem::path& config_json);
DitConfig load_dit_config(const std::filesystem::path& config_json);
VaeConfig load_vae_config(const std::filesystem::path& config_json);

// The configs of single component files opened with no model directory: each dimension from a weight's
// shape (a quantized Linear's: its stored weight's [out, in]), everything else the family's published
// value, the VAE's latents_mean / latents_std the built-in ones; then checked as config.json is.
// - text encoder (`prefix` "model.language_model." or "model."): hidden and vocab from embed_tokens,
//   layers by counting layers.N, head_dim from layer 0's q_norm, heads and kv heads from its q_proj and
//   k_proj rows, intermediate from its mlp.gate_proj;
// - DiT: dim from img_in, layers by counting transformer_blocks.N, head_dim from block 0's attn.norm_q,
//   heads = dim / head_dim, mlp_ratio from its img_mlp.proj, context_dim from txt_in.in_layer;
// - VAE: z_dim from post_quant_conv, the decoder's widths from conv_in and each up block's first resnet
//   (decoder_base_dim the last, dim_mult[0] = 1 as published), num_res_blocks by counting up block 0's
//   resnets, temperal_downsample from which up blocks hold an upsampler.time_conv, out_channels from
//   conv_out, base_dim from the encoder's first convolution when the file holds it (else published).
// Numbered blocks must run 0..N-1; a gap, a missing or ill-shaped tensor, or widths that do not divide
// throw std::runtime_error naming the file and the tensor. Every other block is checked against these
// by the weight schema (engine/model/weight_schema.h).
TextEncoderConfig text_encoder_config_from_weights(const WeightStore& weights, const std::string& prefix);
DitConfig dit_config_from_weights(const WeightStore& weights);
VaeConfig vae_config_from_weights(const WeightStore& weights);

// The decoder's channels at each stage: [base * mult.back()] + reversed(base * mult) (diffusers'
// dims = [dim * m for m in [dim_mult[-1]] + dim_mult[::-1]]).
std::vector<int64_t> vae_decoder_dims(const VaeConfig& config);

}  // namespace rgbaq::engine
