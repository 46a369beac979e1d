#include "engine/cuda/flash_attention.h"

#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "engine/cuda/kernels.h"

namespace rgbaq::engine::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kQueryRows = 16 * kWarps;  // a block's queries: 16 per warp (one mma row tile)
constexpr int kKeyBlock = 64;            // keys per pass
constexpr int kThreads = 32 * kWarps;

__device__ __forceinline__ void mma_bf16(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, the first in the low half (the lower column of an mma fragment).
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 p = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &p, sizeof u);
  return u;
}

__device__ __forceinline__ uint32_t load_pair(const __nv_bfloat16* p) { return *reinterpret_cast<const uint32_t*>(p); }

// V's B fragment: keys `key` and key + 1 of column `dim`, two rows apart in the row-major tile. With
// rows padded by 8 elements the 32 lanes' loads fall in distinct banks (8 t + g / 2 + 4 d).
template <int Width>
__device__ __forceinline__ uint32_t key_pair(const __nv_bfloat16 (*tile)[Width], int key, int dim) {
  uint16_t lo, hi;
  memcpy(&lo, &tile[key][dim], 2);
  memcpy(&hi, &tile[key + 1][dim], 2);
  return uint32_t{lo} | uint32_t{hi} << 16;
}

// Fragment layouts of mma.m16n8k16 (PTX ISA), with g = lane / 4 and t = lane % 4:
//   A (16 x 16, row-major): a0 (g, 2t..2t+1), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..);
//   B (16 x 8, k by n):     b0 (k 2t..2t+1, n g), b1 (k 2t + 8.., n g);
//   C (16 x 8, fp32):       c0, c1 (g, 2t..2t+1), c2, c3 (g + 8, 2t..2t+1).
// S = Q K^T takes B from K's rows (k is the head dim: contiguous in a K row); O += P V takes B from V's
// rows two at a time (k is the key: a column of V, key_pair); P's C fragments of two key
// tiles are the A fragment of one 16-key step, so P never leaves the registers.
template <int D>
__global__ void __launch_bounds__(kThreads) flash_attention_kernel(const __nv_bfloat16* __restrict__ q,
                                                                   const __nv_bfloat16* __restrict__ k,
                                                                   const __nv_bfloat16* __restrict__ v, float* out,
                                                                   __nv_bfloat16* out_bf16,
                                                                   int64_t ldq, int64_t ldk, int64_t ldv, int64_t ldo,
                                                                   int64_t q_rows, int64_t kv_rows, int64_t causal_rows,
                                                                   int group, float scale_log2) {
  __shared__ __align__(16) __nv_bfloat16 keys[kKeyBlock][D + 8];      // padded rows: fewer bank conflicts
  __shared__ __align__(16) __nv_bfloat16 values[kKeyBlock][D + 8];
  const int head = blockIdx.y, kv_head = head / group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t q0 = int64_t{blockIdx.x} * kQueryRows, row0 = q0 + warp * 16 + g, row1 = row0 + 8;

  uint32_t qa[D / 16][4];
  #pragma unroll
  for (int s = 0; s < D / 16; ++s) {
    const int c = s * 16 + 2 * t;
    const __nv_bfloat16* r0 = q + row0 * ldq + int64_t{head} * D;
    const __nv_bfloat16* r1 = q + row1 * ldq + int64_t{head} * D;
    qa[s][0] = row0 < q_rows ? load_pair(r0 + c) : 0u;
    qa[s][1] = row1 < q_rows ? load_pair(r1 + c) : 0u;
    qa[s][2] = row0 < q_rows ? load_pair(r0 + c + 8) : 0u;
    qa[s][3] = row1 < q_rows ? load_pair(r1 + c + 8) : 0u;
  }
  float o[D / 8][4] = {};
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

  // attention_chunk_keys: a block wholly inside the causal rows sees keys up to its last query only.
  const int64_t key_end = q0 + kQueryRows <= causal_rows ? (kv_rows < q0 + kQueryRows ? kv_rows : q0 + kQueryRows) : kv_rows;
  for (int64_t k0 = 0; k0 < key_end; k0 += kKeyBlock) {
    __syncthreads();  // the last pass's reads of the tiles are done
    for (int i = threadIdx.x; i < kKeyBlock * (D / 8); i += kThreads) {
      const int r = i / (D / 8), c = i % (D / 8) * 8;  // D is a power of two: shifts
      const int64_t key = k0 + r;
      uint4 kk = make_uint4(0, 0, 0, 0), vv = make_uint4(0, 0, 0, 0);  // keys past the end: zeros, masked
      if (key < kv_rows) {
        kk = *reinterpret_cast<const uint4*>(k + key * ldk + int64_t{kv_head} * D + c);
        vv = *reinterpret_cast<const uint4*>(v + key * ldv + int64_t{kv_head} * D + c);
      }
      *reinterpret_cast<uint4*>(&keys[r][c]) = kk;
      *reinterpret_cast<uint4*>(&values[r][c]) = vv;
    }
    __syncthreads();

    float s[kKeyBlock / 8][4] = {};
    #pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
      #pragma unroll
      for (int kd = 0; kd < D / 16; ++kd) {
        mma_bf16(s[n], qa[kd], load_pair(&keys[n * 8 + g][kd * 16 + 2 * t]), load_pair(&keys[n * 8 + g][kd * 16 + 8 + 2 * t]));
      }
    }
    float block_max[2] = {-INFINITY, -INFINITY};
    #pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int64_t row = i < 2 ? row0 : row1, key = k0 + n * 8 + 2 * t + (i & 1);
        const bool masked = key >= kv_rows || (row < causal_rows && key > row);
        s[n][i] = masked ? -INFINITY : s[n][i] * scale_log2;
        block_max[i / 2] = fmaxf(block_max[i / 2], s[n][i]);
      }
    }
    float offset[2];
    #pragma unroll
    for (int r = 0; r < 2; ++r) {  // a row's 4 threads share its max
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 1));
      block_max[r] = fmaxf(block_max[r], __shfl_xor_sync(0xffffffffu, block_max[r], 2));
      const float m_new = fmaxf(m[r], block_max[r]);
      // A row with every key so far masked keeps nothing: no -inf - -inf.
      offset[r] = m_new == -INFINITY ? 0.0f : m_new;
      const float rescale = m[r] == -INFINITY ? 0.0f : exp2f(m[r] - offset[r]);
      m[r] = m_new;
      l[r] *= rescale;
      #pragma unroll
      for (int d = 0; d < D / 8; ++d) o[d][2 * r] *= rescale, o[d][2 * r + 1] *= rescale;
    }
    #pragma unroll
    for (int n = 0; n < kKeyBlock / 8; ++n) {
      #pragma unroll
      for (int i = 0; i < 4; ++i) {
        s[n][i] = exp2f(s[n][i] - offset[i / 2]);
        l[i / 2] += s[n][i];
      }
    }
    #pragma unroll
    for (int step = 0; step < kKeyBlock / 16; ++step) {
      const uint32_t pa[4] = {pack_bf16(s[2 * step][0], s[2 * step][1]), pack_bf16(s[2 * step][2], s[2 * step][3]),
                              pack_bf16(s[2 * step + 1][0], s[2 * step + 1][1]),
                              pack_bf16(s[2 * step + 1][2], s[2 * step + 1][3])};
      #pragma unroll
      for (int d = 0; d < D / 8; ++d) {
        const int key = step * 16 + 2 * t, dim = d * 8 + g;
        mma_bf16(o[d], pa, key_pair(values, key, dim), key_pair(values, key + 8, dim));
      }
    }
  }
  #pragma unroll
  for (int r = 0; r < 2; ++r) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
  }
  const float inv0 = l[0] > 0.0f ? 1.0f / l[0] : 0.0f, inv1 = l[1] > 0.0f ? 1.0f / l[1] : 0.0f;
  #pragma unroll
  for (int d = 0; d < D / 8; ++d) {
    const int64_t c = int64_t{head} * D + d * 8 + 2 * t;
    if (out_bf16) {  // a pair of bf16 at an even column: one 4-byte store
      if (row0 < q_rows) *reinterpret_cast<uint32_t*>(out_bf16 + row0 * ldo + c) = pack_bf16(o[d][0] * inv0, o[d][1] * inv0);
      if (row1 < q_rows) *reinterpret_cast<uint32_t*>(out_bf16 + row1 * ldo + c) = pack_bf16(o[d][2] * inv1, o[d][3] * inv1);
    } else {
      if (row0 < q_rows) out[row0 * ldo + c] = o[d][0] * inv0, out[row0 * ldo + c + 1] = o[d][1] * inv0;
      if (row1 < q_rows) out[row1 * ldo + c] = o[d][2] * inv1, out[row1 * ldo + c + 1] = o[d][3] * inv1;
    }
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

std::string flash_attention_refusal(const AttentionArgs& a) {
  if (a.head_dim != 32 && a.head_dim != 64 && a.head_dim != 128) {
    return "head dim " + std::to_string(a.head_dim) + " (it takes 32, 64 or 128)";
  }
  if (a.q_heads <= 0 || a.kv_heads <= 0 || a.q_heads % a.kv_heads != 0) {
    return std::to_string(a.q_heads) + " query heads over " + std::to_string(a.kv_heads) + " key/value heads";
  }
  if (a.q_heads > 65535) return std::to_string(a.q_heads) + " query heads (at most 65535)";
  const int64_t q_width = int64_t{a.q_heads} * a.head_dim, kv_width = int64_t{a.kv_heads} * a.head_dim;
  if (a.ldq < q_width || a.ldo < q_width || a.ldk < kv_width || a.ldv < kv_width) {
    return "row strides narrower than the heads (q " + std::to_string(a.ldq) + ", out " + std::to_string(a.ldo) + " for " +
           std::to_string(q_width) + "; k " + std::to_string(a.ldk) + ", v " + std::to_string(a.ldv) + " for " +
           std::to_string(kv_width) + ")";
  }
  if (a.ldq % 8 != 0 || a.ldk % 8 != 0 || a.ldv % 8 != 0) {
    return "row strides " + std::to_string(a.ldq) + ", " + std::to_string(a.ldk) + ", " + std::to_string(a.ldv) +
           " (each a multiple of 8 elements)";
  }
  if (!aligned16(a.q) || !aligned16(a.k) || !aligned16(a.v)) return "q, k or v not 16-byte aligned";
  if (a.out_bf16 && (a.ldo % 2 != 0 || reinterpret_cast<uintptr_t>(a.out_bf16) % 4 != 0)) return "a bf16 output not in aligned pairs (ldo odd)";
  return "";
}

void require_fused_attention(const AttentionArgs& shape, ElementType type, const std::string& graph) {
  if (type != ElementType::kBf16) throw std::invalid_argument(graph + ": fused attention takes bf16 (not the fp32 precision)");
  if (const std::string why = flash_attention_refusal(shape); !why.empty()) {
    throw std::invalid_argument(graph + ": fused attention cannot take " + why);
  }
}

void flash_attention(const AttentionArgs& a, cudaStream_t stream) {
  if (const std::string why = flash_attention_refusal(a); !why.empty()) {
    throw std::invalid_argument("fused attention cannot take " + why);
  }
  if (!a.out && !a.out_bf16) throw std::invalid_argument("fused attention: no output given");
  if (a.q_rows == 0) return;
  const dim3 grid(static_cast<unsigned>((a.q_rows + kQueryRows - 1) / kQueryRows), static_cast<unsigned>(a.q_heads));
  const auto* q = static_cast<const __nv_bfloat16*>(a.q);
  const auto* k = static_cast<const __nv_bfloat16*>(a.k);
  const auto* v = static_cast<const __nv_bfloat16*>(a.v);
  const float scale_log2 = a.scale * 1.4426950408889634f;  // exp(x) = exp2(x log2 e)
  const int group = a.q_heads / a.kv_heads;
  auto* out_bf16 = static_cast<__nv_bfloat16*>(a.out_bf16);
  count_launch();
  switch (a.head_dim) {
    case 32:
      flash_attention_kernel<32><<<grid, kThreads, 0, stream>>>(q, k, v, a.out, out_bf16, a.ldq, a.ldk, a.ldv, a.ldo, a.q_rows,
                                                                a.kv_rows, a.causal_rows, group, scale_log2);
      break;
    case 64:
      flash_attention_kernel<64><<<grid, kThreads, 0, stream>>>(q, k, v, a.out, out_bf16, a.ldq, a.ldk, a.ldv, a.ldo, a.q_rows,
                                                                a.kv_rows, a.causal_rows, group, scale_log2);
      break;
    default:
      flash_attention_kernel<128><<<grid, kThreads, 0, stream>>>(q, k, v, a.out, out_bf16, a.ldq, a.ldk, a.ldv, a.ldo, a.q_rows,
                                                                 a.kv_rows, a.causal_rows, group, scale_log2);
      break;
  }
}

}  // namespace rgbaq::engine::cuda
