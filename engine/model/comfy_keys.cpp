#include "engine/model/comfy_keys.h"

#include <array>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace rgbaq::engine {
namespace {

bool take_prefix(std::string& key, std::string_view prefix) {
  if (!key.starts_with(prefix)) return false;
  key.erase(0, prefix.size());
  return true;
}

bool starts_with_any(const std::string& key, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (key.starts_with(p)) return true;
  return false;
}

// "N.rest" -> N and rest; nullopt when `s` does not start with a block number and a dot.
std::optional<std::pair<int, std::string>> take_index(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && i < 6 && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i >= s.size() || s[i] != '.') return std::nullopt;
  return std::pair{std::stoi(s.substr(0, i)), s.substr(i + 1)};
}

std::optional<std::string> dit_key(std::string key) {
  take_prefix(key, "model.diffusion_model.") || take_prefix(key, "diffusion_model.");
  if (starts_with_any(key, {"img_in.", "txt_in.", "time_text_embed.", "modulation.", "transformer_blocks.", "norm_out.",
                            "proj_out."})) {
    return key;
  }
  return std::nullopt;
}

std::optional<std::string> text_encoder_key(std::string key) {
  if (key.starts_with("text_encoders.")) {  // a checkpoint's "text_encoders.NAME.transformer."
    const size_t t = key.find(".transformer.");
    if (t == std::string::npos) return std::nullopt;
    key.erase(0, t + std::string_view(".transformer.").size());
  }
  if (starts_with_any(key, {"model.", "lm_head.", "visual."})) return key;
  return std::nullopt;
}

// A Wan residual block's tensor (what follows "PREFIX.") -> the diffusers resnet's.
std::optional<std::string> wan_resnet(const std::string& rest) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kParts = {{
      {"residual.0.", "norm1."}, {"residual.2.", "conv1."}, {"residual.3.", "norm2."}, {"residual.6.", "conv2."},
      {"shortcut.", "conv_shortcut."},
  }};
  for (const auto& [wan, ours] : kParts)
    if (rest.starts_with(wan)) return std::string(ours) + rest.substr(wan.size());
  return std::nullopt;
}

std::optional<std::string> vae_key(std::string key) {
  take_prefix(key, "first_stage_model.") || take_prefix(key, "vae.");
  // Already diffusers' names, or parts the decoder does not read.
  if (starts_with_any(key, {"post_quant_conv.", "quant_conv.", "encoder.", "decoder.conv_in.", "decoder.mid_block.",
                            "decoder.up_blocks.", "decoder.norm_out.", "decoder.conv_out."}) ||
      key == "latents_mean" || key == "latents_std") {
    return key;
  }
  if (take_prefix(key, "conv2.")) return "post_quant_conv." + key;
  if (take_prefix(key, "conv1.")) return "quant_conv." + key;
  if (take_prefix(key, "decoder.conv1.")) return "decoder.conv_in." + key;
  if (take_prefix(key, "decoder.head.0.")) return "decoder.norm_out." + key;
  if (take_prefix(key, "decoder.head.2.")) return "decoder.conv_out." + key;
  if (take_prefix(key, "decoder.middle.")) {
    const auto block = take_index(key);
    if (!block) return std::nullopt;
    const auto& [index, rest] = *block;
    if (index == 1) return "decoder.mid_block.attentions.0." + rest;  // norm.gamma, to_qkv, proj
    if (index != 0 && index != 2) return std::nullopt;
    const auto resnet = wan_resnet(rest);
    if (!resnet) return std::nullopt;
    return "decoder.mid_block.resnets." + std::to_string(index / 2) + "." + *resnet;
  }
  if (take_prefix(key, "decoder.upsamples.")) {  // Wan 2.2: decoder.upsamples.I.upsamples.J.<block>
    const auto stage = take_index(key);
    if (!stage || !stage->second.starts_with("upsamples.")) return std::nullopt;
    const auto block = take_index(stage->second.substr(std::string_view("upsamples.").size()));
    if (!block) return std::nullopt;
    const std::string up = "decoder.up_blocks." + std::to_string(stage->first) + ".";
    const std::string& rest = block->second;
    // The stage's last module is its Resample (resample.1 and time_conv); the others are residual blocks.
    if (rest.starts_with("resample.") || rest.starts_with("time_conv.")) return up + "upsampler." + rest;
    const auto resnet = wan_resnet(rest);
    if (!resnet) return std::nullopt;
    return up + "resnets." + std::to_string(block->first) + "." + *resnet;
  }
  return std::nullopt;
}

}  // namespace

ComfyComponent comfy_component_of_role(const std::string& role) {
  if (role == "transformer") return ComfyComponent::kDit;
  if (role == "text_encoder") return ComfyComponent::kTextEncoder;
  if (role == "vae") return ComfyComponent::kVae;
  throw std::invalid_argument("no single-file component for role \"" + role + "\"");
}

std::optional<std::string> comfy_key_to_engine(ComfyComponent component, const std::string& key) {
  switch (component) {
    case ComfyComponent::kDit: return dit_key(key);
    case ComfyComponent::kTextEncoder: return text_encoder_key(key);
    case ComfyComponent::kVae: return vae_key(key);
  }
  return std::nullopt;
}

}  // namespace rgbaq::engine
