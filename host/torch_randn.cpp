#include "host/torch_randn.h"

#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>

// Built with -ffp-contract=off (host/CMakeLists.txt): every fused multiply-add below is explicit,
// where GCC contracted the AVX2 wheel's code (-O3 -mavx2 -mfma); every other product is rounded.
// Which steps were fused was established against torch's published outputs
// (tests/host/torch_randn_test.cpp).

namespace rgbaq::host {
namespace {

float f(double v) { return static_cast<float>(v); }

// Cephes logf as log256_ps evaluates it, one lane.
float cephes_log(float x) {
  if (!(x > 0.0f)) return std::nanf("");
  const float kMinNormPos = std::bit_cast<float>(0x00800000u);
  if (x < kMinNormPos) x = kMinNormPos;
  uint32_t bits = std::bit_cast<uint32_t>(x);
  int exponent = static_cast<int>(bits >> 23) - 0x7f;
  // keep the mantissa, force the exponent so that x is in [0.5, 1)
  x = std::bit_cast<float>((bits & ~0x7f800000u) | std::bit_cast<uint32_t>(0.5f));
  float e = static_cast<float>(exponent) + 1.0f;
  if (x < f(0.707106781186547524)) {
    e = e - 1.0f;
    x = (x - 1.0f) + x;
  } else {
    x = x - 1.0f;
  }
  const float z = x * x;
  float y = f(7.0376836292E-2);
  y = std::fma(y, x, f(-1.1514610310E-1));
  y = std::fma(y, x, f(1.1676998740E-1));
  y = std::fma(y, x, f(-1.2420140846E-1));
  y = std::fma(y, x, f(1.4249322787E-1));
  y = std::fma(y, x, f(-1.6668057665E-1));
  y = std::fma(y, x, f(2.0000714765E-1));
  y = std::fma(y, x, f(-2.4999993993E-1));
  y = std::fma(y, x, f(3.3333331174E-1));
  y = y * x;
  y = std::fma(y, z, e * f(-2.12194440e-4));
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  x = std::fma(e, 0.693359375f, x);
  return x;
}

// Cephes sinf/cosf as sincos256_ps evaluates them, one lane.
void cephes_sincos(float x, float& s, float& c) {
  const uint32_t sign_sin_in = std::bit_cast<uint32_t>(x) & 0x80000000u;
  x = std::fabs(x);
  float y = x * f(1.27323954473516);
  int32_t j = static_cast<int32_t>(y);  // truncation, as cvttps
  j = (j + 1) & ~1;
  y = static_cast<float>(j);
  const uint32_t swap_sign_sin = static_cast<uint32_t>(j & 4) << 29;
  const bool use_sin_poly_for_sin = (j & 2) == 0;  // poly_mask
  const uint32_t sign_cos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  const uint32_t sign_sin = sign_sin_in ^ swap_sign_sin;

  // extended precision modular arithmetic: x = ((x - y*DP1) - y*DP2) - y*DP3
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, f(-2.4187564849853515625e-4), x);
  x = std::fma(y, f(-3.77489497744594108e-8), x);

  const float z = x * x;
  float yc = f(2.443315711809948E-005);
  yc = std::fma(yc, z, f(-1.388731625493765E-003));
  yc = std::fma(yc, z, f(4.166664568298827E-002));
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;

  float ys = f(-1.9515295891E-4);
  ys = std::fma(ys, z, f(8.3321608736E-3));
  ys = std::fma(ys, z, f(-1.6666654611E-1));
  ys = ys * z;
  ys = std::fma(ys, x, x);

  const float sin_v = use_sin_poly_for_sin ? ys : yc;
  const float cos_v = use_sin_poly_for_sin ? yc : ys;
  s = std::bit_cast<float>(std::bit_cast<uint32_t>(sin_v) ^ sign_sin);
  c = std::bit_cast<float>(std::bit_cast<uint32_t>(cos_v) ^ sign_cos);
}

}  // namespace

TorchCpuGenerator::TorchCpuGenerator(uint64_t seed) : index_(kN) {
  state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);
  for (int i = 1; i < kN; ++i) {
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
}

uint32_t TorchCpuGenerator::next_u32() {
  if (index_ >= kN) {
    constexpr int kM = 397;
    for (int i = 0; i < kN; ++i) {
      const uint32_t y = (state_[i] & 0x80000000u) | (state_[(i + 1) % kN] & 0x7fffffffu);
      state_[i] = state_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

float TorchCpuGenerator::next_uniform() {
  return static_cast<float>(next_u32() & 0xffffffu) * (1.0f / 16777216.0f);
}

void torch_normal_fill_16(float* block) {
  const float two_pi = 6.2831855f;
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - block[j];
    const float u2 = block[j + 8];
    const float radius = std::sqrt(-2.0f * cephes_log(u1));
    const float theta = two_pi * u2;
    float s, c;
    cephes_sincos(theta, s, c);
    // torch stores fmadd(n, std = 1, mean = 0): n itself, except that -0 becomes +0.
    block[j] = radius * c + 0.0f;
    block[j + 8] = radius * s + 0.0f;
  }
}

std::vector<float> torch_randn(uint64_t seed, size_t n) {
  if (n < 16) {
    // torch takes another path (one Box-Muller pair per element) below 16; the contract never needs it.
    throw std::invalid_argument("torch_randn: n = " + std::to_string(n) + " is below 16, which is not supported");
  }
  TorchCpuGenerator gen(seed);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) data[i] = gen.next_uniform();
  for (size_t i = 0; i + 16 <= n; i += 16) torch_normal_fill_16(data.data() + i);
  if (n % 16 != 0) {
    float* tail = data.data() + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = gen.next_uniform();
    torch_normal_fill_16(tail);
  }
  return data;
}

}  // namespace rgbaq::host
