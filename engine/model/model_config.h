#pragma once
// The three components' config.json files, read into the dimensions the engine needs. Missing or
// ill-typed fields are errors naming the file and the field.
#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq::engine {

// Qwen3(-VL) text stack; a Qwen3-VL config keeps these under "text_config".
struct TextEncoderConfig {
  int hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  double rms_eps = 1e-6, rope_theta = 5e6;
};

// QwenImage21Transformer2DModel.
struct DitConfig {
  int in_channels = 64, out_channels = 64, layers = 0, heads = 0, head_dim = 0, context_dim = 0, mlp_ratio = 3;
  std::array<int, 3> axes_dims{16, 56, 56};
  double eps = 1e-6;
  int dim() const { return heads * head_dim; }
};

// AutoencoderKLQwenImage21 (decoder side).
struct VaeConfig {
  int z_dim = 0, base_dim = 0, decoder_base_dim = 0, num_res_blocks = 2, out_channels = 4;
  std::vector<int> dim_mult;
  std::vector<bool> temporal_downsample;
  bool is_residual = true;
  std::vector<float> latents_mean, latents_std;
};

// A JSON file holding an object; throws naming the file when it cannot be opened or parsed, or is over
// common::kModelConfigJsonLimits (checked before parsing).
nlohmann::json read_json_object(const std::filesystem::path& path);

TextEncoderConfig load_text_encoder_config(const std::filesystem::path& config_json);
DitConfig load_dit_config(const std::filesystem::path& config_json);
VaeConfig load_vae_config(const std::filesystem::path& config_json);

// The decoder's channels at each stage: [base * mult.back()] + reversed(base * mult) (diffusers'
// dims = [dim * m for m in [dim_mult[-1]] + dim_mult[::-1]]).
std::vector<int64_t> vae_decoder_dims(const VaeConfig& config);

}  // namespace rgbaq::engine
