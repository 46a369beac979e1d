#pragma once
// The engine's elementwise math, written once: the CPU kernels (engine/cpu/kernels.*) and the CUDA
// kernels (engine/cuda/kernels.cu) both call these, so the host tests (tests/engine/elementwise_math_test)
// exercise the exact code a GPU runs, on machines without one. Plain C++ without nvcc; under nvcc each
// function is also a device function. fp32 in and out, as the CPU reference computes.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define RGBAQ_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RGBAQ_HOST_DEVICE inline
#endif

namespace rgbaq::engine::math {

RGBAQ_HOST_DEVICE float silu(float v) { return v / (1.0f + ::expf(-v)); }

// GELU with the tanh approximation (PyTorch's approximate="tanh").
RGBAQ_HOST_DEVICE float gelu_tanh(float v) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * v * (1.0f + ::tanhf(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
}

// SwiGLU: silu(gate) * up.
RGBAQ_HOST_DEVICE float swiglu(float gate, float up) { return silu(gate) * up; }

// 1 / sqrt(mean(x^2) + eps) from the sum of squares of n values (accumulated in double on the CPU).
RGBAQ_HOST_DEVICE float rms_inverse(double sum_squares, double n, double eps) {
  return static_cast<float>(1.0 / ::sqrt(sum_squares / n + eps));
}

// One RMSNorm output: weight_offset 0 for a plain RMSNorm, 1 for a zero-centred one (scale w + 1).
RGBAQ_HOST_DEVICE float rms_normed(float x, float inverse, float weight, float weight_offset) {
  return x * inverse * (weight + weight_offset);
}

// One LayerNorm output without affine parameters.
RGBAQ_HOST_DEVICE float layer_normed(float x, float mean, float inverse) { return (x - mean) * inverse; }

// The DiT's modulation (no shift): h * (1 + scale).
RGBAQ_HOST_DEVICE float modulated(float h, float scale) { return h * (1.0f + scale); }

// The DiT's gated residual: x + gate * delta (the gate already through tanh).
RGBAQ_HOST_DEVICE float gated_residual(float x, float gate, float delta) { return x + gate * delta; }

// One RoPE pair (a, b) turned by the angle whose cosine and sine are c and s.
RGBAQ_HOST_DEVICE void rope_pair(float& a, float& b, float c, float s) {
  const float a0 = a, b0 = b;
  a = a0 * c - b0 * s;
  b = b0 * c + a0 * s;
}

// The VAE's RMS_norm scale of one pixel: sqrt(C) / max(||x||, 1e-12) from the sum of squares over C.
RGBAQ_HOST_DEVICE float channel_rms_scale(double sum_squares, float root_channels) {
  const double norm = ::sqrt(sum_squares);
  return root_channels / static_cast<float>(norm > 1e-12 ? norm : 1e-12);
}

}  // namespace rgbaq::engine::math
