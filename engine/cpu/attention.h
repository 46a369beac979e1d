#pragma once
// Softmax attention that streams over keys (online softmax, as in FlashAttention): scores exist only
// for a block of 256 queries by 256 keys at a time, so memory grows with the sequence, not its square.
// Grouped-query: query head h reads key/value head h / (q_heads / kv_heads). fp32 throughout.
#include <cstdint>

#include "engine/cpu/thread_pool.h"

namespace rgbaq::engine::cpu {

struct AttentionShape {
  int64_t q_rows = 0, kv_rows = 0;
  int q_heads = 0, kv_heads = 0, head_dim = 0;
  int64_t q_stride = 0, k_stride = 0, v_stride = 0, out_stride = 0;  // floats between rows
  // Query rows below causal_rows see keys 0..i only (causal); the rest see all kv_rows keys.
  int64_t causal_rows = 0;
  float scale = 0;  // usually 1 / sqrt(head_dim)
};

// out[i, h*d : (h+1)*d] = softmax(q_i k^T * scale over the visible keys) v, for every head.
void attention(const float* q, const float* k, const float* v, float* out, const AttentionShape& shape, ThreadPool& pool);

}  // namespace rgbaq::engine::cpu
