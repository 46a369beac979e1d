// The W8A8 kernels (convrot_kernels.h). One block a row for the rotation: the row sits in shared memory
// while the log4(G) butterfly stages run over it (each stage's quads are independent; a barrier between
// stages), then a block max gives the row's scale and every thread writes its codes. The epilogue is a
// grid of rows by output columns. Written against the kernels helper's convrot.h; never run on a GPU.
#include <cuda_bf16.h>

#include <algorithm>
#include <string>

#include "engine/cuda/convrot_kernels.h"
#include "engine/cuda/convrot_rows.h"
#include "engine/cuda/cuda_check.h"
#include "engine/cuda/kernels.h"
#include "engine/cuda/w8a8_plan.h"

namespace rgbaq::engine::cuda {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kThreads = 256;
constexpr int64_t kStaticSharedLimit = 48 * 1024;  // beyond this a kernel must opt in to more

__device__ __forceinline__ float load(const float* p) { return *p; }
__device__ __forceinline__ float load(const bf16* p) { return __bfloat162float(*p); }

__device__ float row_block_max(float v) {
  __shared__ float partial[kConvRotStaticSharedBytes / sizeof(float)];
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();  // partial may still be read for the previous row
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float m = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) m = fmaxf(m, partial[w]);
  return m;
}

template <typename T>
__global__ void convrot_quantize_rows_kernel(const T* x, int64_t rows, int64_t cols, int group, int8_t* codes, float* scales) {
  extern __shared__ float row[];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __syncthreads();  // the previous row's codes are written before the row is overwritten
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) row[i] = load(x + r * cols + i);
    __syncthreads();
    for (int stride = 1; stride < group; stride *= 4) {
      for (int64_t t = threadIdx.x; t < cols / 4; t += blockDim.x) {
        const int64_t i = convrot_quad_start(t, group, stride);
        convrot::h4_butterfly(row[i], row[i + stride], row[i + 2 * stride], row[i + 3 * stride]);
      }
      __syncthreads();
    }
    float m = 0.0f;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, fabsf(row[i]));
    const float scale = convrot::row_scale(row_block_max(m));
    if (threadIdx.x == 0) scales[r] = scale;
    for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) codes[r * cols + i] = convrot::quantized(row[i], scale);
  }
}

// Rows by blockIdx.y, so no division per element.
__global__ void w8a8_epilogue_kernel(const int32_t* acc, const float* x_scales, const float* w_scales, int64_t rows,
                                     int64_t out, float* y, float beta) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    const float xs = x_scales[r];
    for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < out; o += int64_t{gridDim.x} * blockDim.x) {
      y[r * out + o] = w8a8_output(acc[r * out + o], xs, w_scales[o], beta, beta != 0.0f ? y[r * out + o] : 0.0f);
    }
  }
}

template <typename T>
void launch_quantize(const T* x, int64_t rows, int64_t cols, int group, int8_t* codes, float* scales, int device,
                     cudaStream_t s) {
  const auto bytes = convrot_row_shared_bytes(cols);
  if (convrot_block_shared_bytes(cols) > kStaticSharedLimit) {
    check(cudaFuncSetAttribute(convrot_quantize_rows_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes)),
          device, "cudaFuncSetAttribute (the ConvRot row's shared memory)");
  }
  const auto grid = static_cast<unsigned>(std::min<int64_t>(rows, 1 << 20));
  count_launch();
  convrot_quantize_rows_kernel<T><<<grid, kThreads, static_cast<size_t>(bytes), s>>>(x, rows, cols, group, codes, scales);
  check_launch(device, "convrot_quantize_rows");  // here: the int8 GEMM after it would read codes never written
}

}  // namespace

void convrot_quantize_rows(const void* x, ElementType type, int64_t rows, int64_t cols, int group, int8_t* codes,
                           float* scales, int device, cudaStream_t s) {
  if (!is_convrot_group(group) || cols % group != 0) {
    throw std::invalid_argument("convrot_quantize_rows: group " + std::to_string(group) +
                                " is not a power of four >= 4 dividing the width " + std::to_string(cols));
  }
  int max_shared = 0;
  check(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device), device,
        "cudaDeviceGetAttribute (shared memory per block)");
  check_convrot_row_fits(cols, max_shared, "a ConvRot Linear's input");
  if (rows == 0) return;
  if (type == ElementType::kBf16)
    launch_quantize(static_cast<const bf16*>(x), rows, cols, group, codes, scales, device, s);
  else
    launch_quantize(static_cast<const float*>(x), rows, cols, group, codes, scales, device, s);
}

void w8a8_epilogue(const int32_t* acc, const float* x_scales, const float* w_scales, int64_t rows, int64_t out, float* y,
                   float beta, cudaStream_t s) {
  if (rows * out == 0) return;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>((out + kThreads - 1) / kThreads, 64)),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  count_launch();
  w8a8_epilogue_kernel<<<grid, kThreads, 0, s>>>(acc, x_scales, w_scales, rows, out, y, beta);
}

}  // namespace rgbaq::engine::cuda
