#include "engine/cuda/cuda_graphs.h"

#include <algorithm>
#include <cmath>

#include "engine/cpu/vae_decoder.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/weight_plan.h"
#include "engine/cuda/workspace_plan.h"
#include "engine/model/model_config.h"
#include "host/contract_limits.h"

namespace rgbaq::engine::cuda {
CudaGraphs::CudaGraphs(const ModelDirectory& model, const EngineOptions& options)
    : device_(options.device),
      precision_(options.precision),
      // fp8 sessions keep bf16 activations (the fp8 Linears quantize their inputs per token).
      type_(options.precision == Precision::kFp32 ? ElementType::kF32 : ElementType::kBf16),
      formats_{options.precision == Precision::kFp8, options.gpu_int8 == GpuInt8::kKeep, options.gpu_int8 == GpuInt8::kW8A8},
      fused_attention_(options.attention == AttentionKernel::kFused),
      fused_blocks_(options.fused_blocks),
      text_config_(model.text_encoder_config()),
      text_weights_(model.open_weights("text_encoder")) {
  RGBAQ_CUDA_CHECK(cudaSetDevice(device_), device_);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  if (driver / 1000 < runtime / 1000) {  // a newer minor runtime runs on an older driver of its major version
    throw CudaError(device_label(device_) + ": the driver supports CUDA " + std::to_string(driver / 1000) + "." +
                    std::to_string(driver % 1000 / 10) + ", this build needs " + std::to_string(runtime / 1000) + "." +
                    std::to_string(runtime % 1000 / 10) + " (update the driver)");
  }
  RGBAQ_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), device_);
  try {
    load(model, options);
  } catch (...) {
    // No destructor runs for a constructor that throws: free in the same order, then the stream.
    release();
    throw;
  }
}

void CudaGraphs::load(const ModelDirectory& model, const EngineOptions& options) {
  const size_t budget = static_cast<size_t>(options.gpu_memory_gib * 1024.0 * 1024.0 * 1024.0);
  if (formats_.fp8) {
    cudaDeviceProp prop{};
    RGBAQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_), device_);
    if (prop.major * 10 + prop.minor < 89) {
      throw CudaError(device_label(device_) + ": --precision fp8 needs FP8 tensor cores (sm_89 or later); " + prop.name +
                      " is sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + " (use bf16)");
    }
  }
  arena_ = std::make_unique<DeviceArena>(device_, budget);
  gemm_ = std::make_unique<Gemm>(*arena_, stream_);
  linears_ = std::make_unique<LinearRunner>(*arena_, *gemm_, type_, stream_);

  const DitConfig dit_config = model.dit_config();  // its context width checked by ModelDirectory
  // The CPU backend's loaders check every tensor's name, shape and dtype; the device copies come from
  // their views, so both backends run the same checked weights.
  text_views_ = std::make_unique<cpu::TextEncoder>(text_weights_, text_config_);
  const WeightStore dit_weights = model.open_weights("transformer");
  const cpu::Dit dit_views(dit_weights, dit_config);
  const VaeConfig vae_config = model.vae_config();
  const WeightStore vae_weights = model.open_weights("vae");
  auto vae_views = std::make_unique<cpu::VaeDecoder>(vae_weights, vae_config);
  const auto e = static_cast<int64_t>(element_size(type_));
  const SessionWeightBytes planned = session_weight_bytes(model, e, formats_);
  const size_t encoder_bytes = static_cast<size_t>(planned.text_encoder);
  const size_t blocks_bytes = static_cast<size_t>(planned.dit_blocks);
  // Always resident: the DiT's other weights and the VAE's.
  const size_t kept_bytes = static_cast<size_t>(planned.dit_other + planned.vae);
  encoder_bytes_ = encoder_bytes;
  dit_config_ = dit_config;
  dit_int8_ = !report_of(model, "transformer").int8_linears.empty();
  encoder_int8_ = !report_of(model, "text_encoder").int8_linears.empty();
  keeps_int8_ = formats_.keep_int8 && (dit_int8_ || encoder_int8_);
  convrot_ = !report_of(model, "transformer").convrot_linears.empty() || !report_of(model, "text_encoder").convrot_linears.empty();
  // What the session holds beside its weights at the largest render the contract allows (the daemon's
  // workers reserve it at start): weights that fit only without it would run out at the first decode.
  const WorkspaceChoices choices{formats_, dit_int8_, encoder_int8_, options.vae_tiles, fused_attention_, fused_blocks_};
  const size_t reserve = static_cast<size_t>(session_workspace_bytes(text_config_, dit_config, vae_config, e,
                                                                     host::kMaxTextTokens, host::kMaxFullTokens,
                                                                     host::kMaxImageTokens, choices));
  const bool fits = fit_session(planned, dit_config.layers, static_cast<int64_t>(reserve),
                                static_cast<int64_t>(arena_->budget())) == SessionFit::kResident;
  // Short of memory, both give way: the encoder comes up only to encode (16 GB at real dims, freed
  // after) and the DiT's blocks stream, so a 24 GiB card holds the encoder or the DiT's working set.
  const bool stream_blocks = options.force_block_streaming || !fits;
  const bool random = options.random_weights.has_value();
  if (random && stream_blocks) {
    // Streaming and the per-encode upload copy host weights, which random weights do not have.
    throw CudaError(device_label(device_) + ": random weights must stay resident, and " +
                    gib_string(encoder_bytes + blocks_bytes + kept_bytes) + " of weights with " + gib_string(reserve) +
                    " of workspace do not fit the session's " + gib_string(arena_->budget()));
  }
  WeightSource source(*arena_, type_, stream_, formats_, random, options.random_weights.value_or(0));
  dit_ = std::make_unique<CudaDit>(dit_config, &dit_views, source, *linears_, stream_, stream_blocks, fused_attention_,
                                   fused_blocks_);
  vae_ = std::make_unique<CudaVae>(*vae_views, source, *gemm_, stream_, options.vae_tiles);
  vae_views.reset();  // its widened fp32 copies are on the device now
  planned_weight_bytes_ = kept_bytes + (stream_blocks ? 0 : blocks_bytes);
  if (fits && !options.force_block_streaming) {
    encoder_ = std::make_unique<CudaTextEncoder>(text_config_, text_views_.get(), source, *linears_, stream_, fused_attention_);
    text_views_.reset();
    planned_weight_bytes_ += encoder_bytes;
  }
  weight_bytes_ = source.weight_bytes();
}

CudaGraphs::~CudaGraphs() { release(); }

void CudaGraphs::release() noexcept {
  cudaSetDevice(device_);
  if (stream_) cudaStreamSynchronize(stream_);
  encoder_.reset();
  dit_.reset();
  vae_.reset();
  linears_.reset();
  gemm_.reset();
  arena_.reset();
  if (stream_) cudaStreamDestroy(stream_);
  stream_ = nullptr;
}

std::string CudaGraphs::device_description() const {
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device_);
  return std::string(prop.name) + " (device " + std::to_string(device_) + ", sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + gib_string(prop.totalGlobalMem) + "), " +
         precision_name(precision_) + (keeps_int8_ ? ", int8 weights kept" : "") +
         (!convrot_ ? "" : formats_.w8a8 ? ", ConvRot Linears W8A8" : ", ConvRot Linears widened (--gpu-int8 w8a8 keeps them int8)") +
         (fused_attention_ ? ", fused attention" : "") +
         (fused_blocks_ ? ", fused blocks" : "") +
         (dit_ && dit_->streams_blocks() ? ", DiT blocks streamed" : "");
}

// The current device is per host thread, and the daemon's worker is not the thread that opened us.
void CudaGraphs::use_device() const { RGBAQ_CUDA_CHECK(cudaSetDevice(device_), device_); }

Tensor CudaGraphs::run_encode(std::span<const int32_t> ids) {
  use_device();
  if (encoder_) return encoder_->encode(ids);
  // Not resident: up for this prompt, freed after (a sweep's prompts come from the encoder cache).
  WeightSource source(*arena_, type_, stream_, formats_);
  CudaTextEncoder encoder(text_config_, text_views_.get(), source, *linears_, stream_, fused_attention_);
  return encoder.encode(ids);
}

void CudaGraphs::run_begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) {
  use_device();
  dit_->begin_image(txt_feats, rope);
  if (vel_.shape() != Shape{rope.image_tokens, 64}) vel_ = Tensor::zeros(DType::kF32, {rope.image_tokens, 64});
}

const Tensor& CudaGraphs::run_step(const Tensor& img_tokens, float timestep) {
  use_device();
  dit_->step(img_tokens, timestep, vel_.mutable_f32());
  return vel_;
}

void CudaGraphs::run_end_image() { dit_->end_image(); }

void CudaGraphs::run_set_loras(const LoraSet& set) {
  use_device();
  dit_->set_loras(set);
}

Tensor CudaGraphs::run_decode(const Tensor& latents, const host::ImageSize& size) {
  use_device();
  return vae_->decode(latents, size.grid_height(), size.grid_width());
}

}  // namespace rgbaq::engine::cuda

namespace rgbaq::engine::cuda {

int64_t CudaGraphs::encoder_upload_staging() const {
  int64_t most = 0;  // dense and int8-kept Linears go up as they stay
  for (const cpu::TextEncoder::Layer& l : text_views_->layers()) {
    for (const Tensor* t : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
      const bool int8 = t->block_scales() != nullptr;
      if (formats_.of(int8, true) != LinearFormat::kFp8Rows) continue;
      most = std::max(most, fp8_staging_bytes(int8, t->dtype() == DType::kBF16, t->dim(0), t->dim(1)));
    }
  }
  return most;
}

void CudaGraphs::run_reserve(int64_t text_tokens, int64_t image_tokens) {
  use_device();
  dit_->reserve(text_tokens, image_tokens);
  vae_->reserve(image_tokens);
  const auto scratch = linear_scratch(text_config_, dit_config_, static_cast<int64_t>(element_size(type_)), formats_,
                                      dit_int8_, encoder_int8_, std::max(text_tokens, image_tokens), host::kMaxFullTokens,
                                      fused_blocks_);
  linears_->reserve(scratch[0].bytes, scratch[1].bytes, scratch[2].bytes, scratch[3].bytes);
  if (formats_.w8a8) linears_->reserve_w8a8({scratch[4].bytes, scratch[5].bytes, scratch[6].bytes});
  if (encoder_) return encoder_->reserve(host::kMaxFullTokens);
  // Not resident: the encoder comes up for each prompt beside the workspaces held now, its weights, its
  // buffers for the longest prompt, and what making its last Linear holds for a moment.
  const size_t encoder_bytes = encoder_bytes_ +
                               static_cast<size_t>(bytes_of(encoder_workspace(text_config_, static_cast<int64_t>(element_size(type_)),
                                                                              host::kMaxFullTokens, fused_attention_))) +
                               static_cast<size_t>(encoder_upload_staging());
  if (arena_->in_use() + encoder_bytes > arena_->budget()) {
    throw DeviceFault(DeviceFaultKind::kOutOfMemory,
                      device_label(device_) + ": the text encoder's weights and buffers (" + gib_string(encoder_bytes) +
                          ", uploaded for each prompt) do not fit beside the " + gib_string(arena_->in_use()) +
                          " in use at the largest size, within the " + gib_string(arena_->budget()) + " budget");
  }
}

}  // namespace rgbaq::engine::cuda
