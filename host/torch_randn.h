#pragma once
// Bit-exact reproduction of torch.randn(n, generator=torch.Generator("cpu").manual_seed(seed)) for
// float32, as computed by the x86-64 AVX2 wheel (MT19937, 24-bit uniforms, Box-Muller over blocks of
// 16 with the Cephes log/sincos polynomials of ATen's avx_mathfun.h).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rgbaq::host {

// torch's CPU generator: std::mt19937 seeded with the low 32 bits of the 64-bit seed.
class TorchCpuGenerator {
 public:
  explicit TorchCpuGenerator(uint64_t seed);
  uint32_t next_u32();
  // uniform_real_distribution<float>(0, 1): (random() & 0xFFFFFF) * 2^-24, exact.
  float next_uniform();

 private:
  static constexpr int kN = 624;
  uint32_t state_[kN];
  int index_;
};

// The flat randn draw (memory order), n >= 16; n % 16 != 0 follows torch's tail rule.
std::vector<float> torch_randn(uint64_t seed, size_t n);

// One Box-Muller block of 16 in place, exactly as normal_fill_16_AVX2 (mean 0, std 1).
void torch_normal_fill_16(float* block);

}  // namespace rgbaq::host
