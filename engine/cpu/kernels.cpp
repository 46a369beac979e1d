#include "engine/cpu/kernels.h"

#include <cmath>

#include "engine/cpu/vector_exp.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr int64_t kRowGrain = 8;
constexpr int64_t kElementGrain = 1 << 14;

}  // namespace

void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float weight_offset, float eps, float* out,
              ThreadPool& pool) {
  pool.parallel_for(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      double sum = 0;
      for (int64_t i = 0; i < dim; ++i) sum += static_cast<double>(xr[i]) * xr[i];
      const float inv = math::rms_inverse(sum, static_cast<double>(dim), eps);
      for (int64_t i = 0; i < dim; ++i) o[i] = math::rms_normed(xr[i], inv, weight[i], weight_offset);
    }
  });
}

void layer_norm(const float* x, int64_t rows, int64_t dim, float eps, float* out, ThreadPool& pool) {
  pool.parallel_for(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * dim;
      float* o = out + r * dim;
      double sum = 0, sq = 0;
      for (int64_t i = 0; i < dim; ++i) sum += xr[i];
      const double mean = sum / static_cast<double>(dim);
      for (int64_t i = 0; i < dim; ++i) sq += (xr[i] - mean) * (xr[i] - mean);
      const float inv = math::rms_inverse(sq, static_cast<double>(dim), eps);
      const float m = static_cast<float>(mean);
      for (int64_t i = 0; i < dim; ++i) o[i] = math::layer_normed(xr[i], m, inv);
    }
  });
}

#if RGBAQ_HAVE_AVX2_PATH
// SiLU's exp eight at a time (libm's expf does not vectorise).
RGBAQ_AVX2_FMA void swiglu_avx2(float* gate, const float* up, int64_t i0, int64_t i1) {
  int64_t i = i0;
  for (; i + 8 <= i1; i += 8) {
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(silu8(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i)));
  }
  for (; i < i1; ++i) gate[i] = silu_fast(gate[i]) * up[i];
}
#endif

void swiglu(float* gate, const float* up, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kElementGrain, [&](int64_t i0, int64_t i1) {
#if RGBAQ_HAVE_AVX2_PATH
    if (avx2_fma_available()) return swiglu_avx2(gate, up, i0, i1);
#endif
    for (int64_t i = i0; i < i1; ++i) gate[i] = math::swiglu(gate[i], up[i]);
  });
}

void gelu_tanh(float* x, int64_t n, ThreadPool& pool) {
  pool.parallel_for(n, kElementGrain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) x[i] = math::gelu_tanh(x[i]);
  });
}

namespace {

// RoPE in place: each head's value pairs (first, second) rotate by their frequency's angle. The
// layouts differ only in which values pair up.
template <bool kInterleaved>
void rope(float* x, int64_t rows, int64_t ldx, int heads, int head_dim, const float* cos, const float* sin,
          ThreadPool& pool) {
  const int half = head_dim / 2;
  pool.parallel_for(rows, kRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* c = cos + r * half;
      const float* s = sin + r * half;
      for (int h = 0; h < heads; ++h) {
        float* v = x + r * ldx + static_cast<int64_t>(h) * head_dim;
        for (int j = 0; j < half; ++j) {
          const int first = kInterleaved ? 2 * j : j, second = kInterleaved ? 2 * j + 1 : j + half;
          math::rope_pair(v[first], v[second], c[j], s[j]);
        }
      }
    }
  });
}

}  // namespace

void rope_rotate_half(float* x, int64_t rows, int64_t ldx, int heads, int head_dim, const float* cos, const float* sin,
                      ThreadPool& pool) {
  rope<false>(x, rows, ldx, heads, head_dim, cos, sin, pool);
}

void rope_interleaved(float* x, int64_t rows, int64_t ldx, int heads, int head_dim, const float* cos, const float* sin,
                      ThreadPool& pool) {
  rope<true>(x, rows, ldx, heads, head_dim, cos, sin, pool);
}

}  // namespace rgbaq::engine::cpu
