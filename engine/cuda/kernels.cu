// The CUDA backend's kernels (see kernels.h). Simple, memory-bound kernels: the GEMMs carry the FLOPs.
// Norms use one block per row and a shared-memory reduction; elementwise kernels a grid-stride loop,
// or, where an element's indices would take divisions (the VAE's maps, the fused passes), a grid of
// rows (ROW_LOOP). The kernels of 2026-11-30 passed the gpu tests on an H200 then; the row grids, the
// fused passes and the weight formats' kernels have never run on a GPU.
#include <cuda_bf16.h>

#include <algorithm>
#include <atomic>

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"
#include "engine/elementwise_math.h"
#include "engine/model/fp8_e4m3.h"
#include "engine/model/int8_blocks.h"

namespace rgbaq::engine::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;

__device__ __forceinline__ void store(float* p, float v) { *p = v; }
__device__ __forceinline__ void store(bf16* p, float v) { *p = __float2bfloat16_rn(v); }
__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const bf16* p) { return __bfloat162float(*p); }

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 65535 * 8 ? (b > 0 ? b : 1) : 65535 * 8);
}

// A launch over a [rows, cols] index space (ROW_LOOP, COL_LOOP): blocks of kThreads, x a row's columns
// (a multiple of 32, no wider than the row needs), y as many rows as that leaves room for, so a narrow
// row (a tile's crop, a small map) leaves no thread idle; grids past 65535 blocks loop.
struct RowLaunch {
  dim3 grid, block;
};
RowLaunch row_launch(int64_t rows, int64_t cols) {
  const int64_t x = std::clamp<int64_t>((cols + 31) / 32 * 32, 32, kThreads), y = kThreads / x;
  const auto blocks = [](int64_t n, int64_t per) { return static_cast<unsigned>(std::clamp<int64_t>((n + per - 1) / per, 1, 65535)); };
  return {dim3(blocks(cols, x), blocks(rows, y)), dim3(static_cast<unsigned>(x), static_cast<unsigned>(y))};
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += partial[w];
  return total;
}

__device__ float block_max(float v) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float m = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) m = fmaxf(m, partial[w]);
  return m;
}

#define GRID_STRIDE(i, n) for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); i += int64_t{gridDim.x} * blockDim.x)
// A [rows, cols] index space on row_launch: the y threads stride the rows, the x threads a row's
// columns, so an element's indices need no division (a row's are worked out once per thread).
#define ROW_LOOP(r, rows) \
  for (int64_t r = blockIdx.y * int64_t{blockDim.y} + threadIdx.y; r < (rows); r += int64_t{gridDim.y} * blockDim.y)
#define COL_LOOP(c, cols) for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < (cols); c += int64_t{gridDim.x} * blockDim.x)

template <typename T>
__global__ void convert_kernel(const float* in, int64_t n, T* out) {
  GRID_STRIDE(i, n) store(out + i, in[i]);
}

template <typename T>
__global__ void transpose_kernel(const float* in, int64_t rows, int64_t cols, int64_t ld, T* out) {
  GRID_STRIDE(i, rows * cols) {
    const int64_t c = i / rows, r = i % rows;  // consecutive threads write consecutive outputs
    store(out + i, in[r * ld + c]);
  }
}

template <typename T>
__global__ void rms_norm_kernel(const float* x, int64_t dim, const float* weight, float offset, float eps, T* out) {
  const float* xr = x + blockIdx.x * dim;
  float sum = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i] * xr[i];
  const float inv = math::rms_inverse(block_sum(sum), static_cast<double>(dim), eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) store(out + blockIdx.x * dim + i, math::rms_normed(xr[i], inv, weight[i], offset));
}

// One warp per (row, head).
template <typename T>
__global__ void head_norm_rope_kernel(const float* in, int64_t ld_in, int64_t rows, int heads, int d, const float* weight,
                                      float eps, const float* cos, const float* sin, bool interleaved, T* out, int64_t ld_out) {
  const int64_t task = blockIdx.x * int64_t{blockDim.x / 32} + threadIdx.x / 32;
  if (task >= rows * heads) return;
  const int lane = threadIdx.x % 32;
  const int64_t r = task / heads;
  const int h = static_cast<int>(task % heads);
  const float* v = in + r * ld_in + int64_t{h} * d;
  float sum = 0;
  for (int i = lane; i < d; i += 32) sum += v[i] * v[i];
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float inv = math::rms_inverse(sum, d, eps);
  const int half = d / 2;
  T* o = out + r * ld_out + int64_t{h} * d;
  for (int j = lane; j < half; j += 32) {
    const int first = interleaved ? 2 * j : j, second = interleaved ? 2 * j + 1 : j + half;
    float a = math::rms_normed(v[first], inv, weight[first], 0.0f), b = math::rms_normed(v[second], inv, weight[second], 0.0f);
    math::rope_pair(a, b, cos[r * half + j], sin[r * half + j]);
    store(o + first, a);
    store(o + second, b);
  }
}

// One row of layer_norm_modulate by the whole block (the fused kernel below shares it, bit for bit).
template <typename T>
__device__ void layer_norm_modulate_row(const float* xr, int64_t dim, float eps, const float* scale, T* out) {
  float sum = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i];
  const float mean = block_sum(sum) / static_cast<float>(dim);
  float sq = 0;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) sq += (xr[i] - mean) * (xr[i] - mean);
  const float inv = math::rms_inverse(block_sum(sq), static_cast<double>(dim), eps);
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) store(out + i, math::modulated(math::layer_normed(xr[i], mean, inv), scale[i]));
}

template <typename T>
__global__ void layer_norm_modulate_kernel(const float* x, int64_t dim, float eps, const float* text_scale,
                                           const float* image_scale, int64_t text_rows, T* out) {
  const int64_t r = blockIdx.x;
  layer_norm_modulate_row(x + r * dim, dim, eps, r < text_rows ? text_scale : image_scale, out + r * dim);
}

__global__ void gated_residual_kernel(float* x, const float* delta, int64_t rows, int64_t dim, const float* text_gate,
                                      const float* image_gate, int64_t text_rows) {
  GRID_STRIDE(i, rows * dim) {
    const int64_t r = i / dim, c = i % dim;
    x[i] = math::gated_residual(x[i], (r < text_rows ? text_gate : image_gate)[c], delta[i]);
  }
}

// One block per row: the residual update, then the next norm over the row just written. Each thread
// reads back only the values it wrote itself, so no barrier is needed between the two.
template <typename T>
__global__ void gated_residual_norm_kernel(float* x, const float* delta, int64_t dim, const float* text_gate,
                                           const float* image_gate, int64_t text_rows, float eps, const float* text_scale,
                                           const float* image_scale, int64_t scale_text_rows, T* out) {
  const int64_t r = blockIdx.x;
  float* xr = x + r * dim;
  const float* dr = delta + r * dim;
  const float* gate = r < text_rows ? text_gate : image_gate;
  for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) xr[i] = math::gated_residual(xr[i], gate[i], dr[i]);
  layer_norm_modulate_row(xr, dim, eps, r < scale_text_rows ? text_scale : image_scale, out + r * dim);
}

template <typename T>
__global__ void swiglu_kernel(const float* gate, const float* up, int64_t n, T* out) {
  GRID_STRIDE(i, n) store(out + i, math::swiglu(gate[i], up[i]));
}
// Rows of [gate | up] (each `half` wide) as one GEMM wrote them, on row_launch.
template <typename T>
__global__ void swiglu_rows_kernel(const float* gate_up, int64_t rows, int64_t half, T* out) {
  ROW_LOOP(r, rows) {
    const float* g = gate_up + r * 2 * half;
    COL_LOOP(c, half) store(out + r * half + c, math::swiglu(g[c], g[half + c]));
  }
}
template <typename T>
__global__ void convert_rows_kernel(const float* in, int64_t ld_in, int64_t rows, int64_t cols, int64_t ld_out, T* out) {
  ROW_LOOP(r, rows) COL_LOOP(c, cols) store(out + r * ld_out + c, in[r * ld_in + c]);
}
template <typename T>
__global__ void gelu_kernel(const float* in, int64_t n, T* out) {
  GRID_STRIDE(i, n) store(out + i, math::gelu_tanh(in[i]));
}
template <typename T>
__global__ void silu_kernel(const float* in, int64_t n, T* out) {
  GRID_STRIDE(i, n) store(out + i, math::silu(in[i]));
}
__global__ void tanh_gates_kernel(float* m, int64_t dim) {
  GRID_STRIDE(i, dim) {
    m[dim + i] = tanhf(m[dim + i]);
    m[3 * dim + i] = tanhf(m[3 * dim + i]);
  }
}

template <typename T>
__global__ void embed_kernel(const T* table, const int32_t* ids, int64_t rows, int64_t dim, float* x) {
  GRID_STRIDE(i, rows * dim) x[i] = load(table + int64_t{ids[i / dim]} * dim + i % dim);
}

template <typename T>
__global__ void softmax_kernel(const float* scores, int64_t rows, int64_t cols, int64_t ld, int64_t q0, int64_t causal_rows,
                               T* probs) {
  const int64_t row = blockIdx.x;  // over batch * rows
  const int64_t q = q0 + row % rows;
  const int64_t visible = q < causal_rows ? (q + 1 < cols ? q + 1 : cols) : cols;
  const float* s = scores + row * ld;
  T* p = probs + row * ld;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < visible; c += blockDim.x) m = fmaxf(m, s[c]);
  m = block_max(m);
  float sum = 0;
  for (int64_t c = threadIdx.x; c < visible; c += blockDim.x) sum += expf(s[c] - m);
  const float inv = 1.0f / block_sum(sum);
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) store(p + c, c < visible ? expf(s[c] - m) * inv : 0.0f);  // expf, not __expf: fp32 parity
}

__global__ void unpack_kernel(const float* tokens, int64_t pixels, const float* mean, const float* std, float* out) {
  GRID_STRIDE(i, 64 * pixels) {
    const int64_t c = i / pixels, p = i % pixels;
    out[i] = tokens[p * 64 + c] * std[c] + mean[c];
  }
}

template <typename T>
__global__ void channel_rms_kernel(const float* x, int64_t channels, int64_t pixels, const float* gamma, bool then_silu, T* out) {
  const float root_c = sqrtf(static_cast<float>(channels));
  GRID_STRIDE(p, pixels) {
    double sum = 0;
    for (int64_t c = 0; c < channels; ++c) sum += static_cast<double>(x[c * pixels + p]) * x[c * pixels + p];
    const float scale = math::channel_rms_scale(sum, root_c);
    for (int64_t c = 0; c < channels; ++c) {
      const float v = x[c * pixels + p] * scale * gamma[c];
      store(out + c * pixels + p, then_silu ? math::silu(v) : v);
    }
  }
}

template <typename T>
__global__ void im2col_kernel(const T* x, int64_t channels, int64_t height, int64_t width, int64_t y0, int64_t y1, int64_t x0,
                              int64_t x1, T* col) {
  const int64_t window = x1 - x0, strip = y1 - y0;
  ROW_LOOP(r, channels * 9 * strip) {  // r = (c * 9 + tap) * strip + the strip's row py
    // 32-bit division: r < the strip's elements, within kVaeColumnBudget (im2col3x3 checks).
    const uint32_t r32 = static_cast<uint32_t>(r), row = r32 / static_cast<uint32_t>(strip);
    const int64_t py = r32 - row * static_cast<uint32_t>(strip), c = row / 9, tap = row - c * 9, ky = tap / 3, kx = tap - ky * 3;
    const int64_t yy = y0 + py + ky - 1;
    const bool row_inside = yy >= 0 && yy < height;
    const T* in = x + (row_inside ? (c * height + yy) * width : 0);
    T* out = col + r * window;  // (c * 9 + tap) * strip * window + py * window
    COL_LOOP(px, window) {
      const int64_t xx = x0 + px + kx - 1;
      out[px] = row_inside && xx >= 0 && xx < width ? in[xx] : T(0.0f);
    }
  }
}

__global__ void fill_bias_kernel(float* out, const float* bias, int64_t channels, int64_t pixels) {
  ROW_LOOP(c, channels) COL_LOOP(p, pixels) out[c * pixels + p] = bias[c];
}

template <typename T>
__global__ void upsample_kernel(const float* x, int64_t channels, int64_t height, int64_t width, T* out) {
  const int64_t h2 = 2 * height, w2 = 2 * width;
  ROW_LOOP(r, channels * h2) {  // r = c * h2 + yy
    const int64_t c = r / h2, yy = r - c * h2;
    const float* in = x + (c * height + yy / 2) * width;
    COL_LOOP(xx, w2) store(out + r * w2 + xx, in[xx >> 1]);
  }
}

__global__ void dup_up_kernel(float* y, int64_t channels, int64_t h2, int64_t w2, const float* x, int64_t in_channels, int ft) {
  const int64_t repeats = channels * ft * 4 / in_channels, h = h2 / 2, w = w2 / 2;
  ROW_LOOP(r, channels * h2) {  // r = o * h2 + yy; the source channel of an even and an odd column
    const int64_t o = r / h2, yy = r - o * h2, c = ((o * ft + ft - 1) * 2 + yy % 2) * 2;
    const float* in[2] = {x + ((c / repeats) * h + yy / 2) * w, x + (((c + 1) / repeats) * h + yy / 2) * w};
    COL_LOOP(xx, w2) y[r * w2 + xx] += in[xx & 1][xx >> 1];
  }
}

__global__ void add_kernel(float* y, const float* x, int64_t n) {
  GRID_STRIDE(i, n) y[i] += x[i];
}
__global__ void clamp_kernel(float* x, int64_t n) {
  GRID_STRIDE(i, n) x[i] = fminf(1.0f, fmaxf(-1.0f, x[i]));
}

// u uniform in [-1, 1) from a hash of (seed, i): splitmix64.
__device__ __forceinline__ float hashed_unit(uint64_t seed, int64_t i) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__global__ void fill_random_kernel(int64_t n, uint64_t seed, float scale, float offset, T* p) {
  GRID_STRIDE(i, n) store(p + i, offset + scale * hashed_unit(seed, i));
}

__global__ void fill_random_int8_kernel(int8_t* p, int64_t n, uint64_t seed) {
  GRID_STRIDE(i, n) p[i] = static_cast<int8_t>(rintf(127.0f * hashed_unit(seed, i)));
}

// Rows by blockIdx.y (strided past 65535), columns by x: no division per element but the block index.
template <typename T>
__global__ void dequantize_int8_kernel(const int8_t* q, const uint16_t* scales, int64_t rows, int64_t in, T* out) {
  const int64_t blocks = (in + kInt8Block - 1) / kInt8Block;
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    for (int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; c < in; c += int64_t{gridDim.x} * blockDim.x) {
      const float scale = __uint_as_float(static_cast<uint32_t>(scales[r * blocks + c / kInt8Block]) << 16);
      store(out + r * in + c, static_cast<float>(q[r * in + c]) * scale);
    }
  }
}

// One block per row: its largest magnitude (an exact maximum, as the host's loop), then the codes.
template <typename T>
__global__ void quantize_fp8_rows_kernel(const T* x, int64_t cols, uint8_t* codes, float* scales) {
  const T* xr = x + blockIdx.x * cols;
  float m = 0;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, fabsf(load(xr + i)));
  const float scale = fp8::row_scale(block_max(m));
  if (threadIdx.x == 0) scales[blockIdx.x] = scale;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) codes[blockIdx.x * cols + i] = fp8::quantized(load(xr + i), scale);
}

// Rows by blockIdx.y, so no division per element.
__global__ void scale_fp8_product_kernel(const float* acc, const float* x_scales, const float* w_scales, int64_t rows,
                                         int64_t out, float* y, float beta) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float xs = x_scales[r];
    for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < out; o += int64_t{gridDim.x} * blockDim.x) {
      float v = xs * w_scales[o] * acc[r * out + o];
      if (beta != 0.0f) v += beta * y[r * out + o];  // never reads y when beta is 0 (it may hold NaN)
      y[r * out + o] = v;
    }
  }
}

std::atomic<uint64_t> launches{0};

}  // namespace

void count_launch() { launches.fetch_add(1, std::memory_order_relaxed); }
uint64_t launch_count() { return launches.load(std::memory_order_relaxed); }

#define DISPATCH(type, kernel, grid, block, stream, out, ...)                                               \
  do {                                                                                                     \
    if ((type) == ElementType::kBf16)                                                                      \
      count_launch(), kernel<bf16><<<(grid), (block), 0, (stream)>>>(__VA_ARGS__, static_cast<bf16*>(out));                \
    else                                                                                                   \
      count_launch(), kernel<float><<<(grid), (block), 0, (stream)>>>(__VA_ARGS__, static_cast<float*>(out));              \
  } while (0)

void convert(const float* in, int64_t n, void* out, ElementType t, cudaStream_t s) {
  DISPATCH(t, convert_kernel, blocks_for(n), kThreads, s, out, in, n);
}

void transpose(const float* in, int64_t rows, int64_t cols, int64_t ld, void* out, ElementType t, cudaStream_t s) {
  DISPATCH(t, transpose_kernel, blocks_for(rows * cols), kThreads, s, out, in, rows, cols, ld);
}

void rms_norm(const float* x, int64_t rows, int64_t dim, const float* weight, float offset, float eps, void* out,
              ElementType t, cudaStream_t s) {
  if (rows == 0) return;
  DISPATCH(t, rms_norm_kernel, static_cast<unsigned>(rows), kThreads, s, out, x, dim, weight, offset, eps);
}

void head_norm_rope(const float* in, int64_t ld_in, int64_t rows, int heads, int d, const float* weight, float eps,
                    const float* cos, const float* sin, bool interleaved, void* out, int64_t ld_out, ElementType t,
                    cudaStream_t s) {
  const int64_t tasks = rows * heads, warps = kThreads / 32;
  if (tasks == 0) return;
  const unsigned grid = static_cast<unsigned>((tasks + warps - 1) / warps);
  if (t == ElementType::kBf16)
    count_launch(), head_norm_rope_kernel<bf16><<<grid, kThreads, 0, s>>>(in, ld_in, rows, heads, d, weight, eps, cos, sin, interleaved,
                                                          static_cast<bf16*>(out), ld_out);
  else
    count_launch(), head_norm_rope_kernel<float><<<grid, kThreads, 0, s>>>(in, ld_in, rows, heads, d, weight, eps, cos, sin, interleaved,
                                                           static_cast<float*>(out), ld_out);
}

void layer_norm_modulate(const float* x, int64_t rows, int64_t dim, float eps, const float* text_scale,
                         const float* image_scale, int64_t text_rows, void* out, ElementType t, cudaStream_t s) {
  if (rows == 0) return;
  DISPATCH(t, layer_norm_modulate_kernel, static_cast<unsigned>(rows), kThreads, s, out, x, dim, eps, text_scale,
           image_scale, text_rows);
}

void gated_residual(float* x, const float* delta, int64_t rows, int64_t dim, const float* text_gate,
                    const float* image_gate, int64_t text_rows, cudaStream_t s) {
  count_launch(), gated_residual_kernel<<<blocks_for(rows * dim), kThreads, 0, s>>>(x, delta, rows, dim, text_gate, image_gate, text_rows);
}

void gated_residual_norm(float* x, const float* delta, int64_t rows, int64_t dim, const float* text_gate,
                         const float* image_gate, int64_t text_rows, float eps, const float* text_scale,
                         const float* image_scale, int64_t scale_text_rows, void* out, ElementType t, cudaStream_t s) {
  if (rows == 0) return;
  DISPATCH(t, gated_residual_norm_kernel, static_cast<unsigned>(rows), kThreads, s, out, x, delta, dim, text_gate, image_gate,
           text_rows, eps, text_scale, image_scale, scale_text_rows);
}

void swiglu_rows(const float* gate_up, int64_t rows, int64_t half, void* out, ElementType t, cudaStream_t s) {
  if (rows == 0 || half == 0) return;
  const RowLaunch l = row_launch(rows, half);
  DISPATCH(t, swiglu_rows_kernel, l.grid, l.block, s, out, gate_up, rows, half);
}

void convert_rows(const float* in, int64_t ld_in, int64_t rows, int64_t cols, void* out, int64_t ld_out, ElementType t,
                  cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  const RowLaunch l = row_launch(rows, cols);
  DISPATCH(t, convert_rows_kernel, l.grid, l.block, s, out, in, ld_in, rows, cols, ld_out);
}

void swiglu(const float* gate, const float* up, int64_t n, void* out, ElementType t, cudaStream_t s) {
  DISPATCH(t, swiglu_kernel, blocks_for(n), kThreads, s, out, gate, up, n);
}
void gelu_tanh(const float* in, int64_t n, void* out, ElementType t, cudaStream_t s) {
  DISPATCH(t, gelu_kernel, blocks_for(n), kThreads, s, out, in, n);
}
void silu(const float* in, int64_t n, void* out, ElementType t, cudaStream_t s) {
  DISPATCH(t, silu_kernel, blocks_for(n), kThreads, s, out, in, n);
}
void tanh_gates(float* m, int64_t dim, cudaStream_t s) { count_launch(), tanh_gates_kernel<<<blocks_for(dim), kThreads, 0, s>>>(m, dim); }

void embed_rows(const void* table, ElementType t, const int32_t* ids, int64_t rows, int64_t dim, float* x, cudaStream_t s) {
  if (t == ElementType::kBf16)
    count_launch(), embed_kernel<<<blocks_for(rows * dim), kThreads, 0, s>>>(static_cast<const bf16*>(table), ids, rows, dim, x);
  else
    count_launch(), embed_kernel<<<blocks_for(rows * dim), kThreads, 0, s>>>(static_cast<const float*>(table), ids, rows, dim, x);
}

void masked_softmax(const float* scores, int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t q0,
                    int64_t causal_rows, void* probs, ElementType t, cudaStream_t s) {
  if (batch * rows == 0) return;
  DISPATCH(t, softmax_kernel, static_cast<unsigned>(batch * rows), kThreads, s, probs, scores, rows, cols, ld, q0,
           causal_rows);
}

void unpack_latents(const float* tokens, int64_t pixels, const float* mean, const float* std, float* out, cudaStream_t s) {
  count_launch(), unpack_kernel<<<blocks_for(64 * pixels), kThreads, 0, s>>>(tokens, pixels, mean, std, out);
}

void channel_rms_norm(const float* x, int64_t channels, int64_t pixels, const float* gamma, bool then_silu, void* out,
                      ElementType t, cudaStream_t s) {
  DISPATCH(t, channel_rms_kernel, blocks_for(pixels), kThreads, s, out, x, channels, pixels, gamma, then_silu);
}

void im2col3x3(const void* x, ElementType t, int64_t channels, int64_t height, int64_t width, int64_t y0, int64_t y1,
               int64_t x0, int64_t x1, void* col, cudaStream_t s) {
  if (channels * 9 * (y1 - y0) * (x1 - x0) > int64_t{UINT32_MAX}) throw std::invalid_argument("im2col3x3: a strip past 2^32 elements");
  const RowLaunch l = row_launch(channels * 9 * (y1 - y0), x1 - x0);
  if (t == ElementType::kBf16)
    count_launch(), im2col_kernel<<<l.grid, l.block, 0, s>>>(static_cast<const bf16*>(x), channels, height, width, y0, y1, x0, x1,
                                                               static_cast<bf16*>(col));
  else
    count_launch(), im2col_kernel<<<l.grid, l.block, 0, s>>>(static_cast<const float*>(x), channels, height, width, y0, y1, x0, x1,
                                                               static_cast<float*>(col));
}

void fill_bias(float* out, const float* bias, int64_t channels, int64_t pixels, cudaStream_t s) {
  const RowLaunch l = row_launch(channels, pixels);
  count_launch(), fill_bias_kernel<<<l.grid, l.block, 0, s>>>(out, bias, channels, pixels);
}

void upsample2x(const float* x, int64_t channels, int64_t height, int64_t width, void* out, ElementType t, cudaStream_t s) {
  const RowLaunch l = row_launch(channels * 2 * height, 2 * width);
  DISPATCH(t, upsample_kernel, l.grid, l.block, s, out, x, channels, height, width);
}

void add_dup_up(float* y, int64_t channels, int64_t h2, int64_t w2, const float* x, int64_t in_channels, int ft, cudaStream_t s) {
  const RowLaunch l = row_launch(channels * h2, w2);
  count_launch(), dup_up_kernel<<<l.grid, l.block, 0, s>>>(y, channels, h2, w2, x, in_channels, ft);
}

void add(float* y, const float* x, int64_t n, cudaStream_t s) { count_launch(), add_kernel<<<blocks_for(n), kThreads, 0, s>>>(y, x, n); }
void clamp_unit(float* x, int64_t n, cudaStream_t s) { count_launch(), clamp_kernel<<<blocks_for(n), kThreads, 0, s>>>(x, n); }

void fill_random(void* p, ElementType t, int64_t n, uint64_t seed, float scale, float offset, cudaStream_t s) {
  DISPATCH(t, fill_random_kernel, blocks_for(n), kThreads, s, p, n, seed, scale, offset);
}

void dequantize_int8(const int8_t* q, const uint16_t* scales, int64_t rows, int64_t in, void* out, ElementType t,
                     cudaStream_t s) {
  if (rows * in == 0) return;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((in + kThreads - 1) / kThreads, 64)),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  DISPATCH(t, dequantize_int8_kernel, grid, kThreads, s, out, q, scales, rows, in);
}

void scale_fp8_product(const float* acc, const float* x_scales, const float* w_scales, int64_t rows, int64_t out, float* y,
                       float beta, cudaStream_t s) {
  if (rows * out == 0) return;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((out + kThreads - 1) / kThreads, 64)),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  count_launch();
  scale_fp8_product_kernel<<<grid, kThreads, 0, s>>>(acc, x_scales, w_scales, rows, out, y, beta);
}

void quantize_fp8_rows(const void* x, ElementType t, int64_t rows, int64_t cols, uint8_t* codes, float* scales,
                       cudaStream_t s) {
  if (rows == 0) return;
  const auto grid = static_cast<unsigned>(rows);
  if (t == ElementType::kBf16)
    count_launch(), quantize_fp8_rows_kernel<<<grid, kThreads, 0, s>>>(static_cast<const bf16*>(x), cols, codes, scales);
  else
    count_launch(), quantize_fp8_rows_kernel<<<grid, kThreads, 0, s>>>(static_cast<const float*>(x), cols, codes, scales);
}

void fill_random_int8(int8_t* p, int64_t n, uint64_t seed, cudaStream_t s) {
  count_launch(), fill_random_int8_kernel<<<blocks_for(n), kThreads, 0, s>>>(p, n, seed);
}

void check_launch(int device, const char* what) { check(cudaGetLastError(), device, what); }

}  // namespace rgbaq::engine::cuda
