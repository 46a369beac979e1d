#include "engine/model/model_config.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "engine/model/weight_store.h"

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

namespace {

// `path` names the source in errors: a config.json, or a single file whose shapes gave `doc`.
TextEncoderConfig parse_text_encoder_config(const json& doc, const std::filesystem::path& path) {
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
  c.rms_eps = f.optional<double>("rms_norm_eps", family::kTextRmsNormEps);
  c.rope_theta = f.optional<double>("rope_theta", family::kTextRopeTheta);
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

DitConfig parse_dit_config(const json& doc, const std::filesystem::path& path) {
  const Fields f(doc, path);
  DitConfig c;
  if (f.optional<int>("patch_size", 1) != 1) throw std::runtime_error(path.string() + ": patch_size must be 1 (Qwen-Image 2.1)");
  c.in_channels = f.optional<int>("in_channels", family::kLatentChannels);
  c.out_channels = f.optional<int>("out_channels", c.in_channels);
  if (c.in_channels != family::kLatentChannels || c.out_channels != family::kLatentChannels) {
    throw std::runtime_error(path.string() + ": in_channels and out_channels must be 64, the contract's latent width");
  }
  c.layers = f.positive("num_layers", kMaxLayers);
  c.heads = f.positive("num_attention_heads", kMaxHeads);
  c.head_dim = f.positive("attention_head_dim", kMaxHeadDim);
  c.context_dim = f.positive("context_in_dim", kMaxWidth);
  c.mlp_ratio = f.optional_positive("mlp_ratio", family::kDitMlpRatio, 16);
  c.eps = f.optional<double>("eps", family::kDitEps);
  const std::vector<int> rope_axes(family::kDitAxesDimsRope.begin(), family::kDitAxesDimsRope.end());
  const auto axes = f.optional<std::vector<int>>("axes_dims_rope", rope_axes);
  if (axes != rope_axes || c.head_dim != family::kDitHeadDim) {
    throw std::runtime_error(path.string() + ": axes_dims_rope must be [16, 56, 56] with attention_head_dim 128, "
                             "the contract's RoPE layout");
  }
  if (!f.optional<bool>("causal_condition", true)) {
    throw std::runtime_error(path.string() + ": causal_condition = false is not supported");
  }
  return c;
}

VaeConfig parse_vae_config(const json& doc, const std::filesystem::path& path) {
  const Fields f(doc, path);
  VaeConfig c;
  c.z_dim = f.positive("z_dim", 64);
  c.base_dim = f.optional_positive("base_dim", family::kVaeBaseDim, kMaxWidth / 8);
  c.decoder_base_dim = f.optional_positive("decoder_base_dim", c.base_dim, kMaxWidth / 8);
  c.num_res_blocks = f.optional_positive("num_res_blocks", family::kVaeNumResBlocks, 16);
  c.out_channels = f.optional_positive("out_channels", family::kVaeOutChannels, 4);
  c.dim_mult = f.required<std::vector<int>>("dim_mult");
  for (const int m : c.dim_mult) {
    if (m <= 0 || m > 64) throw std::runtime_error(path.string() + ": field \"dim_mult\" holds " + std::to_string(m) + "; each must be in 1..64");
  }
  c.temporal_downsample = f.required<std::vector<bool>>("temperal_downsample");
  c.is_residual = f.optional<bool>("is_residual", false);
  c.latents_mean = f.required<std::vector<float>>("latents_mean");
  c.latents_std = f.required<std::vector<float>>("latents_std");
  if (c.z_dim != family::kLatentChannels) throw std::runtime_error(path.string() + ": z_dim must be 64, the contract's latent width");
  if (c.latents_mean.size() != family::kLatentChannels || c.latents_std.size() != family::kLatentChannels) {
    throw std::runtime_error(path.string() + ": latents_mean and latents_std need 64 values each");
  }
  if (c.dim_mult.size() != 5 || c.temporal_downsample.size() != 4) {
    throw std::runtime_error(path.string() + ": dim_mult needs 5 levels and temperal_downsample 4 (16x upsampling)");
  }
  if (!c.is_residual) throw std::runtime_error(path.string() + ": is_residual = false (a Wan 2.1 VAE) is not supported");
  if (f.optional<int>("patch_size", 1) > 1) throw std::runtime_error(path.string() + ": patch_size > 1 is not supported");
  return c;
}

}  // namespace

TextEncoderConfig load_text_encoder_config(const std::filesystem::path& path) {
  return parse_text_encoder_config(read_json_object(path), path);
}

DitConfig load_dit_config(const std::filesystem::path& path) { return parse_dit_config(read_json_object(path), path); }

VaeConfig load_vae_config(const std::filesystem::path& path) { return parse_vae_config(read_json_object(path), path); }

std::vector<int64_t> vae_decoder_dims(const VaeConfig& c) {
  std::vector<int64_t> dims = {int64_t{c.decoder_base_dim} * c.dim_mult.back()};
  for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(int64_t{c.decoder_base_dim} * *it);
  return dims;
}

namespace {

// Reads dimensions off a single file's weights, each error naming the file and the tensor.
class Shapes {
 public:
  explicit Shapes(const WeightStore& weights) : w_(weights) {}

  // Dimension `axis` of tensor `name`, which must exist with at least axis + 1 dimensions.
  int64_t dim(const std::string& name, size_t axis) const {
    if (!w_.has(name)) fail(name, "is missing; it gives the component's dimensions");
    const Shape s = w_.get(name).shape();  // a copy: get() returns a temporary
    if (s.size() <= axis || s[axis] <= 0) fail(name, "has shape " + shape_string(s) + ", no dimension " + std::to_string(axis) + " to read");
    return s[axis];
  }
  // a / b where b divides a (the quotient of two tensors' widths), else throws naming `name`.
  int64_t quotient(int64_t a, int64_t b, const std::string& name, const std::string& what) const {
    if (b <= 0 || a % b != 0) fail(name, "has " + std::to_string(a) + " " + what + ", not a multiple of " + std::to_string(b));
    return a / b;
  }
  // The blocks `prefix`0, `prefix`1, ... the weights hold, each holding `probe`: their count. A gap, or
  // no block at all, throws naming the first tensor missing.
  int count_blocks(const std::string& prefix, const std::string& probe) const {
    const std::set<long> blocks = w_.block_numbers(prefix);
    const std::string held = blocks.empty() ? "none" : prefix + std::to_string(*blocks.begin()) + " to " + prefix +
                                                           std::to_string(*blocks.rbegin()) + ", " +
                                                           std::to_string(blocks.size()) + " blocks";
    for (long i = 0; i <= (blocks.empty() ? 0 : *blocks.rbegin()); ++i) {
      const std::string name = prefix + std::to_string(i) + "." + probe;
      if (!w_.has(name)) fail(name, "is missing (the file holds " + held + "; blocks are numbered from 0 without gaps)");
    }
    return static_cast<int>(blocks.size());
  }
  bool has(const std::string& name) const { return w_.has(name); }
  std::filesystem::path label() const { return w_.directory().string() + " (its dimensions read off its shapes)"; }

 private:
  [[noreturn]] void fail(const std::string& name, const std::string& what) const {
    throw std::runtime_error(w_.directory().string() + ": tensor \"" + name + "\" " + what);
  }
  const WeightStore& w_;
};

}  // namespace

TextEncoderConfig text_encoder_config_from_weights(const WeightStore& weights, const std::string& p) {
  const Shapes s(weights);
  const std::string embed = p + "embed_tokens.weight", l0 = p + "layers.0.";
  const int64_t head_dim = s.dim(l0 + "self_attn.q_norm.weight", 0);
  const json doc = {
      {"hidden_size", s.dim(embed, 1)},
      {"vocab_size", s.dim(embed, 0)},
      {"num_hidden_layers", s.count_blocks(p + "layers.", "self_attn.q_proj.weight")},
      {"head_dim", head_dim},
      {"num_attention_heads",
       s.quotient(s.dim(l0 + "self_attn.q_proj.weight", 0), head_dim, l0 + "self_attn.q_proj.weight", "rows")},
      {"num_key_value_heads",
       s.quotient(s.dim(l0 + "self_attn.k_proj.weight", 0), head_dim, l0 + "self_attn.k_proj.weight", "rows")},
      {"intermediate_size", s.dim(l0 + "mlp.gate_proj.weight", 0)},
      {"rms_norm_eps", family::kTextRmsNormEps},
      {"rope_theta", family::kTextRopeTheta},
  };
  return parse_text_encoder_config(doc, s.label());
}

DitConfig dit_config_from_weights(const WeightStore& weights) {
  const Shapes s(weights);
  const int64_t dim = s.dim("img_in.weight", 0);
  const std::string b0 = "transformer_blocks.0.";
  const int64_t head_dim = s.dim(b0 + "attn.norm_q.weight", 0);
  const json doc = {
      {"patch_size", 1},
      {"in_channels", s.dim("img_in.weight", 1)},
      {"out_channels", s.dim("proj_out.weight", 0)},
      {"num_layers", s.count_blocks("transformer_blocks.", "attn.to_q.weight")},
      {"attention_head_dim", head_dim},
      {"num_attention_heads", s.quotient(dim, head_dim, "img_in.weight", "rows (the model width)")},
      {"context_in_dim", s.dim("txt_in.in_layer.weight", 1)},
      {"mlp_ratio", s.quotient(s.dim(b0 + "img_mlp.proj.weight", 0), dim, b0 + "img_mlp.proj.weight", "rows")},
      {"axes_dims_rope", family::kDitAxesDimsRope},
      {"eps", family::kDitEps},
      {"causal_condition", true},
  };
  return parse_dit_config(doc, s.label());
}

VaeConfig vae_config_from_weights(const WeightStore& weights) {
  const Shapes s(weights);
  const int stages = s.count_blocks("decoder.up_blocks.", "resnets.0.conv1.weight");
  std::vector<int64_t> dims = {s.dim("decoder.conv_in.weight", 0)};  // vae_decoder_dims' order
  for (int i = 0; i < stages; ++i) {
    dims.push_back(s.dim("decoder.up_blocks." + std::to_string(i) + ".resnets.0.conv1.weight", 0));
  }
  const int64_t base = dims.back();  // decoder_base_dim * dim_mult[0], and dim_mult[0] is 1 (published)
  std::vector<int64_t> dim_mult;
  for (int i = stages; i >= 1; --i) {
    dim_mult.push_back(s.quotient(dims[i], base, "decoder.up_blocks." + std::to_string(i - 1) + ".resnets.0.conv1.weight",
                                  "output channels (the decoder's last width times dim_mult)"));
  }
  if (stages > 0 && dims[0] != dims[1]) {
    throw std::runtime_error(weights.directory().string() + ": tensor \"decoder.conv_in.weight\" has " +
                             std::to_string(dims[0]) + " output channels, but up block 0 takes " + std::to_string(dims[1]));
  }
  std::vector<bool> temporal_down;  // temperal_downsample = the up blocks' time_conv flags, reversed
  for (int i = stages - 2; i >= 0; --i) {
    temporal_down.push_back(s.has("decoder.up_blocks." + std::to_string(i) + ".upsampler.time_conv.weight"));
  }
  // The encoder's width: its first convolution, in diffusers' or Wan's names, when the file holds it.
  int64_t base_dim = family::kVaeBaseDim;
  for (const char* first : {"encoder.conv_in.weight", "encoder.conv1.weight"})
    if (s.has(first)) base_dim = s.dim(first, 0);
  const json doc = {
      {"z_dim", s.dim("post_quant_conv.weight", 0)},
      {"base_dim", base_dim},
      {"decoder_base_dim", base},
      {"dim_mult", dim_mult},
      {"num_res_blocks", s.count_blocks("decoder.up_blocks.0.resnets.", "conv1.weight") - 1},
      {"temperal_downsample", temporal_down},
      {"is_residual", family::kVaeIsResidual},
      {"out_channels", s.dim("decoder.conv_out.weight", 0)},
      {"latents_mean", family::vae_latents_mean()},
      {"latents_std", family::vae_latents_std()},
  };
  return parse_vae_config(doc, s.label());
}

}  // namespace rgbaq::engine
