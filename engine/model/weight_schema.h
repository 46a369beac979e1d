#pragma once
// The backend-neutral weight schema: for each component, the tensors the contract's graphs read (name,
// shape, role), derived from its config.json. check_component() holds a component's files against it
// once: every tensor present, each shape and dtype right (an int8 Linear with its scales), and every
// other tensor in the files (lm_head, the vision tower, the VAE encoder, time_conv...) counted as
// ignored. A backend then loads the views it needs knowing they are sound.
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine/model/model_config.h"
#include "engine/model/tensor.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine {

enum class WeightRole {
  kLinear,     // [out, in]; F32/BF16/F16, I8 with block scales, or a ComfyUI ConvRot / FP8-scaled module
  kEmbedding,  // [vocab, hidden]; floating point
  kNorm,       // [C] or [C, 1, 1(, 1)]: C values; floating point
  kConv,       // [out, in, k, k] or a causal 5-D [out, in, kt, k, k]; floating point
  kBias,       // [C]; floating point
};

struct WeightSpec {
  std::string name;
  Shape shape;  // for kConv the 4-D shape
  WeightRole role;
};

struct ComponentSchema {
  std::string component;  // "text_encoder", "transformer", "vae"
  std::vector<WeightSpec> tensors;
};

// "model.language_model." (Qwen3-VL, as the published checkpoint names it) or "model." (Qwen3),
// whichever names the embedding in `weights`; throws naming the directory when neither does.
std::string text_encoder_prefix(const WeightStore& weights);

// `prefix` is the text stack's (text_encoder_prefix).
ComponentSchema text_encoder_schema(const TextEncoderConfig& config, const std::string& prefix);
ComponentSchema dit_schema(const DitConfig& config);
ComponentSchema vae_schema(const VaeConfig& config);

struct ComponentReport {
  std::string component;
  std::filesystem::path dir;
  int64_t tensors = 0;  // in the files, scales included
  int64_t used = 0, ignored = 0, quantized = 0;
  std::set<std::string> int8_linears;  // the Linear weights stored as I8 with block scales (`quantized` of them)
  std::set<std::string> convrot_linears;  // the Linear weights in ComfyUI's INT8 ConvRot (engine/model/comfy_quant.h)
  // Each Linear weight format -> how many: "int8-convrot G256", "fp8-scaled", "int8-blocks", "bf16", ...
  std::map<std::string, int64_t> linear_formats;
  uint64_t bytes = 0, used_bytes = 0;  // all tensors in the files / those the graphs read (scales included)
  // Bytes the CPU backend holds beyond the mapping (the VAE's convolutions, widened to fp32).
  uint64_t cpu_copy_bytes = 0;
  std::map<std::string, int64_t> dtypes;  // dtype name -> tensors used
  std::vector<std::string> ignored_examples;  // the first few ignored names
};

// Throws std::runtime_error naming the file and tensor at fault: a missing tensor, a wrong shape, a dtype
// the role cannot take (I8 or F8_E4M3 outside a Linear, an I8 Linear without its scales).
ComponentReport check_component(const WeightStore& store, const ComponentSchema& schema);

// "int8-convrot G256: 224 linears, bf16: 4 linears": the report's linear_formats in one line.
std::string linear_formats_summary(const ComponentReport& report);

}  // namespace rgbaq::engine
