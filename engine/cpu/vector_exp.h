#pragma once
// e^x eight floats at a time with AVX2 + FMA, for the kernels whose time goes to exp (attention's
// softmax, the VAE's SiLU); the build targets plain x86-64, so callers compile their loops with
// RGBAQ_AVX2_FMA and take them only where avx2_fma_available() says the CPU has them. Cephes' expf:
// range reduction by ln 2 and a degree-6 polynomial, relative error ~2e-7 (libm's expf costs ~20 cycles
// a value and does not vectorise).
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RGBAQ_HAVE_AVX2_PATH 1
#define RGBAQ_AVX2_FMA __attribute__((target("avx2,fma")))
#else
#define RGBAQ_HAVE_AVX2_PATH 0
#define RGBAQ_AVX2_FMA
#endif

namespace rgbaq::engine::cpu {

// The same polynomial one value at a time, for x in [-87, 88] (clamped): the loops' tails and the
// machines without AVX2.
inline float exp_clamped(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

inline float silu_fast(float v) { return v / (1.0f + exp_clamped(-v)); }

// Tests turn the AVX2 paths off to check the portable ones on the same machine.
inline std::atomic<bool>& avx2_paths_disabled() {
  static std::atomic<bool> disabled{false};
  return disabled;
}

#if RGBAQ_HAVE_AVX2_PATH

inline bool avx2_fma_available() {
  static const bool cpu_has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return cpu_has && !avx2_paths_disabled().load(std::memory_order_relaxed);
}

RGBAQ_AVX2_FMA inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

RGBAQ_AVX2_FMA inline __m256 silu8(__m256 v) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), v));
  return _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

RGBAQ_AVX2_FMA inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

RGBAQ_AVX2_FMA inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

#else

inline bool avx2_fma_available() { return false; }

#endif

}  // namespace rgbaq::engine::cpu
