#pragma once
// Weights onto the device once, at session open: in the GEMM type (bf16 as stored, widened to fp32 in
// the parity mode), or fp32 for norms and biases.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/tensor.h"

namespace rgbaq::engine::cuda {

// The bytes of t as `type` (a copy of a BF16 tensor's own bytes when type is bf16).
std::vector<uint8_t> host_bytes(const Tensor& t, ElementType type);
std::vector<uint8_t> host_bytes(const std::vector<float>& values, ElementType type);

DeviceBuffer upload(DeviceArena& arena, const std::vector<uint8_t>& bytes, const std::string& what);
DeviceBuffer upload(DeviceArena& arena, const Tensor& t, ElementType type, const std::string& what);
DeviceBuffer upload(DeviceArena& arena, const std::vector<float>& values, ElementType type, const std::string& what);

// Where a backend's device weights come from: a checkpoint's checked host views, or (benchmarks at real
// dims, where writing a checkpoint would take longer than the run) random values made on the device,
// linears uniform in +-1/sqrt(in), norms 1 +- 0.1.
class WeightSource {
 public:
  WeightSource(DeviceArena& arena, ElementType type, cudaStream_t stream, bool random = false, uint64_t seed = 0)
      : arena_(arena), type_(type), stream_(stream), random_(random), seed_(seed) {}
  bool random() const { return random_; }
  DeviceArena& arena() const { return arena_; }
  ElementType type() const { return type_; }
  // A [out, in] matrix in the GEMM type, from `host` (a tensor or widened values) unless random.
  DeviceBuffer matrix(const Tensor* host, int64_t out, int64_t in, const std::string& what);
  DeviceBuffer matrix(const std::vector<float>* host, int64_t out, int64_t in, const std::string& what);
  // n fp32 values (norm weights, biases); random ones are `centre` +- 0.1.
  DeviceBuffer vector(const std::vector<float>* host, int64_t n, const std::string& what, float centre = 1.0f);

 private:
  DeviceBuffer made(int64_t n, ElementType type, float scale, float centre, const std::string& what);
  DeviceArena& arena_;
  ElementType type_;
  cudaStream_t stream_;
  bool random_;
  uint64_t seed_;
};

}  // namespace rgbaq::engine::cuda
