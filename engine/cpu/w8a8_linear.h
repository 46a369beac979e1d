#pragma once
// ConvRot W8A8 Linears on the CPU (engine/model/convrot.h has the math): an input's rows are rotated by
// R (group G) and quantized to int8 with one scale a row once (pack_convrot_rows), then any Linear whose
// weight is I8 round(W R / s_w) with row scales s_w [out] and the same G computes
// y[r, o] = float(sum_k q_x[r, k] q_w[o, k]) * s_x[r] * s_w[o] with the int8 GEMM (engine/cpu/int8_gemm.h).
// Linears that share an input (q/k/v, gate/up) share one ConvRotRows. Work splits into fixed row chunks
// (pack) and fixed column tiles (GEMM), so results do not depend on the thread count.
#include <cstdint>
#include <vector>

#include "engine/cpu/thread_pool.h"

namespace rgbaq::engine::cpu {

// An input's rotated, quantized rows. The vectors keep their capacity, so reusing one object across
// steps allocates nothing once it has seen the largest shape.
struct ConvRotRows {
  int group = 0;
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> values;     // [rows, cols] int8 codes of x R
  std::vector<float> scales;      // [rows] s_x
  std::vector<int32_t> row_sums;  // [rows] sum of each row's codes (the int8 GEMM's u8 correction)
};

// x [rows, cols] with row stride ldx -> out (copy, rotate, quantize each row). Throws
// std::invalid_argument when group is not a power of four >= 4 dividing cols.
void pack_convrot_rows(const float* x, int64_t rows, int64_t ldx, int64_t cols, int group, ConvRotRows& out,
                       ThreadPool& pool);

// y [x.rows, out] (row stride ldy, overwritten) = the W8A8 product of x with w [out, x.cols] int8 and its
// row scales w_scales [out].
void w8a8_linear(const ConvRotRows& x, const int8_t* w, const float* w_scales, int64_t out, float* y, int64_t ldy,
                 ThreadPool& pool);

}  // namespace rgbaq::engine::cpu
