#include "engine/model_config.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace rgbaq::engine {
namespace {

using nlohmann::json;

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
  int positive(const char* key) const {
    const int v = required<int>(key);
    if (v <= 0) throw std::runtime_error(path_.string() + ": field \"" + key + "\" must be positive, not " + std::to_string(v));
    return v;
  }

 private:
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
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  try {
    json doc = json::parse(in);
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
  c.hidden = f.positive("hidden_size");
  c.layers = f.positive("num_hidden_layers");
  c.heads = f.positive("num_attention_heads");
  c.kv_heads = f.optional<int>("num_key_value_heads", c.heads);
  c.head_dim = f.optional<int>("head_dim", c.hidden / c.heads);
  c.intermediate = f.positive("intermediate_size");
  c.vocab = f.positive("vocab_size");
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
  c.layers = f.positive("num_layers");
  c.heads = f.positive("num_attention_heads");
  c.head_dim = f.positive("attention_head_dim");
  c.context_dim = f.positive("context_in_dim");
  c.mlp_ratio = f.optional<int>("mlp_ratio", 3);
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

VaeConfig load_vae_config(const std::filesystem::path& path) {
  const json doc = read_json_object(path);
  const Fields f(doc, path);
  VaeConfig c;
  c.z_dim = f.positive("z_dim");
  c.base_dim = f.optional<int>("base_dim", 96);
  c.decoder_base_dim = f.optional<int>("decoder_base_dim", c.base_dim);
  c.num_res_blocks = f.optional<int>("num_res_blocks", 2);
  c.out_channels = f.optional<int>("out_channels", 4);
  c.dim_mult = f.required<std::vector<int>>("dim_mult");
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
