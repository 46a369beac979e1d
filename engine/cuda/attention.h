#pragma once
// Softmax attention on the GPU as query chunks through batched cuBLASLt GEMMs: for a chunk of queries,
// scores = Q K^T * scale for every head (one batched GEMM per query head of a key/value group, so GQA
// costs no copies), a masked softmax kernel, then P V. The scores exist for one chunk at a time
// ([heads, chunk, keys], sized to the workspace given), so memory grows linearly with the sequence.
// Masks: query i (0-based over all queries) sees keys < i + 1 when i < causal_rows, else all keys:
// the encoder's causal mask (causal_rows = all) and the DiT's block-causal one (causal_rows = L).
#include <cstdint>

#include "engine/cuda/gemm.h"

namespace rgbaq::engine::cuda {

struct AttentionArgs {
  const void* q = nullptr;  // [q_rows, q_heads * d], row stride ldq, in the GEMM type
  const void* k = nullptr;  // [kv_rows, kv_heads * d], row stride ldk
  const void* v = nullptr;  // [kv_rows, kv_heads * d], row stride ldv
  float* out = nullptr;     // [q_rows, q_heads * d] fp32, row stride ldo
  // flash_attention only: when set, the output goes here in bf16 (same layout) instead of to `out`,
  // which is what the next GEMM reads: no fp32 copy and no conversion pass.
  void* out_bf16 = nullptr;
  int64_t ldq = 0, ldk = 0, ldv = 0, ldo = 0;
  int64_t q_rows = 0, kv_rows = 0, causal_rows = 0;
  int q_heads = 0, kv_heads = 0, head_dim = 0;
  float scale = 0;
};

struct AttentionWorkspace {
  float* scores = nullptr;  // `elements` fp32
  void* probs = nullptr;    // `elements` in the GEMM type
  int64_t elements = 0;
};

void attention(Gemm& gemm, ElementType type, const AttentionArgs& a, const AttentionWorkspace& ws, cudaStream_t stream);

}  // namespace rgbaq::engine::cuda
