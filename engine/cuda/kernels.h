#pragma once
// The CUDA backend's own kernels, launched on the session's stream. Each reads fp32 and writes its
// output in the GEMM input type (`out_type`: bf16, or fp32 in the parity mode) unless it says fp32.
// Their math is engine/elementwise_math.h, the same functions the CPU kernels call. Compiled in CI
// for sm_80 and sm_90; which of them have run on a GPU, kernels.cu says.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/gemm.h"

namespace rgbaq::engine::cuda {

// out = in as out_type, n values.
void convert(const float* in, int64_t n, void* out, ElementType out_type, cudaStream_t s);
// out[c, r] = in[r, c] (in has row stride ld_in) as out_type: [rows, cols] -> [cols, rows].
void transpose(const float* in, int64_t rows, int64_t cols, int64_t ld_in, void* out, ElementType out_type, cudaStream_t s);

// RMSNorm per row of `dim`: x * rsqrt(mean(x^2) + eps) * (weight + weight_offset).
void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float weight_offset, float eps, void* out,
              ElementType out_type, cudaStream_t s);

// Per row and head of in [rows, heads * d] (row stride ld_in): RMSNorm over the head's d values with
// `weight`, then RoPE with cos/sin [rows, d / 2] (interleaved pairs (2j, 2j+1), or halves (j, j + d/2)),
// into out (row stride ld_out).
void head_norm_rope(const float* in, int64_t ld_in, int64_t rows, int heads, int d, const float* weight, float eps,
                    const float* cos, const float* sin, bool interleaved, void* out, int64_t ld_out, ElementType out_type,
                    cudaStream_t s);

// h = LayerNorm(x) * (1 + scale), scale = text_scale for rows below text_rows, else image_scale.
void layer_norm_modulate(const float* x, int64_t rows, int64_t dim, float eps, const float* text_scale,
                         const float* image_scale, int64_t text_rows, void* out, ElementType out_type, cudaStream_t s);

// x += gate * delta (fp32), gate by row as in layer_norm_modulate.
void gated_residual(float* x, const float* delta, int64_t rows, int64_t dim, const float* text_gate,
                    const float* image_gate, int64_t text_rows, cudaStream_t s);

// The DiT's fused passes (--fused-blocks): gated_residual, then layer_norm_modulate of the rows just
// updated into out (the scales picked by scale_text_rows), in one pass: the same values, bit for bit,
// as the two kernels. swiglu over rows of [gate | up] each `half` wide, as one GEMM writes them, into
// out [rows, half]. convert of a [rows, cols] window of in (row stride ld_in) into out (ld_out).
void gated_residual_norm(float* x, const float* delta, int64_t rows, int64_t dim, const float* text_gate,
                         const float* image_gate, int64_t text_rows, float eps, const float* text_scale,
                         const float* image_scale, int64_t scale_text_rows, void* out, ElementType out_type, cudaStream_t s);
void swiglu_rows(const float* gate_up, int64_t rows, int64_t half, void* out, ElementType out_type, cudaStream_t s);
void convert_rows(const float* in, int64_t ld_in, int64_t rows, int64_t cols, void* out, int64_t ld_out, ElementType out_type,
                  cudaStream_t s);

// out = silu(gate) * up; out = gelu_tanh(in); out = silu(in).
void swiglu(const float* gate, const float* up, int64_t n, void* out, ElementType out_type, cudaStream_t s);
void gelu_tanh(const float* in, int64_t n, void* out, ElementType out_type, cudaStream_t s);
void silu(const float* in, int64_t n, void* out, ElementType out_type, cudaStream_t s);
// v[dim + i] and v[3 dim + i] through tanh (the DiT's gates), fp32 in place.
void tanh_gates(float* modulation, int64_t dim, cudaStream_t s);

// x[i] = widen(table[ids[i]]), rows of dim; the table in `table_type`.
void embed_rows(const void* table, ElementType table_type, const int32_t* ids, int64_t rows, int64_t dim, float* x,
                cudaStream_t s);

// Softmax over each row of scores [batch, rows, cols] (fp32, already scaled, rows ld apart, ld >= cols),
// into probs (out_type, the same layout; columns cols..ld are not written).
// Row r of the chunk is query q0 + r: it sees keys < q0 + r + 1 when q0 + r < causal_rows, else all.
void masked_softmax(const float* scores, int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t q0,
                    int64_t causal_rows, void* probs, ElementType out_type, cudaStream_t s);

// VAE pieces, channel-major maps [C, H, W] in fp32.
// tokens [h w, 64] -> [64, h, w] with z * std + mean per channel.
void unpack_latents(const float* tokens, int64_t pixels, const float* mean, const float* std, float* out, cudaStream_t s);
// Per pixel over channels: x / max(||x||, 1e-12) * sqrt(C) * gamma, then SiLU when asked.
void channel_rms_norm(const float* x, int64_t channels, int64_t pixels, const float* gamma, bool then_silu, void* out,
                      ElementType out_type, cudaStream_t s);
// The 3x3 im2col of the window rows [y0, y1) x columns [x0, x1) of x [C, H, W] (out_type) into col
// [C * 9, (y1 - y0) * (x1 - x0)], zero padded at the map's edges.
void im2col3x3(const void* x, ElementType type, int64_t channels, int64_t height, int64_t width, int64_t y0, int64_t y1,
               int64_t x0, int64_t x1, void* col, cudaStream_t s);
// out[c, p] = bias[c] (fp32), for a GEMM to accumulate onto.
void fill_bias(float* out, const float* bias, int64_t channels, int64_t pixels, cudaStream_t s);
// Nearest 2x upsampling of x [C, H, W] into out [C, 2H, 2W] (out_type).
void upsample2x(const float* x, int64_t channels, int64_t height, int64_t width, void* out, ElementType out_type,
                cudaStream_t s);
// y [C, 2H, 2W] += DupUp3D(x [Cin, H, W]) for the first frame (temporal factor ft).
void add_dup_up(float* y, int64_t channels, int64_t height2, int64_t width2, const float* x, int64_t in_channels,
                int ft, cudaStream_t s);
// y += x, n fp32 values; and clamp to [-1, 1].
void add(float* y, const float* x, int64_t n, cudaStream_t s);
void clamp_unit(float* x, int64_t n, cudaStream_t s);

// p[i] = offset + scale * u, u uniform in [-1, 1) from a hash of (seed, i): benchmark weights made on
// the device.
void fill_random(void* p, ElementType type, int64_t n, uint64_t seed, float scale, float offset, cudaStream_t s);

// Weight formats (linear_format.h). out [rows, in] (out_type, or fp32 when out_type is kF32) = q * s
// of an int8 Linear with its bf16 block scales (engine/model/int8_blocks.h).
void dequantize_int8(const int8_t* q, const uint16_t* scales, int64_t rows, int64_t in, void* out, ElementType out_type,
                     cudaStream_t s);
// Each row of x [rows, cols] (`type`) as FP8 E4M3 codes with its fp32 scale (engine/model/fp8_e4m3.h: the
// host's fp8::quantize_rows, bit for bit): Linear weights per output row, activations per token.
void quantize_fp8_rows(const void* x, ElementType type, int64_t rows, int64_t cols, uint8_t* codes, float* scales,
                       cudaStream_t s);
// y[r, o] = x_scales[r] w_scales[o] acc[r, o] (+ beta y[r, o] when beta != 0): the per-row scales of an
// FP8 GEMM that ran unscaled (Gemm::linear_fp8's fallback). acc may be y when beta is 0.
void scale_fp8_product(const float* acc, const float* x_scales, const float* w_scales, int64_t rows, int64_t out, float* y,
                       float beta, cudaStream_t s);
// Random int8 values uniform in [-127, 127] from a hash of (seed, i), as fill_random's.
void fill_random_int8(int8_t* p, int64_t n, uint64_t seed, cudaStream_t s);

// Launches made by this process: every kernel above and every cuBLASLt matmul (Gemm::run counts one,
// whatever kernels cuBLASLt runs inside it). For benchmarks' launches per step; relaxed, never reset.
void count_launch();
uint64_t launch_count();

// Raises CudaError naming `what` when a launch failed (the launches' configuration errors).
void check_launch(int device, const char* what);

}  // namespace rgbaq::engine::cuda
