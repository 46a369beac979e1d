#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/cpu/linear.h"

namespace rgbaq::engine::cpu {
namespace {

constexpr int64_t kQueryBlock = 32;
constexpr int64_t kKeyBlock = 128;

}  // namespace

void attention(const float* q, const float* k, const float* v, float* out, const AttentionShape& s, ThreadPool& pool) {
  if (s.q_heads <= 0 || s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
    throw std::invalid_argument("attention: " + std::to_string(s.q_heads) + " query heads over " +
                                std::to_string(s.kv_heads) + " key/value heads");
  }
  const int group = s.q_heads / s.kv_heads;
  const int64_t d = s.head_dim;
  const int64_t q_blocks = (s.q_rows + kQueryBlock - 1) / kQueryBlock;
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
        float* sr = scores.data() + r * kKeyBlock;
        const int64_t limit = std::min(cols, visible(q0 + r) - k0);  // keys at or past it are masked
        float block_max = -std::numeric_limits<float>::infinity();
        for (int64_t c = 0; c < limit; ++c) block_max = std::max(block_max, sr[c] *= s.scale);
        const float new_max = std::max(row_max[r], block_max);
        if (new_max == -std::numeric_limits<float>::infinity()) {  // nothing visible yet in this row
          std::fill(sr, sr + cols, 0.0f);
          continue;
        }
        const float correction = std::exp(row_max[r] - new_max);
        float sum = 0;
        for (int64_t c = 0; c < cols; ++c) {
          sr[c] = c < limit ? std::exp(sr[c] - new_max) : 0.0f;
          sum += sr[c];
        }
        row_sum[r] = row_sum[r] * correction + sum;
        row_max[r] = new_max;
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
