#include "engine/model/convrot.h"

#include <cmath>
#include <stdexcept>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rgbaq::engine {
namespace {

#if defined(__SSE2__)
// h4_butterfly on four lanes at once: the same operations in the same order, so the same bits.
inline void h4_butterfly4(__m128& a, __m128& b, __m128& c, __m128& d) {
  const __m128 h = _mm_mul_ps(_mm_set1_ps(0.5f), _mm_add_ps(_mm_add_ps(a, b), _mm_add_ps(c, d)));
  const __m128 a0 = a, b0 = b;
  a = _mm_sub_ps(h, d);
  b = _mm_sub_ps(h, c);
  c = _mm_sub_ps(h, b0);
  d = _mm_sub_ps(h, a0);
}

// convrot::rotate_group for group >= 16 with SSE2 (x86-64's baseline): the stride-1 stage transposes
// four quads so their first, second, ... values share a register; the wider stages take four j at once.
void rotate_group_sse2(float* v, int group) {
  for (int base = 0; base < group; base += 16) {
    __m128 q0 = _mm_loadu_ps(v + base), q1 = _mm_loadu_ps(v + base + 4);
    __m128 q2 = _mm_loadu_ps(v + base + 8), q3 = _mm_loadu_ps(v + base + 12);
    _MM_TRANSPOSE4_PS(q0, q1, q2, q3);
    h4_butterfly4(q0, q1, q2, q3);
    _MM_TRANSPOSE4_PS(q0, q1, q2, q3);
    _mm_storeu_ps(v + base, q0), _mm_storeu_ps(v + base + 4, q1);
    _mm_storeu_ps(v + base + 8, q2), _mm_storeu_ps(v + base + 12, q3);
  }
  for (int stride = 4; stride < group; stride *= 4) {
    for (int base = 0; base < group; base += 4 * stride) {
      for (int j = base; j < base + stride; j += 4) {
        __m128 a = _mm_loadu_ps(v + j), b = _mm_loadu_ps(v + j + stride);
        __m128 c = _mm_loadu_ps(v + j + 2 * stride), d = _mm_loadu_ps(v + j + 3 * stride);
        h4_butterfly4(a, b, c, d);
        _mm_storeu_ps(v + j, a), _mm_storeu_ps(v + j + stride, b);
        _mm_storeu_ps(v + j + 2 * stride, c), _mm_storeu_ps(v + j + 3 * stride, d);
      }
    }
  }
}
#endif

void rotate_group(float* v, int group) {
#if defined(__SSE2__)
  if (group >= 16) return rotate_group_sse2(v, group);
#endif
  convrot::rotate_group(v, group);
}

}  // namespace

bool is_convrot_group(int64_t g) {
  if (g < 4) return false;
  while (g % 4 == 0) g /= 4;
  return g == 1;
}

void convrot_rotate_rows(float* x, int64_t rows, int64_t cols, int64_t ld, int group) {
  if (!is_convrot_group(group) || cols % group != 0) {
    throw std::invalid_argument("convrot: group size " + std::to_string(group) +
                                " is not a power of four >= 4 dividing the width " + std::to_string(cols));
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t g0 = 0; g0 < cols; g0 += group) rotate_group(row + g0, group);
  }
}

void quantize_rows_int8(const float* x, int64_t rows, int64_t cols, int64_t ld, int8_t* q, float* scales) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * ld;
    int8_t* out = q + r * cols;
    int64_t i = 0;
    float max_abs = 0.0f;
#if defined(__SSE2__)
    // MAXPS returns its second operand when the first is NaN, as std::fmax skips a NaN.
    const __m128 sign = _mm_set1_ps(-0.0f);
    __m128 m4 = _mm_setzero_ps();
    for (; i + 4 <= cols; i += 4) m4 = _mm_max_ps(_mm_andnot_ps(sign, _mm_loadu_ps(row + i)), m4);
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, m4);
    for (float v : lanes) max_abs = std::fmax(max_abs, v);
#endif
    for (; i < cols; ++i) max_abs = std::fmax(max_abs, std::fabs(row[i]));
    const float s = convrot::row_scale(max_abs);
    scales[r] = s;
    i = 0;
#if defined(__SSE2__)
    // convrot::quantized four at a time: NaN -> 0, clamp, then CVTPS2DQ rounds to nearest even (the
    // default MXCSR mode, as rintf); clamping first gives the same code as rounding first.
    const __m128 s4 = _mm_set1_ps(s), hi = _mm_set1_ps(convrot::kInt8Max), lo = _mm_set1_ps(-convrot::kInt8Max);
    for (; i + 16 <= cols; i += 16) {
      __m128i w[4];
      for (int t = 0; t < 4; ++t) {
        __m128 v = _mm_div_ps(_mm_loadu_ps(row + i + 4 * t), s4);
        v = _mm_and_ps(v, _mm_cmpord_ps(v, v));
        w[t] = _mm_cvtps_epi32(_mm_max_ps(_mm_min_ps(v, hi), lo));
      }
      const __m128i packed = _mm_packs_epi16(_mm_packs_epi32(w[0], w[1]), _mm_packs_epi32(w[2], w[3]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
    }
#endif
    for (; i < cols; ++i) out[i] = convrot::quantized(row[i], s);
  }
}

}  // namespace rgbaq::engine
