#pragma once
// Writes synthetic checkpoints in the real diffusers layout, with the real tensor names and small
// dimensions, deterministic weights (a function of the seed and each tensor's name) scaled so that
// activations stay finite and images are not flat. Every test that renders uses the tiny model.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/dtype.h"
#include "engine/model/model_config.h"

namespace rgbaq::tools {

// kOurs: tokenizer/, 5-D causal convolutions, only the tensors the graphs read. kPublished: as the
// published Qwen-Image-2.1(-Turbo) diffusers directory is laid out: processor/tokenizer.json, the whole
// Qwen3-VL text encoder (lm_head.weight, model.visual.*), the VAE's encoder and quant_conv, and 4-D
// convolutions (the last time tap of ours, so both layouts hold the same decoder weights).
enum class Layout { kOurs, kPublished };

struct TinyModelOptions {
  uint64_t seed = 0;
  Layout layout = Layout::kOurs;
  // The real model's dimensions (hidden 4096, 32 DiT blocks, 36 encoder layers, the real VAE), streamed
  // to shards: for benchmarks only (tens of GB); int8_linears as `rgbaq model quantize` would write them.
  bool real_dims = false;
  bool int8_linears = false;
  // Every weights file a header and a hole (zeros, no disk, written in moments): a real-dims model for a
  // GPU benchmark whose session makes its own values (EngineOptions::random_weights).
  bool hollow = false;
  engine::DType dtype = engine::DType::kBF16;  // or kF32
  std::filesystem::path tokenizer_json;        // copied into tokenizer/
};

// The tiny model's dimensions.
engine::TextEncoderConfig tiny_text_encoder_config();
engine::DitConfig tiny_dit_config();
engine::VaeConfig tiny_vae_config();
// The published checkpoint's dimensions (qwen-image-2.1.md); latents_mean/std are the tiny model's.
engine::TextEncoderConfig real_text_encoder_config();
engine::DitConfig real_dit_config();
engine::VaeConfig real_vae_config();

// The whole directory: model_index.json (Turbo sample_sigmas), scheduler/, tokenizer/, text_encoder/
// (two shards and an index), transformer/, vae/. Throws std::runtime_error on I/O failure.
void write_tiny_model(const std::filesystem::path& dir, const TinyModelOptions& options);

// One component, any dimensions (benchmarks use mid-size ones): config.json plus weights in `dir`.
// shard_bytes > 0 streams the weights to shards of about that size (with an index), for real-size
// models; int8_linears writes the Linear weights as int8 with block scales (random, as the rest).
void write_text_encoder(const std::filesystem::path& dir, const engine::TextEncoderConfig& config, uint64_t seed,
                        engine::DType dtype, bool sharded, Layout layout = Layout::kOurs, uint64_t shard_bytes = 0,
                        bool int8_linears = false, bool hollow = false);
void write_dit(const std::filesystem::path& dir, const engine::DitConfig& config, uint64_t seed, engine::DType dtype,
               uint64_t shard_bytes = 0, bool int8_linears = false, bool hollow = false);
void write_vae(const std::filesystem::path& dir, const engine::VaeConfig& config, uint64_t seed, engine::DType dtype,
               Layout layout = Layout::kOurs, bool hollow = false);

// A LoRA for a DiT of `config` in one key format (engine/lora.h): for each of `modules` (Linears named
// as dit_linear_modules names them) A [rank, in] and B [out, rank], BF16, their values a function of the
// seed and the module only, so the three formats of one seed hold the same adapter.
enum class LoraFormat { kDiffusers, kComfyUi, kKohya };
void write_lora(const std::filesystem::path& path, const engine::DitConfig& config, LoraFormat format, int rank,
                std::optional<float> alpha, const std::vector<std::string>& modules, uint64_t seed);

// The test LoRAs for a DiT of `config` into `dir`: style-diffusers, style-comfyui and style-kohya (one
// adapter: rank 4, alpha 2, every Linear) and detail (diffusers, rank 2, no alpha, the blocks' attention
// and MLP), each NAME.safetensors.
void write_tiny_loras(const std::filesystem::path& dir, const engine::DitConfig& config, uint64_t seed = 0);

}  // namespace rgbaq::tools
