#include "engine/model/model_config.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;

// Upper bounds far above any Qwen-Image-2.1 (36 encoder layers, 32 DiT blocks, 4096 wide, 32 heads of
// 128, a vocabulary of 151,936) and below what would exhaust memory before the weights are checked.
constexpr int kMaxLayers = 1024, kMaxHeads = 1024, kMaxHeadDim = 1024, kMaxWidth = 1 << 16, kMaxVocab = 1 << 22;

class Fields {
 public:
  Fields(const json& doc, const std::filesystem::path& path) : doc_(doc), path_(path) {}

  template <typename T>
  T required(const char* key) const {
    const auto it = doc_.find(key);
    if (it == doc_.end() || it->is_null()) throw std::runtime_error(path_.string() + ": field \"" + key + "\" is missing");
    return convert<T>(*it, key);
  }
  template <typename T>
  T optional(const char* key, T fallback) const {
    const auto it = doc_.find(key);
    return it == doc_.end() || it->is_null() ? fallback : convert<T>(*it, key);
  }
  // In 1..max: a number that sizes per-layer or per-channel work is bounded before anything is built
  // from it (2e9 layers would take all memory listing their tensors).
  int positive(const char* key, int max) const { return within(key, required<int64_t>(key), max); }
  int optional_positive(const char* key, int fallback, int max) const {
    return within(key, optional<int64_t>(key, fallback), max);
  }

 private:
  int within(const char* key, int64_t v, int max) const {
    if (v <= 0 || v > max) {
      throw std::runtime_error(path_.string() + ": field \"" + key + "\" is " + std::to_string(v) + "; it must be in 1.." +
                               std::to_string(max));
    }
    return static_cast<int>(v);
  }
  template <typename T>
  T convert(const json& v, const char* key) const {
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      throw std::runtime_error(path_.string() + ": field \"" + key + "\" has the wrong type (" + v.type_name() + ")");
    }
  }
  const json& doc_;
  const std::filesystem::path& path_;
};

}  // namespace

json read_json_object(const std::filesystem::path& path) {
  const std::string text = common::read_json_file(path, common::kModelConfigJsonLimits);
  try {
    json doc = json::parse(text);
    if (!doc.is_object()) throw std::runtime_error(path.string() + ": not a JSON object");
    return doc;
  } catch (const json::exception& e) {
    throw std::runtime_error(path.string() + ": not valid JSON: " + e.what());
  }
}

TextEncoderConfig load_text_encoder_config(const std::filesystem::path& path) {
  const json doc = read_json_object(path);
  const json& text = doc.contains("text_config") && doc["text_config"].is_object() ? doc["text_config"] : doc;
  const Fields f(text, path);
  TextEncoderConfig c;
  c.hidden = f.positive("hidden_size", kMaxWidth);
  c.layers = f.positive("num_hidden_layers", kMaxLayers);
  c.heads = f.positive("num_attention_heads", kMaxHeads);
  c.kv_heads = f.optional_positive("num_key_value_heads", c.heads, kMaxHeads);
  c.head_dim = f.optional_positive("head_dim", std::max(1, c.hidden / c.heads), kMaxHeadDim);
  c.intermediate = f.positive("intermediate_size", kMaxWidth * 8);
  c.vocab = f.positive("vocab_size", kMaxVocab);
  c.rms_eps = f.optional<double>("rms_norm_eps", 1e-6);
  c.rope_theta = f.optional<double>("rope_theta", 5e6);
  if (c.kv_heads <= 0 || c.heads % c.kv_heads != 0) {
    throw std::runtime_error(path.string() + ": num_attention_heads " + std::to_string(c.heads) +
                             " is not a multiple of num_key_value_heads " + std::to_string(c.kv_heads));
  }
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) throw std::runtime_error(path.string() + ": head_dim must be a positive even number");
  if (f.optional<bool>("attention_bias", false)) throw std::runtime_error(path.string() + ": attention_bias = true is not supported");
  const std::string act = f.optional<std::string>("hidden_act", "silu");
  if (act != "silu") throw std::runtime_error(path.string() + ": hidden_act \"" + act + "\" is not supported (silu)");
  return c;
}

DitConfig load_dit_config(const std::filesystem::path& path) {
  const json doc = read_json_object(path);
  const Fields f(doc, path);
  DitConfig c;
  if (f.optional<int>("patch_size", 1) != 1) throw std::runtime_error(path.string() + ": patch_size must be 1 (Qwen-Image 2.1)");
  c.in_channels = f.optional<int>("in_channels", 64);
  c.out_channels = f.optional<int>("out_channels", c.in_channels);
  if (c.in_channels != 64 || c.out_channels != 64) {
    throw std::runtime_error(path.string() + ": in_channels and out_channels must be 64, the contract's latent width");
  }
  c.layers = f.positive("num_layers", kMaxLayers);
  c.heads = f.positive("num_attention_heads", kMaxHeads);
  c.head_dim = f.positive("attention_head_dim", kMaxHeadDim);
  c.context_dim = f.positive("context_in_dim", kMaxWidth);
  c.mlp_ratio = f.optional_positive("mlp_ratio", 3, 16);
  c.eps = f.optional<double>("eps", 1e-6);
  const auto axes = f.optional<std::vector<int>>("axes_dims_rope", {16, 56, 56});
  if (axes != std::vector<int>{16, 56, 56} || c.head_dim != 128) {
    throw std::runtime_error(path.string() + ": axes_dims_rope must be [16, 56, 56] with attention_head_dim 128, "
                             "the contract's RoPE layout");
  }
  if (!f.optional<bool>("causal_condition", true)) {
    throw std::runtime_error(path.string() + ": causal_condition = false is not supported");
  }
  return c;
}

std::vector<int64_t> vae_decoder_dims(const VaeConfig& c) {
  std::vector<int64_t> dims = {int64_t{c.decoder_base_dim} * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(int64_t{c.decoder_base_dim} * *it);
  return dims;
}

VaeConfig load_vae_config(const std::filesystem::path& path) {
  const json doc = read_json_object(path);
  const Fields f(doc, path);
  VaeConfig c;
  c.z_dim = f.positive("z_dim", 64);
  c.base_dim = f.optional_positive("base_dim", 96, kMaxWidth / 8);
  c.decoder_base_dim = f.optional_positive("decoder_base_dim", c.base_dim, kMaxWidth / 8);
  c.num_res_blocks = f.optional_positive("num_res_blocks", 2, 16);
  c.out_channels = f.optional_positive("out_channels", 4, 4);
  c.dim_mult = f.required<std::vector<int>>("dim_mult");
  for (const int m : c.dim_mult) {
    if (m <= 0 || m > 64) throw std::runtime_error(path.string() + ": field \"dim_mult\" holds " + std::to_string(m) + "; each must be in 1..64");
  }
  c.temporal_downsample = f.required<std::vector<bool>>("temperal_downsample");
  c.is_residual = f.optional<bool>("is_residual", false);
  c.latents_mean = f.required<std::vector<float>>("latents_mean");
  c.latents_std = f.required<std::vector<float>>("latents_std");
  if (c.z_dim != 64) throw std::runtime_error(path.string() + ": z_dim must be 64, the contract's latent width");
  if (c.latents_mean.size() != 64 || c.latents_std.size() != 64) {
    throw std::runtime_error(path.string() + ": latents_mean and latents_std need 64 values each");
  }
  if (c.dim_mult.size() != 5 || c.temporal_downsample.size() != 4) {
    throw std::runtime_error(path.string() + ": dim_mult needs 5 levels and temperal_downsample 4 (16x upsampling)");
  }
  if (!c.is_residual) throw std::runtime_error(path.string() + ": is_residual = false (a Wan 2.1 VAE) is not supported");
  if (f.optional<int>("patch_size", 1) > 1) throw std::runtime_error(path.string() + ": patch_size > 1 is not supported");
  return c;
}

}  // namespace rgbaq::engine
