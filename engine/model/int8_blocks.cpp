#include "engine/model/int8_blocks.h"

#include <algorithm>
#include <cmath>

#include "engine/model/dtype.h"

namespace rgbaq::engine {

void quantize_int8_rows(const float* w, int64_t rows, int64_t in, int8_t* q, uint16_t* scales) {
  const int64_t blocks = int8_scale_columns(in);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kInt8Block, c1 = std::min(in, c0 + kInt8Block);
      float amax = 0;
      for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(w[r * in + c]));
      const uint16_t scale_bits = f32_to_bf16(amax / 127.0f);
      scales[r * blocks + b] = scale_bits;
      // Divide by the scale as stored (bf16), so that q * s is the nearest representable value.
      const float scale = bf16_to_f32(scale_bits);
      for (int64_t c = c0; c < c1; ++c) {
        const float v = scale == 0.0f ? 0.0f : std::nearbyint(w[r * in + c] / scale);  // ties to even
        q[r * in + c] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
    }
  }
}

// Runs inside the CPU linear for every tile of every int8 weight: an AVX2 clone where the CPU has it.
// Not under ThreadSanitizer: it instruments the ifunc resolver, which runs before its runtime is up.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
void dequantize_int8_rows(const int8_t* q, const uint16_t* scales, int64_t rows, int64_t in, float* out) {
  const int64_t blocks = int8_scale_columns(in);
  for (int64_t r = 0; r < rows; ++r) {
    const int8_t* qr = q + r * in;
    float* o = out + r * in;
    for (int64_t b = 0; b < blocks; ++b) {
      const float scale = bf16_to_f32(scales[r * blocks + b]);
      const int64_t c0 = b * kInt8Block, c1 = std::min(in, c0 + kInt8Block);
      for (int64_t c = c0; c < c1; ++c) o[c] = static_cast<float>(qr[c]) * scale;
    }
  }
}

}  // namespace rgbaq::engine
