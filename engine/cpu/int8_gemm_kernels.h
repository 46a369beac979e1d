#pragma once
// The int8 GEMM's per-ISA blocks (engine/cpu/int8_gemm_x86.cpp), behind engine/cpu/int8_gemm.h. Each
// computes C[mb, nb] for mb <= `rows` rows of A and nb <= `cols` columns from one packed weight panel:
// quads [k / 4][cols][4] of b + 128 as u8 (int8_gemm.cpp packs it). k is a multiple of 4: int8_gemm.cpp
// pads A's rows with zeros and the panel with 0x80 (b = 0) otherwise. row_sums[r] = sum_k a[r, k].
#include <cstdint>
#include <cstring>

namespace rgbaq::engine::cpu::int8_kernels {

// The panel's words [q0, q1) x columns [j0, j1) from weight rows [nb, k]: word (q, j) = bytes 4q..4q+3 of
// row j, each byte b stored as b + 128 (b ^ 0x80); bytes past k and columns past nb hold 0x80 (b = 0).
inline void pack_words(const int8_t* b, int64_t ldb, int64_t nb, int64_t k, int cols, int64_t q0, int64_t q1,
                       int64_t j0, int64_t j1, uint8_t* panel) {
  uint32_t* out = reinterpret_cast<uint32_t*>(panel);
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t bytes = k - 4 * q < 4 ? k - 4 * q : 4;
    for (int64_t j = j0; j < j1; ++j) {
      uint32_t w = 0;
      if (j < nb) std::memcpy(&w, b + j * ldb + 4 * q, static_cast<size_t>(bytes));
      out[q * cols + j] = w ^ 0x80808080u;
    }
  }
}

// Packs a whole panel: quads [ceil(k / 4)][cols][4].
using Pack = void (*)(const int8_t* b, int64_t ldb, int64_t nb, int64_t k, int cols, uint8_t* panel);

using Block = void (*)(int64_t mb, int64_t nb, int64_t k, const int8_t* a, int64_t lda, const uint8_t* panel,
                       const int32_t* row_sums, int32_t* c, int64_t ldc);

struct BlockKernel {
  Block block;
  Pack pack;
  int rows;  // rows of A per block
  int cols;  // panel width (weight rows)
};

// The portable pack.
inline void pack_panel(const int8_t* b, int64_t ldb, int64_t nb, int64_t k, int cols, uint8_t* panel) {
  pack_words(b, ldb, nb, k, cols, 0, (k + 3) / 4, 0, cols, panel);
}

// Null blocks where this build has no x86 code.
BlockKernel avx512_vnni();
BlockKernel avx_vnni();
BlockKernel avx2();

}  // namespace rgbaq::engine::cpu::int8_kernels
