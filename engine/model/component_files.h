#pragma once
// Single files as components: a ComfyUI checkpoint file (models/diffusion_models/*.safetensors,
// models/text_encoders/*, models/vae/*) standing in for the model directory's transformer/,
// text_encoder/ or vae/ folder. Its tensor names are read through engine/model/comfy_keys.h, its
// quantized modules through engine/model/comfy_quant.h; the model directory's config.json for that
// component gives its dimensions and the file must match them (engine/model/model_directory.h).
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/model/weight_store.h"

namespace rgbaq::engine {

// Empty paths: the component comes from the model directory.
struct ComponentFiles {
  std::filesystem::path dit, text_encoder, vae;
  bool empty() const { return dit.empty() && text_encoder.empty() && vae.empty(); }
  // The file for a model directory role ("transformer", "text_encoder", "vae"), or an empty path.
  const std::filesystem::path& for_role(const std::string& role) const;
};

// The weights of `role` ("transformer", "text_encoder", "vae") from one file, names mapped by the key
// table. Throws std::runtime_error naming the file and tensor: an unknown name, a bad quantized module.
WeightStore open_component_file(const std::string& role, const std::filesystem::path& file);

// What `rgbaq model check` and an image's metadata say about a component file.
struct ComponentFileDescription {
  // "int8-convrot G256 (224 linears) + bf16", "fp8-scaled (224 linears) + bf16", "bf16": the ComfyUI
  // quantized modules by format, then the dtype most of the other tensors have.
  std::string format;
  uint64_t bytes = 0;    // the file's size
  std::string identity;  // 16 hex digits (engine/model/model_identity.h's file hash)
};
// Reads the header only (and the comfy_quant tensors); throws naming the file when it is not a readable
// safetensors file or a comfy_quant is bad.
ComponentFileDescription describe_component_file(const std::filesystem::path& file);

}  // namespace rgbaq::engine
