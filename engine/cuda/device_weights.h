#pragma once
// Weights onto the device once, at session open: in the GEMM type (bf16 as stored, widened to fp32 in
// the parity mode), or fp32 for norms and biases.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/device_linear.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/cuda/linear_format.h"
#include "engine/model/tensor.h"

namespace rgbaq::engine::cuda {

// The bytes of t as `type` (a copy of a BF16 tensor's own bytes when type is bf16).
std::vector<uint8_t> host_bytes(const Tensor& t, ElementType type);
// A copy of t's stored bytes as they are (int8 values, their bf16 scales).
std::vector<uint8_t> raw_bytes(const Tensor& t);
std::vector<uint8_t> host_bytes(const std::vector<float>& values, ElementType type);

DeviceBuffer upload(DeviceArena& arena, const std::vector<uint8_t>& bytes, const std::string& what);
DeviceBuffer upload(DeviceArena& arena, const Tensor& t, ElementType type, const std::string& what);
DeviceBuffer upload(DeviceArena& arena, const std::vector<float>& values, ElementType type, const std::string& what);

// Where a backend's device weights come from: a checkpoint's checked host views, or (benchmarks at real
// dims, where writing a checkpoint would take longer than the run) random values made on the device,
// linears uniform in +-1/sqrt(in), norms 1 +- 0.1. Linears take the formats asked for (linear_format.h).
class WeightSource {
 public:
  WeightSource(DeviceArena& arena, ElementType type, cudaStream_t stream, LinearFormats formats = {}, bool random = false,
               uint64_t seed = 0)
      : arena_(arena), type_(type), stream_(stream), formats_(formats), random_(random), seed_(seed) {}
  bool random() const { return random_; }
  DeviceArena& arena() const { return arena_; }
  ElementType type() const { return type_; }
  // The format of a Linear stored as `host` (its dtype: random weights keep the file header's; null, as
  // a benchmark without a model passes, is not int8); `block`: a DiT block's or an encoder layer's.
  LinearFormat format_of(const Tensor* host, bool block) const {
    return formats_.of(host && host->block_scales() != nullptr, block, host && host->quant() == WeightQuant::kInt8ConvRot);
  }
  // A Linear [out, in] in its format: dense as `matrix`; int8 (blocks or ConvRot) as stored; fp8 made on
  // the device from the stored values (the host's fp8::quantize_rows bit for bit). `host` may be null
  // only when random.
  DeviceLinear linear(const Tensor* host, int64_t out, int64_t in, bool block, const std::string& what);
  // Linears [out, in] each, one format (require_one_format), stacked by rows into one [n out, in]
  // (device_linear.h's staged_stack, on the device): each made as `linear` makes it, then copied in.
  DeviceLinear stacked_linear(const std::vector<const Tensor*>& hosts, int64_t out, int64_t in, bool block,
                              const std::string& what);
  // The bytes of every weight made so far (weight_plan.h counts the same).
  size_t weight_bytes() const { return weight_bytes_; }
  // A [out, in] matrix in the GEMM type, from `host` (a tensor or widened values) unless random.
  DeviceBuffer matrix(const Tensor* host, int64_t out, int64_t in, const std::string& what);
  DeviceBuffer matrix(const std::vector<float>* host, int64_t out, int64_t in, const std::string& what);
  // fp32 values that are configuration, not weights (the VAE's latent statistics): as given even when random.
  DeviceBuffer constants(const std::vector<float>& values, const std::string& what) {
    return counted(upload(arena_, values, ElementType::kF32, what));
  }
  // n fp32 values (norm weights, biases); random ones are `centre` +- 0.1.
  DeviceBuffer vector(const std::vector<float>* host, int64_t n, const std::string& what, float centre = 1.0f);

 private:
  DeviceBuffer made(int64_t n, ElementType type, float scale, float centre, const std::string& what);
  DeviceBuffer counted(DeviceBuffer b) {
    weight_bytes_ += b.bytes();
    return b;
  }
  void fp8_rows(const Tensor* host, int64_t out, int64_t in, DeviceLinear& l, const std::string& what);
  DeviceArena& arena_;
  ElementType type_;
  cudaStream_t stream_;
  LinearFormats formats_;
  bool random_;
  uint64_t seed_;
  size_t weight_bytes_ = 0;
};

}  // namespace rgbaq::engine::cuda
