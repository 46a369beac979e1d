#pragma once
// The arithmetic of attention.cpp's query chunks, plain C++ so the host tests check it without a GPU.
// Scores of a chunk are [heads, rows, stride] with the row stride padded to 8 elements: 16-byte
// aligned rows and per-head offsets for the bf16 probabilities, so cuBLASLt keeps its tensor-core
// kernels whatever L + N is (an odd number of keys otherwise gives odd leading dimensions).
#include <algorithm>
#include <cstdint>

namespace rgbaq::engine::cuda {

// The padded row stride of a chunk's scores for `keys` keys.
inline int64_t score_stride(int64_t keys) { return (keys + 7) / 8 * 8; }

// Workspace elements for attention over kv_rows keys: room for every query row at once when that is
// under `budget`, else `budget`, but never less than one query row of every head.
inline int64_t attention_score_elements(int heads, int64_t q_rows, int64_t kv_rows, int64_t budget) {
  const int64_t one_row = int64_t{heads} * score_stride(kv_rows);
  return std::max(one_row, std::min(budget, one_row * q_rows));
}

// Query rows per chunk: as many as the workspace holds at the widest (all kv_rows keys), at least 1.
inline int64_t attention_chunk_rows(int heads, int64_t q_rows, int64_t kv_rows, int64_t elements) {
  return std::max<int64_t>(1, std::min(q_rows, elements / (int64_t{heads} * score_stride(kv_rows))));
}

// The keys a chunk of queries [q0, q0 + rows) can see: a chunk wholly inside the causal rows needs
// keys up to its last query only; any other chunk all kv_rows keys (the softmax masks per row).
inline int64_t attention_chunk_keys(int64_t q0, int64_t rows, int64_t causal_rows, int64_t kv_rows) {
  return q0 + rows <= causal_rows ? q0 + rows : kv_rows;
}

}  // namespace rgbaq::engine::cuda
