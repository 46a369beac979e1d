#include "engine/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "engine/cpu/linear.h"

namespace rgbaq::engine::cpu {
namespace {

// Larger blocks keep the two small GEMMs per block efficient; scores stay 128 KiB (in L2).
constexpr int64_t kQueryBlock = 128;
constexpr int64_t kKeyBlock = 256;

// e^x for x <= 0 (softmax's arguments after the max is subtracted): Cephes' expf, range reduction by
// ln 2 and a degree-6 polynomial, branch-free so the loops below vectorise (relative error ~2e-7,
// against libm's ~20 cycles a call, which at N = 4096 was a sixth of the DiT step).
inline float exp_nonpositive(float x) {
  x = std::max(x, -87.0f);
  const float n = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

// One row of a score block: scale the first `limit` scores, fold them into the running max and sum,
// leave exp(score - max) (0 past `limit`) in place; returns the factor that rescales the older
// accumulators, or a negative value when the row has seen no visible key yet.
// Not under ThreadSanitizer: it instruments the ifunc resolver, which runs before its runtime is up.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx2", "default")))
#endif
float softmax_block_row(float* sr, int64_t cols, int64_t limit, float scale, float& row_max, float& row_sum) {
  float lane_max[8];
  std::fill(lane_max, lane_max + 8, -std::numeric_limits<float>::infinity());
  int64_t c = 0;
  for (; c + 8 <= limit; c += 8)
    for (int j = 0; j < 8; ++j) lane_max[j] = std::max(lane_max[j], sr[c + j] *= scale);
  float block_max = *std::max_element(lane_max, lane_max + 8);
  for (; c < limit; ++c) block_max = std::max(block_max, sr[c] *= scale);
  const float new_max = std::max(row_max, block_max);
  if (new_max == -std::numeric_limits<float>::infinity()) {  // nothing visible yet in this row
    std::fill(sr, sr + cols, 0.0f);
    return -1.0f;
  }
  for (c = 0; c < limit; ++c) sr[c] = exp_nonpositive(sr[c] - new_max);
  std::fill(sr + std::max<int64_t>(limit, 0), sr + cols, 0.0f);
  float lane_sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (c = 0; c + 8 <= limit; c += 8)
    for (int j = 0; j < 8; ++j) lane_sum[j] += sr[c + j];
  float sum = 0;
  for (int j = 0; j < 8; ++j) sum += lane_sum[j];
  for (; c < limit; ++c) sum += sr[c];
  const float correction = exp_nonpositive(row_max - new_max);
  row_sum = row_sum * correction + sum;
  row_max = new_max;
  return correction;
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
        const float correction = softmax_block_row(scores.data() + r * kKeyBlock, cols, limit, s.scale, row_max[r], row_sum[r]);
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
