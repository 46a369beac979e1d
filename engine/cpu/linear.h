#pragma once
// y = x W^T for a Linear weight W [out, in] in its stored form. F32 weights go straight to OpenBLAS
// sgemm; BF16/F16 weights stay in their dtype (mapped from the file) and are widened 256 rows at a
// time into a per-thread scratch (256 x in floats: 4 MiB at in = 4096), so a model costs its file
// size in memory, not twice that. I8 weights with block scales (engine/model/int8_blocks.h) and FP8
// scaled weights (value(q) * s) are dequantized the same way, a tile at a time. ConvRot weights
// (engine/model/convrot.h) run as W8A8: the input rows rotated and quantized to int8
// (pack_convrot_rows), an int8 GEMM into int32, scaled back by both scales (w8a8_linear). Threads
// split the output columns into fixed tiles, so results do not depend on the thread count.
#include <cstdint>
#include <span>

#include "engine/cpu/thread_pool.h"
#include "engine/cpu/w8a8_linear.h"
#include "engine/lora.h"
#include "engine/model/tensor.h"

namespace rgbaq::engine::cpu {

// x: [rows, in] row-major with row stride ldx; y: [rows, out] with row stride ldy (overwritten).
void linear(const float* x, int64_t rows, int64_t ldx, const Tensor& weight, float* y, int64_t ldy, ThreadPool& pool);

// The same with contiguous rows.
inline void linear(const float* x, int64_t rows, const Tensor& weight, float* y, ThreadPool& pool) {
  linear(x, rows, weight.dim(1), weight, y, weight.dim(0), pool);
}

// A ConvRot weight (quant() == kInt8ConvRot) on rows already packed with its group size.
void linear(const ConvRotRows& x, const Tensor& weight, float* y, int64_t ldy, ThreadPool& pool);

// One input that several Linears read (q/k/v, gate/proj): the ConvRot ones among them share its rotated,
// quantized rows, packed at the first that needs them (again only if a later one has another group
// size). `packed` is the caller's scratch, reused from call to call so steps do not allocate.
class SharedInput {
 public:
  SharedInput(const float* x, int64_t rows, int64_t ldx, ConvRotRows& packed, ThreadPool& pool)
      : x_(x), rows_(rows), ldx_(ldx), packed_(packed), pool_(pool) {}
  // y = x W^T (linear() above), y [rows, out] with row stride ldy.
  void linear(const Tensor& weight, float* y, int64_t ldy);
  const float* x() const { return x_; }
  int64_t rows() const { return rows_; }
  int64_t ldx() const { return ldx_; }

 private:
  const float* x_;
  int64_t rows_, ldx_;
  ConvRotRows& packed_;
  ThreadPool& pool_;
  int packed_group_ = 0;  // 0: not packed yet for this input
};

// y[rows, out] += scale (x A^T) B^T for each LoRA term of one Linear, in order: the unmerged adapters.
// Rows go in fixed tiles, so results do not depend on the thread count either.
void add_lora(const float* x, int64_t rows, int64_t ldx, std::span<const LoraTerm> terms, float* y, int64_t ldy,
              ThreadPool& pool);

// C[m, n] (+)= A[m, k] B[n, k]^T, single-threaded sgemm, row-major with leading dimensions.
void sgemm_nt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc, bool accumulate);
// C[m, n] (+)= A[m, k] B[k, n].
void sgemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc, bool accumulate);

// Makes OpenBLAS single-threaded: the engine's pool does the threading.
void use_single_threaded_blas();

}  // namespace rgbaq::engine::cpu
