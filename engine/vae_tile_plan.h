#pragma once
// How the VAE decoder splits a large decode into tiles whose result equals the whole decode (up to
// floating-point summation order), so its feature maps stay within a byte budget.
//
// Everything up to the input of up block `first_tiled` runs on the whole map: post_quant, conv_in, the
// mid block (its self-attention is global) and the early up blocks, whose maps are small. From there
// on every op is local: per-pixel channel norms, SiLU, 1x1 shortcuts, 3x3 convolutions with zero padding,
// nearest 2x upsampling and DupUp3D (which reads the block input at (Y/2, X/2)). So the map entering
// `first_tiled` (the "level") is cut into cores that partition it; each tile decodes its core plus a
// halo, cropped from the whole level map and clamped to it (at the true image border the zero padding
// is the real one), and keeps only its core's output.
//
// The halo: a 3x3 convolution over a cropped region spoils 1 pixel at each cut edge, at its level; an
// upsample doubles the region and the spoiled width. Counting back from the output, starting at 1 for
// conv_out: an up block adds 1 for its upsampler's conv, halves (rounding up) through its upsample, and
// adds 2 per res block (two 3x3 convs each; norms, shortcuts and DupUp3D spoil nothing new):
//   halo = 1;  for i = last up block down to first_tiled:
//                 if i upsamples: halo = ceil((halo + 1) / 2);
//                 halo += 2 * (num_res_blocks + 1)
// (vae_tile_halo). A crop with this halo at the level spoils at most halo * 2^upsamples output pixels
// at each cut edge, which is exactly what the halo's output covers.
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/model/model_config.h"

namespace rgbaq::engine {

// One row or column of tiles, in pixels of the level map: the core [core_begin, core_end) the tile keeps
// and the crop [crop_begin, crop_end) it decodes (the core plus the halo, clamped to the map).
struct VaeTileSpan {
  int64_t core_begin = 0, core_end = 0, crop_begin = 0, crop_end = 0;
};

struct VaeTilePlan {
  int64_t grid_height = 0, grid_width = 0;  // the latent grid
  int up_blocks = 0;                        // the decoder's
  int first_tiled = 0;                      // == up_blocks: untiled (the whole decode on whole maps)
  int64_t level_height = 0, level_width = 0;  // the map entering first_tiled: the grid x 2^(its upsamples before)
  int64_t halo = 0, tile = 0;               // at the level: halo width, and the side of a core
  int64_t scale = 1;                        // output pixels per level pixel, along an axis
  std::vector<VaeTileSpan> rows, cols;      // the tiles are every (row, col) pair; empty when untiled
  int64_t budget = 0;                       // plan_vae_tiles: the budget it met

  bool tiled() const { return first_tiled < up_blocks; }
  int64_t tile_count() const { return static_cast<int64_t>(rows.size() * cols.size()); }
  // The crop every tile fits in, for sizing buffers: min(level side, tile + 2 halo) on each axis. Its
  // area also bounds the crop areas of any grid of no more pixels planned with the same first_tiled and
  // tile (either both sides are tile + 2 halo, or the crop is at most the whole level).
  int64_t crop_bound_height() const;
  int64_t crop_bound_width() const;
  // The level pixels all tiles decode over the level's pixels (1 when untiled).
  double recompute_ratio() const;
};

// Up block i ends with a 2x upsample (all but the last).
bool vae_block_upsamples(const VaeConfig& config, int block);
// The halo at the input of up block first_tiled (the formula above).
int64_t vae_tile_halo(const VaeConfig& config, int first_tiled);

VaeTilePlan vae_untiled_plan(const VaeConfig& config, int64_t grid_height, int64_t grid_width);
// Cores of tile x tile level pixels (the last row and column shorter) from up block first_tiled on;
// first_tiled == the up block count gives the untiled plan. Throws std::invalid_argument naming a bad value.
VaeTilePlan vae_tile_plan(const VaeConfig& config, int64_t grid_height, int64_t grid_width, int first_tiled, int64_t tile);

// The largest map (channels x pixels) of the whole-map part (the latents, the mid attention's 3C-wide
// qkv, and the up blocks before first_tiled at their input and upsampled output), and of the tiled part
// at the crop bound (0 when untiled).
int64_t vae_whole_map_elements(const VaeConfig& config, const VaeTilePlan& plan);
int64_t vae_tile_map_elements(const VaeConfig& config, const VaeTilePlan& plan);

// The work the tiles repeat over the whole decode's: (recompute ratio - 1) x the multiply-adds of the
// tiled part; 0 when untiled.
double vae_tile_extra_work(const VaeConfig& config, const VaeTilePlan& plan);

// The plan whose `bytes` (the engine's buffers for it) fit `budget` and that repeats the least work:
// untiled when that fits, else for each first_tiled the largest tile of at least the halo that fits.
// When none fits, the budget doubles until one does (the plan's `budget` says which).
VaeTilePlan plan_vae_tiles(const VaeConfig& config, int64_t grid_height, int64_t grid_width,
                           const std::function<int64_t(const VaeTilePlan&)>& bytes, int64_t budget);

}  // namespace rgbaq::engine
