#pragma once
// Row-major GEMMs through cuBLASLt: C[m, n] = alpha * A[m, k] op(B) + beta * C, with B either [n, k]
// (a Linear's weight: y = x W^T) or [k, n]; optionally strided-batched. A and B are bf16 (fp32
// accumulation, tensor cores) or fp32 (CUBLAS_COMPUTE_32F: no TF32, for parity); C is always fp32.
// linear_fp8 is the FP8 form (sm_89 and later): E4M3 operands with one fp32 scale per output row of W
// and per row of x (cuBLASLt's outer-vector scaling), fp32 accumulation into an fp32 C. Where cuBLASLt
// has no outer-vector algorithm for a shape (reported for sm_89, and for few rows at large k on sm_90),
// that shape runs as an unscaled FP8 GEMM and one pass applies the scales (scale_fp8_product).
// linear_int8 is the int8 form (IMMA: int8 operands, int32 product; a W8A8 Linear's, device_linear.h).
// A call's descriptors and algorithm are made once per (shape, type, pointer alignment) and cached, so
// the step loop allocates nothing; the workspace is allocated once. cuBLASLt itself is loaded when the
// first Gemm is made (cublaslt_library.h).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <tuple>

#include "engine/cuda/device_memory.h"

namespace rgbaq::engine::cuda {

struct CublasLt;

enum class ElementType { kBf16, kF32 };
size_t element_size(ElementType t);

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool b_transposed = true;  // B is [n, k] (true) or [k, n] (false)
  int batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // elements between batch members
};

class Gemm {
 public:
  Gemm(DeviceArena& arena, cudaStream_t stream);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  void run(const GemmShape& s, ElementType type, const void* a, const void* b, float* c, float alpha = 1.0f,
           float beta = 0.0f);
  // y[rows, out] = x[rows, in] W[out, in]^T, contiguous.
  void linear(ElementType type, const void* x, int64_t rows, const void* w, int64_t out, int64_t in, float* y,
              float beta = 0.0f) {
    run({rows, out, in, in, in, out, true, 1, 0, 0, 0}, type, x, w, y, 1.0f, beta);
  }
  // y[rows, out] = beta y + (x_scales[r] w_scales[o]) sum_k x[r, k] W[o, k], x and W E4M3 codes.
  // `accumulator` (>= rows * out floats) holds the unscaled product when the fallback runs with beta != 0.
  void linear_fp8(const uint8_t* x, const float* x_scales, int64_t rows, const uint8_t* w, const float* w_scales,
                  int64_t out, int64_t in, float* y, float beta, float* accumulator, int64_t accumulator_elements);
  // For the gpu tests: every FP8 GEMM planned from now on takes the fallback.
  void force_fp8_fallback(bool on) { force_fp8_fallback_ = on; }
  // Whether the FP8 GEMM of this shape (16-byte aligned operands) runs as the fallback; plans it if need
  // be. For the gpu tests and benchmarks: linear_fp8 decides by itself.
  bool fp8_falls_back(int64_t rows, int64_t out, int64_t in);
  // acc[rows, out] = sum_k x[r, k] W[o, k], int8 x int8 -> int32 (IMMA; w8a8_plan.h lays the call out and
  // says which shapes it takes: out and in multiples of 4). A W8A8 Linear's product before its epilogue.
  void linear_int8(const int8_t* x, int64_t rows, const int8_t* w, int64_t out, int64_t in, int32_t* acc);

 private:
  // kFp8: per-row scales (outer vectors), or the fallback where cuBLASLt has none; kFp8Unscaled: always
  // the fallback. kInt8: int8 operands, int32 compute and result (linear_int8).
  enum class Operands { kBf16, kF32, kFp8, kFp8Unscaled, kInt8 };
  using Key = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int, int64_t, int64_t, int64_t, int, int>;
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool unscaled_fp8 = false;  // an FP8 plan without scales: linear_fp8 applies them after
  };
  static Operands operands_of(ElementType t) { return t == ElementType::kBf16 ? Operands::kBf16 : Operands::kF32; }
  const Plan& plan_for(const GemmShape& s, Operands type, unsigned alignment);
  Plan make_plan(const GemmShape& s, Operands type, unsigned alignment);  // destroys what it made if it throws
  // False (nothing thrown) only when `may_find_none` and cuBLASLt has no algorithm.
  bool build_plan(Plan& p, const GemmShape& s, Operands type, unsigned alignment, bool may_find_none = false);
  Operands fp8_operands() const { return force_fp8_fallback_ ? Operands::kFp8Unscaled : Operands::kFp8; }
  void destroy_plan(Plan& p) const;

  const CublasLt& lt_;  // loaded by the first Gemm (cublaslt_library.h)
  DeviceArena& arena_;
  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
  std::map<Key, Plan> plans_;
  bool force_fp8_fallback_ = false;
};

}  // namespace rgbaq::engine::cuda
