#include "engine/cpu/w8a8_linear.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/cpu/int8_gemm.h"
#include "engine/model/convrot.h"

namespace rgbaq::engine::cpu {
namespace {

// Rows a pack task takes; 8 rows x 4096 floats of scratch stay in L1/L2.
constexpr int64_t kPackRows = 8;
// Output columns a GEMM task takes: a multiple of every kernel's panel width (64, 16), small enough that
// N = 3072 still gives 12 tasks to balance over the threads.
constexpr int64_t kColumnTile = 256;

}  // namespace

void pack_convrot_rows(const float* x, int64_t rows, int64_t ldx, int64_t cols, int group, ConvRotRows& out,
                       ThreadPool& pool) {
  if (!is_convrot_group(group) || cols % group != 0) {
    throw std::invalid_argument("pack_convrot_rows: group size " + std::to_string(group) +
                                " is not a power of four >= 4 dividing the width " + std::to_string(cols));
  }
  out.group = group;
  out.rows = rows;
  out.cols = cols;
  out.values.resize(static_cast<size_t>(rows * cols));
  out.scales.resize(static_cast<size_t>(rows));
  out.row_sums.resize(static_cast<size_t>(rows));
  const int64_t tasks = (rows + kPackRows - 1) / kPackRows;
  pool.run(tasks, [&](int64_t t) {
    thread_local std::vector<float> scratch;
    const int64_t r0 = t * kPackRows, n = std::min(kPackRows, rows - r0);
    scratch.resize(static_cast<size_t>(n * cols));
    for (int64_t r = 0; r < n; ++r) std::memcpy(scratch.data() + r * cols, x + (r0 + r) * ldx, cols * sizeof(float));
    convrot_rotate_rows(scratch.data(), n, cols, cols, group);
    int8_t* q = out.values.data() + r0 * cols;
    quantize_rows_int8(scratch.data(), n, cols, cols, q, out.scales.data() + r0);
    int8_row_sums(q, n, cols, cols, out.row_sums.data() + r0);
  });
}

void w8a8_linear(const ConvRotRows& x, const int8_t* w, const float* w_scales, int64_t out, float* y, int64_t ldy,
                 ThreadPool& pool) {
  if (ldy < out || static_cast<int64_t>(x.values.size()) < x.rows * x.cols ||
      static_cast<int64_t>(x.scales.size()) < x.rows || static_cast<int64_t>(x.row_sums.size()) < x.rows) {
    throw std::invalid_argument("w8a8_linear: packed rows [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                                "] inconsistent with their buffers, or ldy " + std::to_string(ldy) + " < out " +
                                std::to_string(out));
  }
  if (x.rows == 0 || out == 0) return;
  const int64_t rows = x.rows, k = x.cols;
  const int64_t tiles = (out + kColumnTile - 1) / kColumnTile;
  pool.run(tiles, [&](int64_t t) {
    thread_local std::vector<int32_t> acc;
    const int64_t o0 = t * kColumnTile, n = std::min(kColumnTile, out - o0);
    acc.resize(static_cast<size_t>(rows * kColumnTile));
    int8_gemm_nt(rows, n, k, x.values.data(), k, w + o0 * k, k, acc.data(), kColumnTile, x.row_sums.data());
    for (int64_t r = 0; r < rows; ++r) {
      const float sx = x.scales[r];
      const int32_t* a = acc.data() + r * kColumnTile;
      float* yr = y + r * ldy + o0;
      for (int64_t j = 0; j < n; ++j) yr[j] = static_cast<float>(a[j]) * sx * w_scales[o0 + j];
    }
  });
}

}  // namespace rgbaq::engine::cpu
