#pragma once
// Element-wise and row-wise kernels of the CPU engine, fp32 in and out. Rows are independent, so the
// pool splits them without changing any result. Their per-element math is engine/elementwise_math.h,
// which the CUDA kernels share.
#include <cmath>
#include <cstdint>

#include "engine/cpu/thread_pool.h"
#include "engine/elementwise_math.h"

namespace rgbaq::engine::cpu {

// out = x * rsqrt(mean(x^2) + eps) * (weight + weight_offset), per row of `dim` values. weight_offset
// is 0 for a plain RMSNorm, 1 for a zero-centred one. In place when out == x.
void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float weight_offset, float eps, float* out,
              ThreadPool& pool);

// LayerNorm without affine parameters: (x - mean) * rsqrt(var + eps) per row.
void layer_norm(const float* x, int64_t rows, int64_t dim, float eps, float* out, ThreadPool& pool);

// gate = silu(gate) * up, over n values.
void swiglu(float* gate, const float* up, int64_t n, ThreadPool& pool);

// x = gelu_tanh(x).
void gelu_tanh(float* x, int64_t n, ThreadPool& pool);

inline float silu(float v) { return math::silu(v); }

// h *= 1 + scale: the DiT's modulation (no shift), over one row of n values.
inline void modulate_row(float* h, const float* scale, int64_t n) {
  for (int64_t i = 0; i < n; ++i) h[i] = math::modulated(h[i], scale[i]);
}

// x += gate * delta, the gate already through tanh, over one row of n values.
inline void gated_add_row(float* x, const float* gate, const float* delta, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = math::gated_residual(x[i], gate[i], delta[i]);
}

// Rotate-half RoPE in place (Qwen3 text stack): for each head, pairs (j, j + d/2) rotate by the angle
// of frequency j. cos/sin are [rows, d/2]. x has rows of `heads * d` values at stride ldx.
void rope_rotate_half(float* x, int64_t rows, int64_t ldx, int heads, int head_dim, const float* cos, const float* sin,
                      ThreadPool& pool);

// Interleaved-pair RoPE in place (the DiT): out[2j] = x[2j] c_j - x[2j+1] s_j, out[2j+1] = x[2j] s_j +
// x[2j+1] c_j, j < d/2; cos/sin are [rows, d/2].
void rope_interleaved(float* x, int64_t rows, int64_t ldx, int heads, int head_dim, const float* cos, const float* sin,
                      ThreadPool& pool);

}  // namespace rgbaq::engine::cpu
