#pragma once
// What the gpu tests that call the CUDA backend's pieces directly share: a skip where no device (or no
// device of the compute capability a test needs) is visible, and copies to and from device buffers.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/device_memory.h"
#include "engine/cuda/gemm.h"
#include "engine/model/dtype.h"

namespace rgbaq::engine::cuda {

// The device's compute capability as major * 10 + minor, or 0 (with why) when there is none.
inline int device_sm(std::string* why) {
  if (visible_devices(why) == 0) return 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 0;
  return prop.major * 10 + prop.minor;
}

#define SKIP_WITHOUT_DEVICE(min_sm)                                                                   \
  do {                                                                                                \
    std::string why;                                                                                  \
    const int sm = device_sm(&why);                                                                   \
    if (sm == 0) GTEST_SKIP() << "no CUDA device: " << why;                                           \
    if (sm < (min_sm)) GTEST_SKIP() << "sm_" << sm << " is older than this test needs (sm_" << (min_sm) << ")"; \
  } while (0)

template <typename T>
inline std::vector<T> download(const DeviceBuffer& b, size_t n) {
  std::vector<T> out(n);
  check(cudaMemcpy(out.data(), b.get(), n * sizeof(T), cudaMemcpyDeviceToHost), 0, "download");
  return out;
}

template <typename T>
inline DeviceBuffer upload_values(DeviceArena& arena, const std::vector<T>& v) {
  DeviceBuffer b = arena.allocate(v.size() * sizeof(T), "test values");
  check(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), 0, "upload");
  return b;
}

// Activation rows x uploaded as `type` (F32 as they are, or BF16 rounded from them); `held` becomes the
// values the device holds (x, or x through bf16), what the host reference starts from.
inline DeviceBuffer upload_rows(DeviceArena& arena, ElementType type, const std::vector<float>& x, std::vector<float>& held) {
  held = x;
  if (type == ElementType::kF32) return upload_values(arena, x);
  std::vector<uint16_t> bits(x.size());
  for (size_t i = 0; i < x.size(); ++i) bits[i] = f32_to_bf16(x[i]), held[i] = bf16_to_f32(bits[i]);
  return upload_values(arena, bits);
}

}  // namespace rgbaq::engine::cuda
