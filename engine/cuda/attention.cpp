#include "engine/cuda/attention.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/cuda/attention_plan.h"
#include "engine/cuda/kernels.h"

namespace rgbaq::engine::cuda {

void attention(Gemm& gemm, ElementType type, const AttentionArgs& a, const AttentionWorkspace& ws, cudaStream_t stream) {
  if (a.q_heads <= 0 || a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0) {
    throw std::invalid_argument("attention: " + std::to_string(a.q_heads) + " query heads over " +
                                std::to_string(a.kv_heads) + " key/value heads");
  }
  const int group = a.q_heads / a.kv_heads;
  const int64_t d = a.head_dim, esize = static_cast<int64_t>(element_size(type));
  const int64_t chunk = attention_chunk_rows(a.q_heads, a.q_rows, a.kv_rows, ws.elements);
  if (int64_t{a.q_heads} * score_stride(a.kv_rows) > ws.elements) {
    throw std::logic_error("attention: the workspace holds " + std::to_string(ws.elements) + " scores, one query needs " +
                           std::to_string(int64_t{a.q_heads} * score_stride(a.kv_rows)));
  }
  const auto* q = static_cast<const char*>(a.q);
  auto* probs = static_cast<char*>(ws.probs);
  for (int64_t q0 = 0; q0 < a.q_rows; q0 += chunk) {
    const int64_t rows = std::min(chunk, a.q_rows - q0);
    // Keys this chunk can see: causal rows need only keys up to their own.
    const int64_t keys = attention_chunk_keys(q0, rows, a.causal_rows, a.kv_rows);
    const int64_t ld = score_stride(keys), per_head = rows * ld;  // ld padded: aligned rows for cuBLASLt
    for (int g = 0; g < group; ++g) {
      // Query heads kvh * group + g for every key/value head kvh: one batched GEMM.
      GemmShape s;
      s.m = rows, s.n = keys, s.k = d;
      s.lda = a.ldq, s.ldb = a.ldk, s.ldc = ld;
      s.b_transposed = true;
      s.batch = a.kv_heads;
      s.stride_a = group * d, s.stride_b = d, s.stride_c = group * per_head;
      gemm.run(s, type, q + (q0 * a.ldq + g * d) * esize, a.k, ws.scores + g * per_head, a.scale);
    }
    masked_softmax(ws.scores, a.q_heads, rows, keys, ld, q0, a.causal_rows, ws.probs, type, stream);
    for (int g = 0; g < group; ++g) {
      GemmShape s;
      s.m = rows, s.n = d, s.k = keys;
      s.lda = ld, s.ldb = a.ldv, s.ldc = a.ldo;
      s.b_transposed = false;
      s.batch = a.kv_heads;
      s.stride_a = group * per_head, s.stride_b = d, s.stride_c = group * d;
      gemm.run(s, type, probs + g * per_head * esize, a.v, a.out + q0 * a.ldo + g * d);
    }
  }
}

}  // namespace rgbaq::engine::cuda
