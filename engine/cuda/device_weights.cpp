#include "engine/cuda/device_weights.h"

#include <cmath>
#include <cstring>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"
#include "engine/dtype.h"

namespace rgbaq::engine::cuda {

std::vector<uint8_t> host_bytes(const std::vector<float>& values, ElementType type) {
  std::vector<uint8_t> bytes(values.size() * element_size(type));
  if (type == ElementType::kF32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  } else {
    auto* out = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < values.size(); ++i) out[i] = f32_to_bf16(values[i]);
  }
  return bytes;
}

std::vector<uint8_t> host_bytes(const Tensor& t, ElementType type) {
  if (type == ElementType::kBf16 && t.dtype() == DType::kBF16) {
    const auto* p = static_cast<const uint8_t*>(t.data());
    return {p, p + t.nbytes()};
  }
  return host_bytes(t.to_f32_vector(), type);
}

DeviceBuffer upload(DeviceArena& arena, const std::vector<uint8_t>& bytes, const std::string& what) {
  DeviceBuffer b = arena.allocate(bytes.size(), what);
  check(cudaMemcpy(b.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), arena.device(),
        ("cudaMemcpy of " + what).c_str());
  // A pageable cudaMemcpy may return before its DMA has landed, and it runs on the legacy default
  // stream, which the session's non-blocking streams do not wait for: finish it before any kernel reads.
  check(cudaStreamSynchronize(nullptr), arena.device(), ("cudaMemcpy of " + what + " (waiting for it)").c_str());
  return b;
}

DeviceBuffer upload(DeviceArena& arena, const Tensor& t, ElementType type, const std::string& what) {
  return upload(arena, host_bytes(t, type), what);
}

DeviceBuffer upload(DeviceArena& arena, const std::vector<float>& values, ElementType type, const std::string& what) {
  return upload(arena, host_bytes(values, type), what);
}

DeviceBuffer WeightSource::made(int64_t n, ElementType type, float scale, float centre, const std::string& what) {
  DeviceBuffer b = arena_.allocate(static_cast<size_t>(n) * element_size(type), what);
  fill_random(b.get(), type, n, seed_++ * 0x100000001b3ull, scale, centre, stream_);
  check_launch(arena_.device(), "fill_random");
  return b;
}

DeviceBuffer WeightSource::matrix(const Tensor* host, int64_t out, int64_t in, const std::string& what) {
  if (random_) return made(out * in, type_, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f, what);
  return upload(arena_, *host, type_, what);
}

DeviceBuffer WeightSource::matrix(const std::vector<float>* host, int64_t out, int64_t in, const std::string& what) {
  if (random_) return made(out * in, type_, 1.0f / std::sqrt(static_cast<float>(in)), 0.0f, what);
  return upload(arena_, *host, type_, what);
}

DeviceBuffer WeightSource::vector(const std::vector<float>* host, int64_t n, const std::string& what, float centre) {
  if (random_) return made(n, ElementType::kF32, 0.1f, centre, what);
  return upload(arena_, *host, ElementType::kF32, what);
}

}  // namespace rgbaq::engine::cuda
