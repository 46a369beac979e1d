#pragma once
// Fused softmax attention (FlashAttention-2's scheme) for bf16 q, k, v: one pass over the keys in
// blocks of 64 with an online softmax, so no score matrix exists in device memory; bf16 tensor cores
// (mma.sync m16n8k16, sm_80 and later) with fp32 accumulation; fp32 output. The same masks and GQA as
// attention.h (whose GEMM-based form stays the reference the gpu tests compare it with). Head dims 32,
// 64 and 128 (the DiT's and the encoder's). Opt-in (--attention fused); never run on a GPU yet.
#include <cuda_runtime.h>

#include <string>

#include "engine/cuda/attention.h"

namespace rgbaq::engine::cuda {

// Why flash_attention cannot take `a`, or "" when it can: an unsupported head dim, heads that do not
// group, or rows and bases not 16-byte aligned for its vector loads (ldq, ldk, ldv multiples of 8), or
// a bf16 output (AttentionArgs::out_bf16) whose pairs are not 4-byte aligned.
std::string flash_attention_refusal(const AttentionArgs& a);

// Throws std::invalid_argument naming `graph` when its attention of this shape (pointers unset) in
// `type` cannot run fused: at session open, not at the first render.
void require_fused_attention(const AttentionArgs& shape, ElementType type, const std::string& graph);

// a.out = softmax(scale q k^T + mask) v; throws std::invalid_argument with the refusal's reason.
void flash_attention(const AttentionArgs& a, cudaStream_t stream);

}  // namespace rgbaq::engine::cuda
