#pragma once
// How a session opens its backend: which one, and the knobs each understands. A backend ignores the
// knobs that are not its own (cpu: threads; cuda: device, gpu_int8, gpu_memory_gib, vae_tiles,
// attention, fused_blocks), except a precision only cuda computes in (fp8) and --gpu-int8 w8a8, which
// resolve_backend refuses for the others.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "engine/model/component_files.h"

namespace rgbaq::engine {

class LoraCache;

enum class Precision {
  kBf16,  // cuda: bf16 weights and GEMM inputs, fp32 accumulation and residual stream (the default)
  kFp32,  // cuda: fp32 weights and GEMMs, TF32 off: for parity checks against the cpu backend
  // cuda on sm_89 and later: the DiT's blocks' and the encoder's Linear weights FP8 E4M3 with one scale
  // per output row, their inputs quantized per token on the device, FP8 GEMMs into the fp32 stream;
  // everything else as bf16 (engine/model/fp8_e4m3.h). Refused by the other engines and by older devices.
  kFp8,
};

// cuda: what an int8 checkpoint's Linear weights (`rgbaq model quantize`) become on the device.
enum class GpuInt8 {
  kWiden,  // widened to the GEMM type at upload (twice the bytes): the default until kKeep has run on a GPU
  kKeep,   // int8 with their block scales, dequantized per Linear into one reused scratch buffer
  // A ConvRot file's Linears (ComfyUI int8 with convrot) int8 as stored, run as W8A8: inputs rotated and
  // quantized per row on the device, cuBLASLt int8 GEMMs (engine/cuda/w8a8_plan.h). Without it they are
  // widened, (q s) R. Opt-in until measured on a GPU (never run on one yet); the cpu engine refuses it.
  kW8A8,
};

// cuda: how the DiT's and the encoder's attention runs.
enum class AttentionKernel {
  kGemm,   // query chunks through cuBLASLt GEMMs and a softmax kernel (engine/cuda/attention.h): the default
  kFused,  // one fused kernel, no score matrix (engine/cuda/flash_attention.h); bf16 only; never run on a GPU
};

struct EngineOptions {
  std::string backend = "auto";  // auto | cpu | cuda; auto: cuda when a CUDA device is visible, else cpu
  // Single files (ComfyUI's) that replace the model directory's transformer/, text_encoder/, vae/
  // (engine/model/component_files.h); empty: from the directory.
  ComponentFiles components;
  // The tokenizer.json a session takes when there is no model directory (all three components given as
  // files): rgbaq's own installed copy, which the caller finds (common::data_file); unused with a directory.
  std::filesystem::path tokenizer;
  int threads = 0;               // cpu: worker threads, 0 = one per hardware thread
  int device = 0;                // cuda: device ordinal
  Precision precision = Precision::kBf16;
  GpuInt8 gpu_int8 = GpuInt8::kWiden;
  double gpu_memory_gib = 0;     // cuda: the device memory the session may use; 0 = what the device has
  bool force_block_streaming = false;  // cuda: stream the DiT's blocks even when they fit (tests)
  // cuda: decode the VAE tile by tile from an up block on, its workspace within 1 GiB at 1024x1024
  // (engine/vae_tile_plan.h); opt-in until it has run on a GPU. (cpu tiles by its map budget always.)
  bool vae_tiles = false;
  // cuda: every weight random (this seed), made on the device instead of read from the files, whose
  // headers still give the shapes: speed measurements on a hollow model (make_tiny_model --hollow), no
  // 30 GB checkpoint to write. Its images are noise. Refused by the other engines.
  std::optional<uint64_t> random_weights;
  size_t lora_cache_bytes = size_t{1} << 30;  // LoRA adapters kept between renders (engine/lora_cache.h)
  // A LoRA cache the session shares with other sessions (a daemon's workers on one device), or null for
  // one of its own of lora_cache_bytes.
  std::shared_ptr<LoraCache> lora_cache;
  AttentionKernel attention = AttentionKernel::kGemm;  // cuda
  // cuda: each DiT block's Q|K|V and gate|up one GEMM each, and each gated residual with the norm after
  // it one pass (engine/cuda/cuda_dit.h); opt-in until it has run on a GPU.
  bool fused_blocks = false;
};

// What random weights add to a model's identity ("+random-weights-SEED", or nothing), so that neither an
// encoder cache nor an output folder takes their embeddings and images for the model's own.
std::string random_weights_mark(const EngineOptions& options);

// What the precision adds to the text encoder's identity for the encoder cache: "+fp8" (an fp8
// embedding is not a bf16 one), or nothing (bf16 and fp32 embeddings agree within the contract's
// bounds and are shared, as the cpu engine's are). A text encoder with ConvRot Linears
// (`text_encoder_convrot`) computes W8A8 on the cpu and on cuda with --gpu-int8 w8a8, but from its
// widened weights on cuda otherwise: `backend` "cuda" without w8a8 adds "+convrot-widened".
std::string embedding_precision_mark(const EngineOptions& options, const std::string& backend = "",
                                     bool text_encoder_convrot = false);

// "bf16" | "fp32" | "fp8"; throws std::invalid_argument naming the value.
Precision parse_precision(const std::string& name);
const char* precision_name(Precision p);
// "widen" | "keep"; throws std::invalid_argument naming the value.
GpuInt8 parse_gpu_int8(const std::string& name);
const char* gpu_int8_name(GpuInt8 g);
// "gemm" | "fused"; throws std::invalid_argument naming the value.
AttentionKernel parse_attention_kernel(const std::string& name);
const char* attention_kernel_name(AttentionKernel a);
// --vae-tiles, --fused-blocks: "on" | "off"; throws std::invalid_argument naming the value.
bool parse_on_off(const std::string& value);

}  // namespace rgbaq::engine
