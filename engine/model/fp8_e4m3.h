#pragma once
// FP8 E4M3 (the OCP "fn" form Hopper's tensor cores take: 1 sign, 4 exponent bits with bias 7, 3
// mantissa bits; no infinities, S.1111.111 is NaN, the largest finite value is 448), and the per-row
// scaling of `--precision fp8`: each row of a matrix (a Linear weight's output row, an activation's
// token) gets one fp32 scale s = max|x| / 448 and codes q = e4m3(x / s), so x ~= value(q) * s. Written
// once for the host (tests, staged weights) and the device (engine/cuda/kernels.cu quantizes
// activations and uploaded weights with these same functions).
#include <cstdint>
#include <cstring>

#include "engine/elementwise_math.h"

namespace rgbaq::engine::fp8 {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr uint8_t kE4m3Nan = 0x7f;

// The nearest E4M3 code to x, ties to the even code, saturating to +-448 (cuda_fp8.h's satfinite);
// NaN gives NaN. Every step is exact in fp32 (scalings by powers of two, 2m - 1 by Sterbenz), so
// the one rounding is rintf's, to nearest even.
RGBAQ_HOST_DEVICE uint8_t e4m3_from_float(float x) {
  if (x != x) return kE4m3Nan;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);  // the sign bit, -0 included, on host and device alike
  const uint8_t sign = (bits >> 31) ? 0x80 : 0x00;
  const float a = ::fabsf(x);
  if (a >= kE4m3Max) return sign | 0x7e;
  if (a < 0.015625f) {  // below 2^-6: subnormals, steps of 2^-9; 8 steps is the smallest normal, code 0x08
    return sign | static_cast<uint8_t>(::rintf(a * 512.0f));
  }
  int e = 0;
  const float m = ::frexpf(a, &e);  // a = m 2^e, m in [0.5, 1): the exponent field is e - 1 + 7
  const int q = static_cast<int>(::rintf((2.0f * m - 1.0f) * 8.0f));  // 0..8; 8 carries into the exponent
  return sign | static_cast<uint8_t>(((e + 6) << 3) + q);
}

RGBAQ_HOST_DEVICE float e4m3_to_float(uint8_t code) {
  const int exponent = (code >> 3) & 15, mantissa = code & 7;
  if (exponent == 15 && mantissa == 7) return ::nanf("");
  const float v = exponent == 0 ? ::ldexpf(static_cast<float>(mantissa), -9)
                                : ::ldexpf(static_cast<float>(8 + mantissa), exponent - 10);
  return (code & 0x80) ? -v : v;
}

// A row's scale from its largest magnitude; an all-zero row takes 1 (its codes are all zero).
RGBAQ_HOST_DEVICE float row_scale(float max_abs) { return max_abs > 0.0f ? max_abs / kE4m3Max : 1.0f; }

RGBAQ_HOST_DEVICE uint8_t quantized(float x, float scale) { return e4m3_from_float(x / scale); }

// x [rows, cols] fp32 -> codes [rows, cols] and scales [rows].
void quantize_rows(const float* x, int64_t rows, int64_t cols, uint8_t* codes, float* scales);

}  // namespace rgbaq::engine::fp8
