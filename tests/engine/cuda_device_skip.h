#pragma once
// The gpu tests that call the CUDA backend's pieces directly skip, with the reason, where no device (or
// none of the compute capability they need) is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>

#include "engine/cuda/cuda_check.h"

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
    if (sm < (min_sm)) GTEST_SKIP() << "sm_" << sm << " has no FP8 tensor cores (needs sm_" << (min_sm) << ")"; \
  } while (0)

}  // namespace rgbaq::engine::cuda
