#include "engine/cpu/linear.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <vector>

#include "engine/model/fp8_e4m3.h"
#include "engine/model/int8_blocks.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr int64_t kTileRows = 256;
constexpr int64_t kLoraTileRows = 64;

// The 256 E4M3 values, so a tile's dequantization is a table lookup and a multiply.
const std::array<float, 256>& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = fp8::e4m3_to_float(static_cast<uint8_t>(c));
    return t;
  }();
  return table;
}

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

void linear(const ConvRotRows& x, const Tensor& weight, float* y, int64_t ldy, ThreadPool& pool) {
  if (weight.quant() != WeightQuant::kInt8ConvRot || weight.rank() != 2 || x.group != weight.convrot_group() ||
      x.cols != weight.dim(1)) {
    throw std::invalid_argument("linear: packed rows [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) + "] G" +
                                std::to_string(x.group) + " for a " + weight_quant_name(weight.quant()) + " weight " +
                                shape_string(weight.shape()) + " G" + std::to_string(weight.convrot_group()));
  }
  if (x.rows == 0 || weight.dim(0) == 0) return;
  w8a8_linear(x, static_cast<const int8_t*>(weight.data()), weight.scales()->f32(), weight.dim(0), y, ldy, pool);
}

void SharedInput::linear(const Tensor& weight, float* y, int64_t ldy) {
  if (weight.quant() != WeightQuant::kInt8ConvRot) {
    cpu::linear(x_, rows_, ldx_, weight, y, ldy, pool_);
    return;
  }
  if (packed_group_ != weight.convrot_group()) {
    if (weight.rank() != 2) throw std::invalid_argument("linear: weight of shape " + shape_string(weight.shape()) + " is not 2-D");
    pack_convrot_rows(x_, rows_, ldx_, weight.dim(1), weight.convrot_group(), packed_, pool_);
    packed_group_ = weight.convrot_group();
  }
  cpu::linear(packed_, weight, y, ldy, pool_);
}

void linear(const float* x, int64_t rows, int64_t ldx, const Tensor& weight, float* y, int64_t ldy, ThreadPool& pool) {
  if (weight.rank() != 2) throw std::invalid_argument("linear: weight of shape " + shape_string(weight.shape()) + " is not 2-D");
  const int64_t out = weight.dim(0), in = weight.dim(1);
  if ((weight.dtype() == DType::kI8 || weight.dtype() == DType::kF8E4M3) && weight.quant() == WeightQuant::kNone) {
    throw std::invalid_argument("linear: " + std::string(dtype_name(weight.dtype())) + " weight " + shape_string(weight.shape()) +
                                " without its scales");
  }
  if (weight.quant() == WeightQuant::kInt8ConvRot) {
    thread_local ConvRotRows packed;  // reused: a step's Linears allocate nothing once it has grown
    SharedInput(x, rows, ldx, packed, pool).linear(weight, y, ldy);
    return;
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
    } else if (weight.quant() == WeightQuant::kFp8Scaled) {
      scratch.resize(static_cast<size_t>(n * in));
      const auto* codes = w + n0 * in;
      const float* s = weight.scales()->f32();
      const bool per_row = weight.scales()->numel() == out && out != 1;
      const std::array<float, 256>& value = e4m3_table();
      for (int64_t r = 0; r < n; ++r) {
        const float scale = s[per_row ? n0 + r : 0];
        for (int64_t c = 0; c < in; ++c) scratch[static_cast<size_t>(r * in + c)] = value[codes[r * in + c]] * scale;
      }
      b = scratch.data();
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
