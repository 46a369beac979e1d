#include "engine/cpu/linear.h"

#include <cblas.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "engine/model/int8_blocks.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr int64_t kTileRows = 256;
constexpr int64_t kLoraTileRows = 64;

}  // namespace

void use_single_threaded_blas() { openblas_set_num_threads(1); }

void sgemm_nt(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
              accumulate ? 1.0f : 0.0f, c, static_cast<blasint>(ldc));
}

void sgemm_nn(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), 1.0f, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
              accumulate ? 1.0f : 0.0f, c, static_cast<blasint>(ldc));
}

void linear(const float* x, int64_t rows, int64_t ldx, const Tensor& weight, float* y, int64_t ldy, ThreadPool& pool) {
  if (weight.rank() != 2) throw std::invalid_argument("linear: weight of shape " + shape_string(weight.shape()) + " is not 2-D");
  const int64_t out = weight.dim(0), in = weight.dim(1);
  if (weight.dtype() == DType::kI8 && !weight.block_scales()) {
    throw std::invalid_argument("linear: I8 weight " + shape_string(weight.shape()) + " without its block scales");
  }
  if (rows == 0 || out == 0) return;
  const int64_t tiles = (out + kTileRows - 1) / kTileRows;
  const size_t element = dtype_size(weight.dtype());
  const auto* w = static_cast<const uint8_t*>(weight.data());
  pool.run(tiles, [&](int64_t tile) {
    const int64_t n0 = tile * kTileRows, n = std::min(kTileRows, out - n0);
    const float* b;
    thread_local std::vector<float> scratch;
    if (weight.dtype() == DType::kF32) {
      b = reinterpret_cast<const float*>(w) + n0 * in;
    } else if (weight.dtype() == DType::kI8) {
      scratch.resize(static_cast<size_t>(n * in));
      const auto* scales = static_cast<const uint16_t*>(weight.block_scales()->data());
      dequantize_int8_rows(reinterpret_cast<const int8_t*>(w) + n0 * in, scales + n0 * int8_scale_columns(in), n, in,
                           scratch.data());
      b = scratch.data();
    } else {
      scratch.resize(static_cast<size_t>(n * in));
      to_f32(weight.dtype(), w + static_cast<size_t>(n0 * in) * element, scratch.data(), scratch.size());
      b = scratch.data();
    }
    sgemm_nt(rows, n, in, x, ldx, b, in, y + n0, ldy, false);
  });
}

}  // namespace rgbaq::engine::cpu

namespace rgbaq::engine::cpu {

void add_lora(const float* x, int64_t rows, int64_t ldx, std::span<const LoraTerm> terms, float* y, int64_t ldy,
              ThreadPool& pool) {
  if (terms.empty() || rows == 0) return;
  const int64_t tiles = (rows + kLoraTileRows - 1) / kLoraTileRows;
  pool.run(tiles, [&](int64_t tile) {
    const int64_t r0 = tile * kLoraTileRows, n = std::min(kLoraTileRows, rows - r0);
    thread_local std::vector<float> down;  // x A^T for the tile, [n, rank]
    for (const LoraTerm& t : terms) {
      const LoraModule& m = *t.module;
      down.resize(static_cast<size_t>(n * m.rank));
      sgemm_nt(n, m.rank, m.in, x + r0 * ldx, ldx, m.down.data(), m.in, down.data(), m.rank, false);
      for (float& v : down) v *= t.scale;
      sgemm_nt(n, m.out, m.rank, down.data(), m.rank, m.up.data(), m.rank, y + r0 * ldy, ldy, true);
    }
  });
}

}  // namespace rgbaq::engine::cpu
