#pragma once
// The fused rotate-and-quantize pass of a W8A8 Linear (convrot_kernels.cu) as its schedule and its host
// twin: a block holds one input row in shared memory; log4(G) stages follow, each applying
// convrot::h4_butterfly to the cols / 4 quads of that stage's stride (independent, so any thread may take
// any quad); then the row's max |x| gives its scale (convrot::row_scale) and every value its code
// (convrot::quantized). The butterflies, the stage order and the scale rule are engine/model/convrot.h's,
// so the device's codes and scales equal convrot_rotate_rows + quantize_rows_int8 bit for bit. The
// epilogue's per-element math is w8a8_output. No CUDA types here: the host tests include it.
#include <cmath>
#include <cstdint>

#include "engine/elementwise_math.h"
#include "engine/model/convrot.h"

namespace rgbaq::engine::cuda {

// The first index (in the row) of quad t of a stage of `stride` (1, 4, 16, ... < group): the quad is
// that index + 0, stride, 2 stride, 3 stride, all within one group of `group` values.
RGBAQ_HOST_DEVICE int64_t convrot_quad_start(int64_t t, int group, int stride) {
  const int64_t per_group = group / 4;
  const int64_t g = t / per_group, j = t % per_group;
  return g * group + (j / stride) * 4 * stride + j % stride;
}

// One output of a W8A8 Linear from its int32 product: acc s_x s_w (+ beta y, beta != 0). The product
// is taken row scale first, so an all-zero row (scale 1e-30, acc 0) stays 0.
RGBAQ_HOST_DEVICE float w8a8_output(int32_t acc, float x_scale, float w_scale, float beta, float y) {
  const float v = (static_cast<float>(acc) * x_scale) * w_scale;
  return beta != 0.0f ? ::fmaf(beta, y, v) : v;
}

// The host twin of the kernel: x [rows, cols] (row stride ld; fp32, a bf16 input widened) -> codes q
// [rows, cols] and scales [rows], with the kernel's schedule. `row` is cols floats of scratch.
inline void convrot_quantize_rows_host(const float* x, int64_t rows, int64_t cols, int64_t ld, int group, float* row,
                                       int8_t* q, float* scales) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i) row[i] = x[r * ld + i];
    for (int stride = 1; stride < group; stride *= 4) {
      for (int64_t t = 0; t < cols / 4; ++t) {
        const int64_t i = convrot_quad_start(t, group, stride);
        convrot::h4_butterfly(row[i], row[i + stride], row[i + 2 * stride], row[i + 3 * stride]);
      }
    }
    float max_abs = 0.0f;
    for (int64_t i = 0; i < cols; ++i) max_abs = std::fmax(max_abs, std::fabs(row[i]));
    const float s = convrot::row_scale(max_abs);
    scales[r] = s;
    for (int64_t i = 0; i < cols; ++i) q[r * cols + i] = convrot::quantized(row[i], s);
  }
}

}  // namespace rgbaq::engine::cuda
