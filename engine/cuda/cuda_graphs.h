#pragma once
// The native CUDA backend: the three graphs on one device, one stream per session. At open the weights
// go up once in the session's type (bf16 as stored, or fp32 for --precision fp32), the Linears in
// their formats (an int8 model's kept int8 with --gpu-int8 keep; the big ones fp8 with --precision
// fp8, on sm_89 and later); workspaces are sized
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
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/engine_options.h"
#include "engine/graphs.h"
#include "engine/model/model_directory.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine::cuda {

class CudaGraphs final : public Graphs {
 public:
  // Throws CudaError naming the device and what did not fit or failed.
  CudaGraphs(const ModelDirectory& model, const EngineOptions& options);
  ~CudaGraphs() override;

  std::string backend_name() const override { return "cuda"; }
  std::string precision() const override { return precision_name(precision_); }
  std::string device_description() const override;
  int text_dim() const override { return text_config_.hidden; }
  bool streams_blocks() const { return dit_->streams_blocks(); }
  uint64_t device_peak_bytes() const override { return arena_->peak(); }
  // The bytes of the weights made on the device at open, by the uploads' own count, and what
  // weight_plan.h planned for them (the encoder's left out when it comes up per prompt, the DiT's
  // blocks when they stream): equal unless the plan is wrong.
  size_t weight_bytes() const { return weight_bytes_; }
  size_t planned_weight_bytes() const { return planned_weight_bytes_; }

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
  // The most device memory one encoder Linear's upload holds beside the weights made before it (fp8's
  // staging: fp8_staging_bytes), for the per-prompt encoder's fit check.
  int64_t encoder_upload_staging() const;
  int device_;
  Precision precision_;
  ElementType type_;
  LinearFormats formats_;
  bool fused_attention_;  // --attention fused
  bool fused_blocks_;     // --fused-blocks on
  bool dit_int8_ = false, encoder_int8_ = false;  // some of their Linears are stored int8
  bool keeps_int8_ = false;                       // and stay int8 on the device
  bool convrot_ = false;                          // some Linears are ConvRot (W8A8 with --gpu-int8 w8a8, else widened)
  size_t encoder_bytes_ = 0;  // the encoder's weights as planned, for the per-prompt upload's check
  size_t weight_bytes_ = 0, planned_weight_bytes_ = 0;
  TextEncoderConfig text_config_;
  DitConfig dit_config_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceArena> arena_;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<LinearRunner> linears_;
  WeightStore text_weights_;
  std::unique_ptr<cpu::TextEncoder> text_views_;  // the checked host views, kept when the encoder is not resident
  std::unique_ptr<CudaTextEncoder> encoder_;      // null when it is uploaded per encode
  std::unique_ptr<CudaDit> dit_;
  std::unique_ptr<CudaVae> vae_;
  Tensor vel_;
};

}  // namespace rgbaq::engine::cuda
