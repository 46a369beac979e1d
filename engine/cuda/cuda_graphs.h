#pragma once
// The native CUDA backend: the three graphs on one device, one stream per session. At open the weights
// go up once in the session's type (bf16 as stored, or fp32 for --precision fp32); workspaces are sized
// per image size and reused; the host waits only for the velocity and the image. When the weights do
// not fit --gpu-memory, the encoder is uploaded only while it encodes (its outputs are cached) and the
// DiT's blocks stream from pinned host memory. Never run on a GPU yet: see README "Engines".
#include <cuda_runtime.h>

#include <memory>

#include "engine/cpu/dit.h"
#include "engine/cpu/text_encoder.h"
#include "engine/cuda/cuda_dit.h"
#include "engine/cuda/cuda_text_encoder.h"
#include "engine/cuda/cuda_vae.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/engine_options.h"
#include "engine/graphs.h"
#include "engine/model_directory.h"
#include "engine/weight_store.h"

namespace rgbaq::engine::cuda {

class CudaGraphs final : public Graphs {
 public:
  // Throws CudaError naming the device and what did not fit or failed.
  CudaGraphs(const ModelDirectory& model, const EngineOptions& options);
  ~CudaGraphs() override;

  std::string backend_name() const override { return "cuda"; }
  std::string device_description() const override;
  int text_dim() const override { return text_config_.hidden; }
  bool streams_blocks() const { return dit_->streams_blocks(); }
  size_t peak_device_bytes() const { return arena_->peak(); }

 protected:
  Tensor run_encode(std::span<const int32_t> ids) override;
  void run_begin_image(const Tensor& txt_feats, const host::RopeTensors& rope) override;
  const Tensor& run_step(const Tensor& img_tokens, float timestep) override;
  void run_end_image() override;
  void run_set_loras(const LoraSet& set) override;
  Tensor run_decode(const Tensor& latents, const host::ImageSize& size) override;
  void run_reserve(int64_t text_tokens, int64_t image_tokens) override;

 private:
  void load(const ModelDirectory& model, const EngineOptions& options);  // the constructor's work after the stream
  void release() noexcept;                                                // device objects, then the stream
  void use_device() const;
  int device_;
  ElementType type_;
  TextEncoderConfig text_config_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
  std::unique_ptr<Gemm> gemm_;
  WeightStore text_weights_;
  std::unique_ptr<cpu::TextEncoder> text_views_;  // the checked host views, kept when the encoder is not resident
  std::unique_ptr<CudaTextEncoder> encoder_;      // null when it is uploaded per encode
  std::unique_ptr<CudaDit> dit_;
  std::unique_ptr<CudaVae> vae_;
  Tensor vel_;
};

}  // namespace rgbaq::engine::cuda
