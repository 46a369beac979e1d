#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/cpu/linear.h"
#include "engine/cpu/vector_exp.h"

namespace rgbaq::engine::cpu {
namespace {

// Larger blocks keep the two small GEMMs per block efficient (OpenBLAS packs both operands on every
// call); scores are 256 KiB, about L2. 256 x 256 beat 128 x 256 and 128 x 512 on a 2-core EPYC (AVX2).
constexpr int64_t kQueryBlock = 256;
constexpr int64_t kKeyBlock = 256;

// One row of a score block: scale the first `limit` scores, fold them into the running max and sum,
// leave exp(score - max) (0 past `limit`) in place; returns the factor that rescales the older
// accumulators, or a negative value when the row has seen no visible key yet.
float softmax_block_row(float* sr, int64_t cols, int64_t limit, float scale, float& row_max, float& row_sum) {
  float block_max = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < limit; ++c) block_max = std::max(block_max, sr[c] * scale);
  const float new_max = std::max(row_max, block_max);
  if (new_max == -std::numeric_limits<float>::infinity()) {  // nothing visible yet in this row
    std::fill(sr, sr + cols, 0.0f);
    return -1.0f;
  }
  float sum = 0;
  for (int64_t c = 0; c < limit; ++c) sum += sr[c] = exp_clamped(sr[c] * scale - new_max);
  std::fill(sr + std::max<int64_t>(limit, 0), sr + cols, 0.0f);
  const float correction = exp_clamped(row_max - new_max);
  row_sum = row_sum * correction + sum;
  row_max = new_max;
  return correction;
}

#if RGBAQ_HAVE_AVX2_PATH
// The same eight scores at a time; the scale folds into exp's argument (one pass that reads, one that
// writes).
RGBAQ_AVX2_FMA float softmax_block_row_avx2(float* sr, int64_t cols, int64_t limit, float scale, float& row_max,
                                            float& row_sum) {
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  int64_t c = 0;
  for (; c + 8 <= limit; c += 8) vmax = _mm256_max_ps(vmax, _mm256_mul_ps(_mm256_loadu_ps(sr + c), vscale));
  float block_max = horizontal_max(vmax);
  for (; c < limit; ++c) block_max = std::max(block_max, sr[c] * scale);
  const float new_max = std::max(row_max, block_max);
  if (new_max == -std::numeric_limits<float>::infinity()) {
    std::fill(sr, sr + cols, 0.0f);
    return -1.0f;
  }
  const __m256 minus_max = _mm256_set1_ps(-new_max);
  __m256 vsum = _mm256_setzero_ps();
  for (c = 0; c + 8 <= limit; c += 8) {
    const __m256 e = exp8(_mm256_fmadd_ps(_mm256_loadu_ps(sr + c), vscale, minus_max));
    _mm256_storeu_ps(sr + c, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = horizontal_sum(vsum);
  for (; c < limit; ++c) sum += sr[c] = exp_clamped(sr[c] * scale - new_max);
  std::fill(sr + std::max<int64_t>(limit, 0), sr + cols, 0.0f);
  const float correction = exp_clamped(row_max - new_max);
  row_sum = row_sum * correction + sum;
  row_max = new_max;
  return correction;
}
#endif

using SoftmaxRow = float (*)(float*, int64_t, int64_t, float, float&, float&);

SoftmaxRow pick_softmax_row() {
#if RGBAQ_HAVE_AVX2_PATH
  if (avx2_fma_available()) return softmax_block_row_avx2;
#endif
  return softmax_block_row;
}

}  // namespace

void attention(const float* q, const float* k, const float* v, float* out, const AttentionShape& s, ThreadPool& pool) {
  if (s.q_heads <= 0 || s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
    throw std::invalid_argument("attention: " + std::to_string(s.q_heads) + " query heads over " +
                                std::to_string(s.kv_heads) + " key/value heads");
  }
  const int group = s.q_heads / s.kv_heads;
  const int64_t d = s.head_dim;
  const int64_t q_blocks = (s.q_rows + kQueryBlock - 1) / kQueryBlock;
  const SoftmaxRow softmax_row = pick_softmax_row();
  pool.run(q_blocks * s.q_heads, [&](int64_t task) {
    const int head = static_cast<int>(task % s.q_heads);
    const int64_t q0 = (task / s.q_heads) * kQueryBlock;
    const int64_t rows = std::min(kQueryBlock, s.q_rows - q0);
    const int kv_head = head / group;
    const float* qh = q + q0 * s.q_stride + head * d;
    const float* kh = k + kv_head * d;
    const float* vh = v + kv_head * d;

    thread_local std::vector<float> scores, acc, row_max, row_sum;
    scores.resize(static_cast<size_t>(kQueryBlock * kKeyBlock));
    acc.assign(static_cast<size_t>(rows * d), 0.0f);
    row_max.assign(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
    row_sum.assign(static_cast<size_t>(rows), 0.0f);

    auto visible = [&](int64_t i) { return i < s.causal_rows ? i + 1 : s.kv_rows; };
    int64_t keys_needed = 0;
    for (int64_t r = 0; r < rows; ++r) keys_needed = std::max(keys_needed, visible(q0 + r));

    for (int64_t k0 = 0; k0 < keys_needed; k0 += kKeyBlock) {
      const int64_t cols = std::min(kKeyBlock, keys_needed - k0);
      sgemm_nt(rows, cols, d, qh, s.q_stride, kh + k0 * s.k_stride, s.k_stride, scores.data(), kKeyBlock, false);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t limit = std::max<int64_t>(0, std::min(cols, visible(q0 + r) - k0));  // keys past it are masked
        const float correction = softmax_row(scores.data() + r * kKeyBlock, cols, limit, s.scale, row_max[r], row_sum[r]);
        if (correction < 0 || correction == 1.0f) continue;
        float* ar = acc.data() + r * d;
        for (int64_t j = 0; j < d; ++j) ar[j] *= correction;
      }
      sgemm_nn(rows, d, cols, scores.data(), kKeyBlock, vh + k0 * s.v_stride, s.v_stride, acc.data(), d, true);
    }
    for (int64_t r = 0; r < rows; ++r) {
      float* o = out + (q0 + r) * s.out_stride + head * d;
      const float inv = 1.0f / row_sum[r];
      for (int64_t j = 0; j < d; ++j) o[j] = acc[static_cast<size_t>(r * d + j)] * inv;
    }
  });
}

}  // namespace rgbaq::engine::cpu
