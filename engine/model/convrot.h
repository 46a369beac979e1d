#pragma once
// ConvRot (ComfyUI's `int8_tensorwise` with `"convrot": true`; stable-diffusion.cpp docs/int8_convrot.md):
// a Linear's input width is cut into groups of G = 4^n features; each group is multiplied by R_G, the
// normalized Kronecker power of H4 = [[1,1,1,-1],[1,1,-1,1],[1,-1,1,1],[-1,1,1,1]] / 2 (orthogonal and
// symmetric, so R R = I). The file stores round(W R / s_w) per output row; at run time each input row is
// rotated the same way and quantized to int8 with one scale a row, so x W^T = (x R)(W R)^T is an int8
// product. The per-element pieces are written once for the host and the device (engine/cuda shares them).
//
// The quantization rule, as ComfyUI's writer has it (comfy_kitchen's quantize_int8_rowwise, the row-wise
// rule the ConvRot weight writer calls after rotating in fp32): scale = max(absmax / 127, 1e-30) in fp32,
// q = clamp(round(x / scale)) with torch.round (ties to even) and a true division. An all-zero row (or one
// whose absmax / 127 is below 1e-30) therefore gets the scale 1e-30 and all-zero codes, never a 0 scale
// and never a NaN. stable-diffusion.cpp's docs give the same absmax / 127 rule and clamp for its runtime
// activations (its ggml CPU op sits in a submodule our mirror lacks, so its zero-row case was not read;
// the 1e-30 floor is ComfyUI's). Codes are clamped to +-127 (the docs' and this project's contract);
// comfy_kitchen clamps to [-128, 127], which differs only if x / scale rounds past 127, and it cannot:
// |x| / (absmax / 127) exceeds 127 by an ulp at most. The GEMM takes -128 exactly if a file holds it.
#include <cstdint>

#include "engine/elementwise_math.h"

namespace rgbaq::engine::convrot {

inline constexpr float kInt8Max = 127.0f;
inline constexpr float kMinScale = 1e-30f;  // ComfyUI's clamp(min=1e-30) on the scale

// A row's scale from its largest magnitude.
RGBAQ_HOST_DEVICE float row_scale(float max_abs) {
  const float s = max_abs / kInt8Max;
  return s > kMinScale ? s : kMinScale;
}

// One code: round half to even (rintf in the default rounding mode), clamped to +-127. A NaN input (a
// broken activation) gives 0 rather than an undefined conversion.
RGBAQ_HOST_DEVICE int8_t quantized(float x, float scale) {
  const float q = ::rintf(x / scale);
  if (!(q == q)) return 0;
  return static_cast<int8_t>(q > kInt8Max ? kInt8Max : (q < -kInt8Max ? -kInt8Max : q));
}

// x <- x H4 for the four values a, b, c, d (H4 symmetric, so also H4 x): with h = (a + b + c + d) / 2 the
// outputs are h - d, h - c, h - b, h - a. T is float (the engine) or double (the ComfyUI writer's float64
// rotation); for float the operations are those of the float-only form, so the same bits.
template <typename T>
RGBAQ_HOST_DEVICE void h4_butterfly(T& a, T& b, T& c, T& d) {
  const T h = T(0.5) * ((a + b) + (c + d));
  const T a0 = a, b0 = b;
  a = h - d;
  b = h - c;
  c = h - b0;
  d = h - a0;
}

// One group of G = 4^n contiguous values, in place: H4 along each base-4 digit of the index (stride 1,
// 4, 16, ...), which is the Kronecker power's action; each stage is normalized, so the whole is R_G.
template <typename T>
RGBAQ_HOST_DEVICE void rotate_group(T* v, int group) {
  for (int stride = 1; stride < group; stride *= 4) {
    for (int base = 0; base < group; base += 4 * stride) {
      for (int j = base; j < base + stride; ++j) h4_butterfly(v[j], v[j + stride], v[j + 2 * stride], v[j + 3 * stride]);
    }
  }
}

}  // namespace rgbaq::engine::convrot

namespace rgbaq::engine {

// A power of four >= 4 (4, 16, 64, 256, ...).
bool is_convrot_group(int64_t g);

// The widest input a ConvRot Linear may have: its int8 products accumulate in int32 lanes
// (engine/cpu/int8_gemm.h), so files are refused past it at open, and so are larger groups.
inline constexpr int64_t kMaxConvRotWidth = int64_t{1} << 16;

// x [rows, cols] with row stride ld, in place: x <- x R, R block-diagonal with R_group blocks. `group`
// must be a convrot group dividing cols (throws std::invalid_argument naming the values otherwise).
void convrot_rotate_rows(float* x, int64_t rows, int64_t cols, int64_t ld, int group);

// x [rows, cols] (row stride ld) -> q [rows, cols] contiguous int8 codes and scales [rows], by
// convrot::row_scale and convrot::quantized.
void quantize_rows_int8(const float* x, int64_t rows, int64_t cols, int64_t ld, int8_t* q, float* scales);

}  // namespace rgbaq::engine
