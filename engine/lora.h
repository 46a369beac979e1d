#pragma once
// LoRA adapters for the DiT: a file read once into fp32 A/B pairs per Linear, and a set of them bound
// to the DiT's Linears for a render. Applied unmerged, y = x W^T + sum scale (x A^T) B^T with
// scale = weight * alpha / rank, so switching sets between images rewrites no weight.
//
// Key formats read (each LoRA module is a Linear of dit_schema, named without ".weight"):
//   diffusers / PEFT  transformer.<module>.lora_A.weight, .lora_B.weight, .alpha
//   ComfyUI           diffusion_model.<module>.lora_A(.weight), .lora_B(.weight), .alpha
//   kohya             lora_unet_<module, dots as underscores>.lora_down.weight, .lora_up.weight, .alpha
// alpha defaults to the rank (scale = weight).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model_config.h"

namespace rgbaq::engine {

// One Linear's adapter: delta W [out, in] = alpha_over_rank * up [out, rank] x down [rank, in].
struct LoraModule {
  std::string module;  // "transformer_blocks.0.attn.to_q"
  int64_t rank = 0, in = 0, out = 0;
  std::vector<float> down;  // A [rank, in]
  std::vector<float> up;    // B [out, rank]
  float alpha_over_rank = 1.0f;
};

struct LoraAdapter {
  std::string name;
  std::filesystem::path path;
  // SHA-256 of the bytes after the safetensors header, as AUTOMATIC1111 hashes a LoRA file.
  std::string sha256;
  std::vector<LoraModule> modules;  // sorted by module name
  size_t bytes() const;
  std::string short_hash() const { return sha256.substr(0, 12); }  // A1111's "Lora hashes" form
};

// A LoRA file is read into memory whole: a rank-128 adapter of the real DiT is ~0.7 GB in BF16.
inline constexpr uint64_t kMaxLoraFileBytes = uint64_t{2} << 30;

// Reads the LoRA at `path` for a DiT of `config`. Throws std::runtime_error naming the file and the key
// at fault: unreadable, over kMaxLoraFileBytes, truncated or rewritten while it is read, a key that
// maps to no Linear of this DiT, a text-encoder key (only DiT LoRAs are supported), A without B, a
// rank mismatch between A and B, a shape that does not fit the Linear, a non-finite value.
std::shared_ptr<const LoraAdapter> load_lora(const std::filesystem::path& path, const std::string& name,
                                             const DitConfig& config);
// load_lora's checks that need only the file's header (its keys, dtypes and shapes), without reading a
// value: what a submit checks of each LoRA it names. Throws as load_lora does.
void check_lora(const std::filesystem::path& path, const DitConfig& config);

// LoraAdapter::sha256 of the file at `path` as it is now, without loading it (a streamed hash of the
// bytes after its header). Throws std::runtime_error naming the file when it is unreadable or too short.
std::string lora_file_sha256(const std::filesystem::path& path);

// The DiT's Linears in a fixed order both backends index: the global ones, then each block's.
enum DitGlobalLinear { kImgIn, kTxtIn, kTxtOut, kTime1, kTime2, kModulation, kNormOut, kProjOut, kDitGlobalLinears };
enum DitBlockLinear { kToQ, kToK, kToV, kToOut, kMlpGate, kMlpProj, kMlpOut, kDitBlockLinears };
inline int dit_linear_index(int block, int which) { return kDitGlobalLinears + block * kDitBlockLinears + which; }
// Module names in that order ("img_in", ..., "transformer_blocks.0.attn.to_q", ...).
std::vector<std::string> dit_linear_modules(const DitConfig& config);

// One adapter applied at a weight.
struct LoraUse {
  std::shared_ptr<const LoraAdapter> adapter;
  float weight = 1.0f;
};
using LoraSet = std::vector<LoraUse>;

// A term of one Linear: y += scale * (x A^T) B^T.
struct LoraTerm {
  const LoraModule* module = nullptr;
  float scale = 0.0f;  // weight * alpha / rank
};
// For each Linear of dit_linear_modules(config), its terms in set order. The set must outlive the result.
std::vector<std::vector<LoraTerm>> bind_loras(const LoraSet& set, const DitConfig& config);

}  // namespace rgbaq::engine
