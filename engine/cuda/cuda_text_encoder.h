#pragma once
// The Qwen3 text stack on the GPU: ids -> the residual stream after the last layer (before the final
// norm), with the fp32 residual stream the contract asks for (GEMMs in the session's type, fp32
// accumulation; the GEMMs add into the stream with beta = 1; each Linear in its format through LinearRunner). Causal GQA attention through
// attention.h. Its weights are uploaded at construction and freed with the object, so a session short
// of memory can drop it after encoding; its work buffers grow to the longest prompt and stay, so a
// resident encoder allocates nothing per prompt. Never run on a GPU yet.
#include <cuda_runtime.h>

#include <span>
#include <vector>

#include "engine/cpu/text_encoder.h"
#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/device_weights.h"
#include "engine/cuda/gemm.h"

namespace rgbaq::engine::cuda {

class CudaTextEncoder {
 public:
  // Weights from `source`: encoder's checked views, or random (encoder null).
  // `fused_attention`: flash_attention.h's kernel instead of attention.h's GEMMs (bf16 only).
  CudaTextEncoder(const TextEncoderConfig& config, const cpu::TextEncoder* encoder, WeightSource& source,
                  LinearRunner& linears, cudaStream_t stream, bool fused_attention = false);
  Tensor encode(std::span<const int32_t> ids);
  // Allocates the work buffers of a prompt of `tokens` (Lfull) now; throws a DeviceFault when they do not fit.
  void reserve(int64_t tokens);

 private:
  struct Layer {
    DeviceBuffer input_norm, post_norm, q_norm, k_norm;
    DeviceLinear q, k, v, o, gate, up, down;
  };
  TextEncoderConfig config_;
  DeviceArena& arena_;
  LinearRunner& linears_;
  Gemm& gemm_;  // linears_'s, for the attention
  cudaStream_t stream_;
  ElementType type_;
  bool fused_attention_ = false;
  DeviceBuffer embed_;
  std::vector<Layer> layers_;
  void ensure_work(int64_t tokens);
  std::vector<DeviceBuffer> work_;  // workspace_plan.h's encoder buffers, grown to the longest prompt seen
};

}  // namespace rgbaq::engine::cuda
