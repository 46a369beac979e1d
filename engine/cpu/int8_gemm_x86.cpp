// The x86 blocks of the int8 GEMM. Each function carries its ISA as a target attribute (no per-file
// -m flags), so nothing else in the binary, inlined library code included, is compiled for an ISA the
// CPU may lack; int8_gemm.cpp calls a block only after cpuid said yes.
//
// The blocks keep their accumulators in named variables (GCC spills an array of vectors to the stack on
// every iteration) and run one branch-free loop over A's 4-byte words (int8_gemm.cpp pads A when k is
// not a multiple of 4), and always compute their full row count: rows past mb re-read row 0 and are not
// stored, which costs only in A's last, partial block.
#include "engine/cpu/int8_gemm_kernels.h"

#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RGBAQ_INT8_X86 1
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12's avx512fintrin.h passes an undefined vector as a don't-care operand (_mm512_set1_epi32 and
// friends), which -Wmaybe-uninitialized reports inside every caller (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace rgbaq::engine::cpu::int8_kernels {

#if RGBAQ_INT8_X86
namespace {

inline int32_t load_word(const int8_t* p) {
  int32_t w;
  std::memcpy(&w, p, 4);
  return w;
}

#define RGBAQ_ROW_POINTER(R) const int8_t* const row##R = a + (R < mb ? R : 0) * lda;
#define RGBAQ_WORD(R) load_word(row##R + 4 * q)
// The loop over A's 4-byte words (k is a multiple of 4 here), with STEP the block's per-word body.
#define RGBAQ_QUAD_LOOP(STEP, PANEL_STRIDE)                        \
  {                                                                \
    const int64_t quads = k / 4;                                   \
    const uint8_t* p = panel;                                      \
    for (int64_t q = 0; q < quads; ++q, p += (PANEL_STRIDE)) {     \
      STEP                                                         \
    }                                                              \
  }

// ---- AVX-512 VNNI: 6 rows x 64 columns (24 zmm accumulators), one VPDPBUSD per 64 multiply-adds.
#define RGBAQ_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

RGBAQ_TARGET_AVX512 inline void store_zmm_row(int32_t* dst, int64_t nb, int32_t row_sum, __m512i v0, __m512i v1,
                                              __m512i v2, __m512i v3) {
  const __m512i correction = _mm512_set1_epi32(128 * row_sum);
  const __m512i v[4] = {v0, v1, v2, v3};
  for (int i = 0; i < 4 && nb - 16 * i > 0; ++i) {
    const int64_t left = nb - 16 * i;
    const __m512i out = _mm512_sub_epi32(v[i], correction);
    if (left >= 16) {
      _mm512_storeu_si512(dst + 16 * i, out);
    } else {
      _mm512_mask_storeu_epi32(dst + 16 * i, static_cast<__mmask16>((1u << left) - 1), out);
    }
  }
}

// The 64-column panel, 16 weight rows x 16 words at a time: 16 zmm loads, a 16 x 16 transpose of 32-bit
// words (unpack 32, unpack 64, two rounds of 128-bit lane shuffles), 16 zmm stores; edges as pack_words.
RGBAQ_TARGET_AVX512 void avx512_pack(const int8_t* b, int64_t ldb, int64_t nb, int64_t k, int cols, uint8_t* panel) {
  const int64_t quads = (k + 3) / 4, rows16 = nb / 16 * 16, quads16 = k / 64 * 16;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  for (int64_t j0 = 0; j0 < rows16; j0 += 16) {
    for (int64_t q0 = 0; q0 < quads16; q0 += 16) {
      __m512i r[16], t[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(b + (j0 + i) * ldb + 4 * q0);
      for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
      }
      // u[4i + c], 128-bit lane L: rows 4i..4i+3 at word 4L + c
      for (int i = 0; i < 4; ++i) {
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
      }
      for (int c = 0; c < 4; ++c) {
        const __m512i v0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xee);
        const __m512i v2 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x44);
        const __m512i v3 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xee);
        const __m512i words[4] = {_mm512_shuffle_i32x4(v0, v2, 0x88), _mm512_shuffle_i32x4(v0, v2, 0xdd),
                                  _mm512_shuffle_i32x4(v1, v3, 0x88), _mm512_shuffle_i32x4(v1, v3, 0xdd)};
        for (int l = 0; l < 4; ++l) {
          const int64_t q = q0 + 4 * l + c;
          _mm512_storeu_si512(panel + (q * cols + j0) * 4, _mm512_xor_si512(words[l], flip));
        }
      }
    }
  }
  pack_words(b, ldb, nb, k, cols, quads16, quads, 0, rows16, panel);
  pack_words(b, ldb, nb, k, cols, 0, quads, rows16, cols, panel);
}

RGBAQ_TARGET_AVX512 void avx512_block(int64_t mb, int64_t nb, int64_t k, const int8_t* a, int64_t lda,
                                      const uint8_t* panel, const int32_t* row_sums, int32_t* c, int64_t ldc) {
  RGBAQ_ROW_POINTER(0) RGBAQ_ROW_POINTER(1) RGBAQ_ROW_POINTER(2)
  RGBAQ_ROW_POINTER(3) RGBAQ_ROW_POINTER(4) RGBAQ_ROW_POINTER(5)
  __m512i c00 = _mm512_setzero_si512(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00,
          c13 = c00, c20 = c00, c21 = c00, c22 = c00, c23 = c00, c30 = c00, c31 = c00, c32 = c00, c33 = c00,
          c40 = c00, c41 = c00, c42 = c00, c43 = c00, c50 = c00, c51 = c00, c52 = c00, c53 = c00;
#define RGBAQ_ROW512(R)                                          \
  {                                                              \
    const __m512i av = _mm512_set1_epi32(RGBAQ_WORD(R));         \
    c##R##0 = _mm512_dpbusd_epi32(c##R##0, b0, av);              \
    c##R##1 = _mm512_dpbusd_epi32(c##R##1, b1, av);              \
    c##R##2 = _mm512_dpbusd_epi32(c##R##2, b2, av);              \
    c##R##3 = _mm512_dpbusd_epi32(c##R##3, b3, av);              \
  }
#define RGBAQ_STEP512                                                                               \
  const __m512i b0 = _mm512_loadu_si512(p), b1 = _mm512_loadu_si512(p + 64);                       \
  const __m512i b2 = _mm512_loadu_si512(p + 128), b3 = _mm512_loadu_si512(p + 192);                 \
  RGBAQ_ROW512(0) RGBAQ_ROW512(1) RGBAQ_ROW512(2) RGBAQ_ROW512(3) RGBAQ_ROW512(4) RGBAQ_ROW512(5)
  RGBAQ_QUAD_LOOP(RGBAQ_STEP512, 256)
#undef RGBAQ_STEP512
#undef RGBAQ_ROW512
  store_zmm_row(c, nb, row_sums[0], c00, c01, c02, c03);
  if (mb > 1) store_zmm_row(c + ldc, nb, row_sums[1], c10, c11, c12, c13);
  if (mb > 2) store_zmm_row(c + 2 * ldc, nb, row_sums[2], c20, c21, c22, c23);
  if (mb > 3) store_zmm_row(c + 3 * ldc, nb, row_sums[3], c30, c31, c32, c33);
  if (mb > 4) store_zmm_row(c + 4 * ldc, nb, row_sums[4], c40, c41, c42, c43);
  if (mb > 5) store_zmm_row(c + 5 * ldc, nb, row_sums[5], c50, c51, c52, c53);
}

// ---- 256-bit blocks: 16 columns (two ymm) a row.
#define RGBAQ_TARGET_AVX2 __attribute__((target("avx2")))
#define RGBAQ_TARGET_AVXVNNI __attribute__((target("avx2,avxvnni")))

RGBAQ_TARGET_AVX2 inline void store_ymm_row(int32_t* dst, int64_t nb, int32_t row_sum, __m256i v0, __m256i v1) {
  const __m256i correction = _mm256_set1_epi32(128 * row_sum);
  alignas(32) int32_t tmp[16];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), _mm256_sub_epi32(v0, correction));
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), _mm256_sub_epi32(v1, correction));
  std::memcpy(dst, tmp, static_cast<size_t>(nb < 16 ? nb : 16) * 4);
}

// AVX-VNNI (VEX-encoded VPDPBUSD, 16 ymm registers): 6 rows x 16 columns.
RGBAQ_TARGET_AVXVNNI void avxvnni_block(int64_t mb, int64_t nb, int64_t k, const int8_t* a, int64_t lda,
                                        const uint8_t* panel, const int32_t* row_sums, int32_t* c, int64_t ldc) {
  RGBAQ_ROW_POINTER(0) RGBAQ_ROW_POINTER(1) RGBAQ_ROW_POINTER(2)
  RGBAQ_ROW_POINTER(3) RGBAQ_ROW_POINTER(4) RGBAQ_ROW_POINTER(5)
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
          c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#define RGBAQ_ROWVNNI(R)                                         \
  {                                                              \
    const __m256i av = _mm256_set1_epi32(RGBAQ_WORD(R));         \
    c##R##0 = _mm256_dpbusd_avx_epi32(c##R##0, b0, av);          \
    c##R##1 = _mm256_dpbusd_avx_epi32(c##R##1, b1, av);          \
  }
#define RGBAQ_STEPVNNI                                                                   \
  const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));            \
  const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));       \
  RGBAQ_ROWVNNI(0) RGBAQ_ROWVNNI(1) RGBAQ_ROWVNNI(2) RGBAQ_ROWVNNI(3) RGBAQ_ROWVNNI(4) RGBAQ_ROWVNNI(5)
  RGBAQ_QUAD_LOOP(RGBAQ_STEPVNNI, 64)
#undef RGBAQ_STEPVNNI
#undef RGBAQ_ROWVNNI
  store_ymm_row(c, nb, row_sums[0], c00, c01);
  if (mb > 1) store_ymm_row(c + ldc, nb, row_sums[1], c10, c11);
  if (mb > 2) store_ymm_row(c + 2 * ldc, nb, row_sums[2], c20, c21);
  if (mb > 3) store_ymm_row(c + 3 * ldc, nb, row_sums[3], c30, c31);
  if (mb > 4) store_ymm_row(c + 4 * ldc, nb, row_sums[4], c40, c41);
  if (mb > 5) store_ymm_row(c + 5 * ldc, nb, row_sums[5], c50, c51);
}

// AVX2 without VNNI: VPMADDUBSW would saturate (255 x 127 x 2 > 32767), so each 32-bit lane's u8 bytes
// are split into 16-bit halves (k0, k2 and k1, k3) and multiplied by sign-extended A pairs with VPMADDWD,
// exactly. 4 rows x 16 columns.
RGBAQ_TARGET_AVX2 void avx2_block(int64_t mb, int64_t nb, int64_t k, const int8_t* a, int64_t lda,
                                  const uint8_t* panel, const int32_t* row_sums, int32_t* c, int64_t ldc) {
  RGBAQ_ROW_POINTER(0) RGBAQ_ROW_POINTER(1) RGBAQ_ROW_POINTER(2) RGBAQ_ROW_POINTER(3)
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
          c31 = c00;
  const __m256i low_bytes = _mm256_set1_epi16(0x00ff);
#define RGBAQ_ROWAVX2(R)                                                                                       \
  {                                                                                                            \
    const __m256i av = _mm256_set1_epi32(RGBAQ_WORD(R));                                                       \
    const __m256i a_even = _mm256_srai_epi16(_mm256_slli_epi16(av, 8), 8); /* a0, a2 as int16 */               \
    const __m256i a_odd = _mm256_srai_epi16(av, 8);                       /* a1, a3 */                         \
    c##R##0 = _mm256_add_epi32(c##R##0,                                                                        \
                               _mm256_add_epi32(_mm256_madd_epi16(e0, a_even), _mm256_madd_epi16(o0, a_odd))); \
    c##R##1 = _mm256_add_epi32(c##R##1,                                                                        \
                               _mm256_add_epi32(_mm256_madd_epi16(e1, a_even), _mm256_madd_epi16(o1, a_odd))); \
  }
#define RGBAQ_STEPAVX2                                                                   \
  const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));           \
  const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));      \
  const __m256i e0 = _mm256_and_si256(v0, low_bytes), o0 = _mm256_srli_epi16(v0, 8);    \
  const __m256i e1 = _mm256_and_si256(v1, low_bytes), o1 = _mm256_srli_epi16(v1, 8);    \
  RGBAQ_ROWAVX2(0) RGBAQ_ROWAVX2(1) RGBAQ_ROWAVX2(2) RGBAQ_ROWAVX2(3)
  RGBAQ_QUAD_LOOP(RGBAQ_STEPAVX2, 64)
#undef RGBAQ_STEPAVX2
#undef RGBAQ_ROWAVX2
  store_ymm_row(c, nb, row_sums[0], c00, c01);
  if (mb > 1) store_ymm_row(c + ldc, nb, row_sums[1], c10, c11);
  if (mb > 2) store_ymm_row(c + 2 * ldc, nb, row_sums[2], c20, c21);
  if (mb > 3) store_ymm_row(c + 3 * ldc, nb, row_sums[3], c30, c31);
}

#undef RGBAQ_QUAD_LOOP
#undef RGBAQ_WORD
#undef RGBAQ_ROW_POINTER

}  // namespace

BlockKernel avx512_vnni() { return {avx512_block, avx512_pack, 6, 64}; }
BlockKernel avx_vnni() { return {avxvnni_block, pack_panel, 6, 16}; }
BlockKernel avx2() { return {avx2_block, pack_panel, 4, 16}; }
#else
BlockKernel avx512_vnni() { return {nullptr, nullptr, 0, 0}; }
BlockKernel avx_vnni() { return {nullptr, nullptr, 0, 0}; }
BlockKernel avx2() { return {nullptr, nullptr, 0, 0}; }
#endif

}  // namespace rgbaq::engine::cpu::int8_kernels
