#pragma once
// The CUDA graphs' device workspaces as plain arithmetic, so the host tests check them against a table
// worked out by hand and a session decides what fits before it allocates: the DiT's (sized for its
// widest pass, the text prefix or a step), its per-image RoPE and text-prefix keys/values, the VAE's
// feature maps, the encoder's per-prompt buffers and cuBLASLt's workspace. The graphs allocate exactly
// these buffers, in this order (CudaDit::ensure_workspace, CudaVae::ensure_maps, CudaTextEncoder::encode).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/cuda/attention_plan.h"
#include "engine/cuda/linear_format.h"
#include "engine/cuda/w8a8_plan.h"
#include "engine/model/model_config.h"
#include "engine/vae_tile_plan.h"

namespace rgbaq::engine::cuda {

// Attention scores per query chunk (fp32, and the probabilities again in the GEMM type).
inline constexpr int64_t kDitScoreBudget = int64_t{64} << 20;
inline constexpr int64_t kEncoderScoreBudget = int64_t{16} << 20;
inline constexpr int64_t kVaeScoreBudget = int64_t{64} << 20;
inline constexpr int64_t kVaeColumnBudget = int64_t{64} << 20;  // im2col elements per row strip
inline constexpr int64_t kGemmWorkspaceBytes = int64_t{32} << 20;
// --fused-blocks: the rows a stacked GEMM (Q|K|V, gate|up) takes at a time. At real dims a chunk's GEMM
// is still 8 x 96 tiles of 128 x 256 (several waves on 132 SMs), and its fp32 product 96 MiB, not 384.
inline constexpr int64_t kDitChunkRows = 1024;

struct WorkspaceBuffer {
  const char* what;
  int64_t bytes;
};

inline int64_t bytes_of(const std::vector<WorkspaceBuffer>& buffers) {
  int64_t n = 0;
  for (const auto& b : buffers) n += b.bytes;
  return n;
}

// The DiT's workspace for its widest pass, the text prefix's L = `text_rows` or a step's N =
// `image_rows`, over L + N keys; the text features and the image tokens and velocity hold their own
// rows only. `e`: bytes an element of the GEMM type. With `fused_attention` (flash_attention.h) there
// are no scores and no fp32 attention output: the entries stay, empty, so the buffers keep their
// places. With `fused_blocks` (--fused-blocks) Q|K|V and gate|up are one GEMM each over chunks of
// kDitChunkRows rows, both written into the MLP gate buffer (the Q|K|V product is dead before the MLP
// starts): it holds a chunk's [rows, 2 mlp] or [rows, 3 dim], and the projections and up buffers are
// empty.
inline std::vector<WorkspaceBuffer> dit_workspace(const DitConfig& c, int64_t e, int64_t text_rows, int64_t image_rows,
                                                  bool fused_attention = false, bool fused_blocks = false) {
  const int64_t l = text_rows, n = image_rows, r = std::max(l, n), k = l + n, dim = c.dim(), mlp = dim * c.mlp_ratio, f = 4;
  const int64_t scores = fused_attention ? 0 : attention_score_elements(c.heads, r, k, kDitScoreBudget);
  const int64_t gate = fused_blocks ? std::max(2 * mlp, 3 * dim) * std::min(r, kDitChunkRows) : mlp * r,
                up = fused_blocks ? 0 : mlp * r;
  return {{"DiT residual stream", r * dim * f},
          {"DiT normed rows", r * std::max<int64_t>(dim, c.context_dim) * e},
          {"DiT projections", fused_blocks ? 0 : r * dim * f},
          {"DiT queries", r * dim * e},
          {"DiT keys", k * dim * e},
          {"DiT values", k * dim * e},
          {"DiT attention output", fused_attention ? 0 : r * dim * f},
          {"DiT attention output", r * dim * e},
          {"DiT block output", r * dim * f},
          {"DiT MLP gate", gate * f},
          {"DiT MLP up", up * f},
          {"DiT MLP hidden", r * mlp * e},
          {"DiT attention scores", scores * f},
          {"DiT attention probabilities", scores * e},
          {"DiT image tokens", n * 64 * f},
          {"DiT text features", l * c.context_dim * f},
          {"DiT velocity", n * 64 * f}};
}

// An image's RoPE tables and each block's text keys and values, L text and N image tokens.
inline std::vector<WorkspaceBuffer> dit_image_buffers(const DitConfig& c, int64_t e, int64_t l, int64_t n) {
  const int64_t prefix = int64_t{c.layers} * l * c.dim() * e;
  return {{"DiT RoPE", l * 64 * 4}, {"DiT RoPE", l * 64 * 4}, {"DiT RoPE", n * 64 * 4}, {"DiT RoPE", n * 64 * 4},
          {"DiT text prefix keys", prefix}, {"DiT text prefix values", prefix}};
}

// The VAE's feature maps for a decode planned as `plan` (engine/vae_tile_plan.h), in CudaVae's order.
// Untiled, every map buffer is sized for the largest map of the decode (each up block works at its
// channels and 4x the pixels of the last; the mid attention's qkv is 3 C wide). Tiled, each buffer for
// the largest map it holds, in the whole-map part and in one tile at its crop bound: the two feature
// maps (which swap) any stage's input, output or upsampled output, and the mid attention's qkv; the
// conv input the same but for the qkv; the shortcut map the 1x1 shortcuts and the attention's output;
// the up block input each upsampling block's input (which it adds back after its upsampler); plus the
// whole map entering the first tiled block, which the tiles crop from, and the image their cores are
// written into.
inline std::vector<WorkspaceBuffer> vae_workspace(const VaeConfig& c, int64_t e, const VaeTilePlan& plan) {
  const std::vector<int64_t> dims = vae_decoder_dims(c);
  const int64_t grid_pixels = plan.grid_height * plan.grid_width, f = 4;
  const int64_t scores = attention_score_elements(1, grid_pixels, grid_pixels, kVaeScoreBudget);
  const int64_t tokens = std::max(64 * f, 3 * dims[0] * e) * grid_pixels;
  if (!plan.tiled()) {
    const int64_t largest = vae_whole_map_elements(c, plan), columns = std::min(kVaeColumnBudget, largest * 9);
    int64_t skip = 0;
    for (int i = 0, pixels = 1; i < plan.up_blocks; ++i) {
      if (!vae_block_upsamples(c, i)) continue;
      skip = std::max(skip, dims[i] * grid_pixels * pixels);
      pixels *= 4;
    }
    return {{"VAE feature map", largest * f},      {"VAE feature map", largest * f},
            {"VAE shortcut map", largest * f},     {"VAE up block input", skip * f},
            {"VAE conv input", largest * e},       {"VAE im2col strip", columns * e},
            {"VAE latents and attention tokens", tokens}, {"VAE attention scores", scores * f},
            {"VAE attention probabilities", scores * e}};
  }
  int64_t map = std::max<int64_t>(64, 3 * dims[0]) * grid_pixels, conv_input = std::max<int64_t>(64, dims[0]) * grid_pixels,
          shortcut = dims[0] * grid_pixels, block_input = 0;
  const auto blocks = [&](int from, int to, int64_t pixels) {
    for (int i = from; i < to; ++i) {
      const int64_t in = dims[i], out = dims[i + 1];
      map = std::max(map, std::max(in, out) * pixels), conv_input = std::max(conv_input, std::max(in, out) * pixels);
      if (in != out) shortcut = std::max(shortcut, out * pixels);
      if (vae_block_upsamples(c, i)) block_input = std::max(block_input, in * pixels), pixels *= 4;
      map = std::max(map, out * pixels), conv_input = std::max(conv_input, out * pixels);
    }
  };
  blocks(0, plan.first_tiled, grid_pixels);
  blocks(plan.first_tiled, plan.up_blocks, plan.crop_bound_height() * plan.crop_bound_width());
  const int64_t level = plan.level_height * plan.level_width, image = level * plan.scale * plan.scale;
  return {{"VAE feature map", map * f},
          {"VAE feature map", map * f},
          {"VAE shortcut map", shortcut * f},
          {"VAE up block input", block_input * f},
          {"VAE conv input", conv_input * e},
          {"VAE im2col strip", std::min(kVaeColumnBudget, conv_input * 9) * e},
          {"VAE latents and attention tokens", tokens},
          {"VAE attention scores", scores * f},
          {"VAE attention probabilities", scores * e},
          {"VAE map the tiles crop from", dims[plan.first_tiled] * level * f},
          {"VAE tiled image", int64_t{c.out_channels} * image * f}};
}

// The tiled decode's budget (issue 21: 1 GiB at 1024x1024 real dims); a grid it cannot meet takes the
// next power of two (2 GiB at 2048x2048).
inline constexpr int64_t kVaeTiledBudget = int64_t{1} << 30;

// A grid of side ceil(sqrt(n)): its plan's buffers bound those of every grid of at most n latents
// planned with the same first tiled block and tile side (VaeTilePlan::crop_bound_height).
inline int64_t vae_bounding_side(int64_t image_tokens) {
  int64_t s = 1;
  while (s * s < image_tokens) ++s;
  return s;
}

// The tiled plan for a grid, its buffers within kVaeTiledBudget (or the next power of two that fits).
inline VaeTilePlan vae_tiled_plan(const VaeConfig& c, int64_t e, int64_t grid_height, int64_t grid_width) {
  return plan_vae_tiles(
      c, grid_height, grid_width, [&](const VaeTilePlan& p) { return bytes_of(vae_workspace(c, e, p)); }, kVaeTiledBudget);
}

// The plan a session sizes its VAE buffers by for renders of up to `image_tokens` latents: untiled
// (its buffers depend on the pixels only), or with --vae-tiles the tiled plan of the bounding square,
// whose first tiled block and tile side then serve every decode (CudaVae).
inline VaeTilePlan vae_session_plan(const VaeConfig& c, int64_t e, int64_t image_tokens, bool tiled) {
  if (!tiled) return vae_untiled_plan(c, 1, image_tokens);
  const int64_t side = vae_bounding_side(image_tokens);
  return vae_tiled_plan(c, e, side, side);
}

// The plan a session that planned `session` (vae_session_plan) decodes a grid by: its first tiled block
// and tile side, or untiled.
inline VaeTilePlan vae_decode_plan(const VaeConfig& c, const VaeTilePlan& session, int64_t grid_height, int64_t grid_width) {
  if (!session.tiled()) return vae_untiled_plan(c, grid_height, grid_width);
  return vae_tile_plan(c, grid_height, grid_width, session.first_tiled, session.tile);
}

// The encoder's buffers for one prompt of `n` tokens (Lfull), allocated per encode and freed after.
// With `fused_attention`, as the DiT's: no scores, no fp32 attention output.
inline std::vector<WorkspaceBuffer> encoder_workspace(const TextEncoderConfig& c, int64_t e, int64_t n,
                                                      bool fused_attention = false) {
  const int64_t h = c.hidden, q = int64_t{c.heads} * c.head_dim, kv = int64_t{c.kv_heads} * c.head_dim,
                inter = c.intermediate, f = 4, rope = n * (c.head_dim / 2) * f;
  const int64_t scores = fused_attention ? 0 : attention_score_elements(c.heads, n, n, kEncoderScoreBudget);
  return {{"encoder ids", n * 4},
          {"encoder RoPE", rope},
          {"encoder RoPE", rope},
          {"encoder residual stream", n * h * f},
          {"encoder normed rows", n * h * e},
          {"encoder projections", n * std::max(q, inter) * f},
          {"encoder queries", n * q * e},
          {"encoder keys", n * kv * e},
          {"encoder values", n * kv * e},
          {"encoder attention", fused_attention ? 0 : n * q * f},
          {"encoder MLP up", n * inter * f},
          {"encoder MLP hidden", n * std::max(inter, q) * e},
          {"encoder attention scores", scores * f},
          {"encoder attention probabilities", scores * e}};
}

// The Linear runner's scratch (device_linear.h), which the DiT and the encoder share: the largest Linear
// kept int8, dequantized in the GEMM type; the widest input an fp8 Linear takes, as codes and row
// scales; and the largest output of an fp8 Linear that adds to its y (the encoder's o_proj and
// down_proj), for the FP8 GEMM's fallback (gemm.h), counted whether or not the device needs it.
// Then, with --gpu-int8 w8a8, the W8A8 Linears' codes, row scales and int32 product (w8a8_plan.h).
// `dit_rows`: the DiT's widest pass; `encoder_rows`: the longest prompt (Lfull). With `fused_blocks`
// the DiT's stacks are its widest Linears: Q|K|V [3 dim, dim] and gate|up [2 mlp, dim], a chunk's rows.
inline std::vector<WorkspaceBuffer> linear_scratch(const TextEncoderConfig& t, const DitConfig& d, int64_t e, LinearFormats f,
                                                   bool dit_int8, bool encoder_int8, int64_t dit_rows, int64_t encoder_rows,
                                                   bool fused_blocks = false) {
  const int64_t dim = d.dim(), mlp = dim * d.mlp_ratio, h = t.hidden, q = int64_t{t.heads} * t.head_dim,
                kv = int64_t{t.kv_heads} * t.head_dim, inter = t.intermediate;
  struct Linear {
    int64_t out, in;
    bool block, int8;
    int64_t rows;
    bool accumulates = false;
  };
  const Linear linears[] = {
      {dim, 64, false, dit_int8, 0},         {dim, d.context_dim, false, dit_int8, 0}, {dim, dim, false, dit_int8, 0},
      {dim, 256, false, dit_int8, 0},        {4 * dim, dim, false, dit_int8, 0},       {64, dim, false, dit_int8, 0},
      {dim, dim, true, dit_int8, dit_rows},  {mlp, dim, true, dit_int8, dit_rows},     {dim, mlp, true, dit_int8, dit_rows},
      {fused_blocks ? 3 * dim : 0, dim, true, dit_int8, std::min(dit_rows, kDitChunkRows)},
      {fused_blocks ? 2 * mlp : 0, dim, true, dit_int8, std::min(dit_rows, kDitChunkRows)},
      {q, h, true, encoder_int8, encoder_rows},     {kv, h, true, encoder_int8, encoder_rows},
      {h, q, true, encoder_int8, encoder_rows, true}, {inter, h, true, encoder_int8, encoder_rows},
      {h, inter, true, encoder_int8, encoder_rows, true}};
  int64_t weight = 0, codes = 0, scales = 0, accumulator = 0;
  W8A8Scratch w8a8;  // --gpu-int8 w8a8: counted for every Linear, since any of them may be stored ConvRot
  for (const Linear& l : linears) {
    if (f.w8a8) {
      const W8A8Scratch one = w8a8_scratch(l.rows, l.out, l.in);
      w8a8 = {std::max(w8a8.codes, one.codes), std::max(w8a8.scales, one.scales), std::max(w8a8.accumulator, one.accumulator)};
    }
    switch (f.of(l.int8, l.block)) {
      case LinearFormat::kInt8Blocks: weight = std::max(weight, l.out * l.in * e); break;
      case LinearFormat::kFp8Rows:
        codes = std::max(codes, l.rows * l.in);
        scales = std::max(scales, l.rows * 4);
        if (l.accumulates) accumulator = std::max(accumulator, l.rows * l.out * 4);
        break;
      case LinearFormat::kDense:
      case LinearFormat::kInt8ConvRot: break;  // never asked for here: l.int8 is a block-scaled weight
    }
  }
  return {{"an int8 Linear dequantized for its GEMM", weight},
          {"a Linear's input as FP8 codes", codes},
          {"a Linear's FP8 input row scales", scales},
          {"an fp8 Linear's accumulator", accumulator},
          {"a W8A8 Linear's rotated input as int8 codes", w8a8.codes},
          {"a W8A8 Linear's input row scales", w8a8.scales},
          {"a W8A8 Linear's int32 product", w8a8.accumulator}};
}

// What a session was asked for that changes its buffers beside the precision's element size.
struct WorkspaceChoices {
  LinearFormats formats;                         // the Linears' formats (fp8, int8 kept)
  bool dit_int8 = false, encoder_int8 = false;  // some of their Linears are stored int8
  bool vae_tiles = false;                        // the VAE decoded tile by tile (vae_session_plan)
  bool fused_attention = false;                  // the DiT's and the encoder's attention fused
  bool fused_blocks = false;                     // the DiT's stacked GEMMs and fused passes (dit_workspace)
};

// Everything a session holds beside its weights while it renders an image of `image_tokens` with a
// text of `text_tokens` (L; the encoder runs Lfull = `encoded_tokens`): the DiT's workspace at its
// widest pass, the image's buffers, the VAE's maps (all kept from the reservation on), the encoder's
// per-prompt buffers, cuBLASLt's workspace, and the Linear runner's scratch, as `c` makes them.
inline int64_t session_workspace_bytes(const TextEncoderConfig& t, const DitConfig& d, const VaeConfig& v, int64_t e,
                                       int64_t text_tokens, int64_t encoded_tokens, int64_t image_tokens,
                                       const WorkspaceChoices& c = {}) {
  const int64_t l = text_tokens, n = image_tokens;
  return bytes_of(dit_workspace(d, e, l, n, c.fused_attention, c.fused_blocks)) + bytes_of(dit_image_buffers(d, e, l, n)) +
         bytes_of(vae_workspace(v, e, vae_session_plan(v, e, n, c.vae_tiles))) +
         bytes_of(encoder_workspace(t, e, encoded_tokens, c.fused_attention)) + kGemmWorkspaceBytes +
         bytes_of(linear_scratch(t, d, e, c.formats, c.dit_int8, c.encoder_int8, std::max(l, n), encoded_tokens,
                                c.fused_blocks));
}

}  // namespace rgbaq::engine::cuda
