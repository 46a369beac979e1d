#include "engine/vae_tile_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace rgbaq::engine {
namespace {

int up_block_count(const VaeConfig& c) { return static_cast<int>(vae_decoder_dims(c).size()) - 1; }

std::vector<VaeTileSpan> spans(int64_t length, int64_t tile, int64_t halo) {
  std::vector<VaeTileSpan> out;
  for (int64_t begin = 0; begin < length; begin += tile) {
    const int64_t end = std::min(length, begin + tile);
    out.push_back({begin, end, std::max<int64_t>(0, begin - halo), std::min(length, end + halo)});
  }
  return out;
}

int64_t crop_sum(const std::vector<VaeTileSpan>& s) {
  int64_t n = 0;
  for (const VaeTileSpan& t : s) n += t.crop_end - t.crop_begin;
  return n;
}

// Up blocks [from, to) over a region of `pixels` at block from's input: the largest map, counting each
// block's input, its output and, when it upsamples, its output at 4x the pixels.
int64_t largest_block_map(const VaeConfig& c, int from, int to, int64_t pixels) {
  const std::vector<int64_t> dims = vae_decoder_dims(c);
  int64_t largest = 0;
  for (int i = from; i < to; ++i) {
    largest = std::max(largest, std::max(dims[i], dims[i + 1]) * pixels);
    if (vae_block_upsamples(c, i)) pixels *= 4;
    largest = std::max(largest, dims[i + 1] * pixels);
  }
  return largest;
}

// Multiply-adds per pixel of block first_tiled's input, from there to the output.
double tiled_work_per_level_pixel(const VaeConfig& c, int first_tiled) {
  const std::vector<int64_t> dims = vae_decoder_dims(c);
  double total = 0, m = 1;
  for (int i = first_tiled; i < up_block_count(c); ++i) {
    const double in = static_cast<double>(dims[i]), out = static_cast<double>(dims[i + 1]);
    total += m * (9 * in * out + 9 * out * out + (in != out ? in * out : 0));  // the first res block
    total += m * c.num_res_blocks * 18 * out * out;                              // the others
    if (vae_block_upsamples(c, i)) {
      m *= 4;
      total += m * 9 * out * out;
    }
  }
  return total + m * 9 * static_cast<double>(dims.back()) * c.out_channels;  // conv_out
}

}  // namespace

int64_t VaeTilePlan::crop_bound_height() const { return tiled() ? std::min(level_height, tile + 2 * halo) : 0; }
int64_t VaeTilePlan::crop_bound_width() const { return tiled() ? std::min(level_width, tile + 2 * halo) : 0; }

double VaeTilePlan::recompute_ratio() const {
  if (!tiled()) return 1.0;
  return static_cast<double>(crop_sum(rows)) * static_cast<double>(crop_sum(cols)) /
         (static_cast<double>(level_height) * static_cast<double>(level_width));
}

bool vae_block_upsamples(const VaeConfig& c, int block) { return block + 1 < static_cast<int>(c.dim_mult.size()); }

int64_t vae_tile_halo(const VaeConfig& c, int first_tiled) {
  int64_t halo = 1;  // conv_out
  for (int i = up_block_count(c) - 1; i >= first_tiled; --i) {
    if (vae_block_upsamples(c, i)) halo = (halo + 1 + 1) / 2;  // the upsampler's conv, then back through the 2x
    halo += 2 * (int64_t{c.num_res_blocks} + 1);
  }
  return halo;
}

VaeTilePlan vae_untiled_plan(const VaeConfig& c, int64_t grid_height, int64_t grid_width) {
  return vae_tile_plan(c, grid_height, grid_width, up_block_count(c), 0);
}

VaeTilePlan vae_tile_plan(const VaeConfig& c, int64_t grid_height, int64_t grid_width, int first_tiled, int64_t tile) {
  VaeTilePlan p;
  p.grid_height = grid_height, p.grid_width = grid_width;
  p.up_blocks = up_block_count(c);
  if (grid_height < 1 || grid_width < 1) {
    throw std::invalid_argument("VAE tile plan: grid " + std::to_string(grid_height) + "x" + std::to_string(grid_width) +
                                " is empty");
  }
  if (first_tiled < 0 || first_tiled > p.up_blocks) {
    throw std::invalid_argument("VAE tile plan: first tiled up block " + std::to_string(first_tiled) + " is not in 0.." +
                                std::to_string(p.up_blocks));
  }
  p.first_tiled = first_tiled;
  int64_t before = 1;
  for (int i = 0; i < first_tiled; ++i) before *= vae_block_upsamples(c, i) ? 2 : 1;
  p.level_height = grid_height * before, p.level_width = grid_width * before;
  if (!p.tiled()) return p;
  if (tile < 1) throw std::invalid_argument("VAE tile plan: tile side " + std::to_string(tile) + " is not positive");
  for (int i = first_tiled; i < p.up_blocks; ++i) p.scale *= vae_block_upsamples(c, i) ? 2 : 1;
  p.halo = vae_tile_halo(c, first_tiled);
  p.tile = tile;
  p.rows = spans(p.level_height, tile, p.halo);
  p.cols = spans(p.level_width, tile, p.halo);
  return p;
}

int64_t vae_whole_map_elements(const VaeConfig& c, const VaeTilePlan& p) {
  const int64_t grid = p.grid_height * p.grid_width;
  return std::max(std::max<int64_t>(64, 3 * vae_decoder_dims(c)[0]) * grid, largest_block_map(c, 0, p.first_tiled, grid));
}

int64_t vae_tile_map_elements(const VaeConfig& c, const VaeTilePlan& p) {
  if (!p.tiled()) return 0;
  return largest_block_map(c, p.first_tiled, p.up_blocks, p.crop_bound_height() * p.crop_bound_width());
}

double vae_tile_extra_work(const VaeConfig& c, const VaeTilePlan& p) {
  if (!p.tiled()) return 0;
  return (p.recompute_ratio() - 1.0) * tiled_work_per_level_pixel(c, p.first_tiled) * static_cast<double>(p.level_height) *
         static_cast<double>(p.level_width);
}

VaeTilePlan plan_vae_tiles(const VaeConfig& c, int64_t grid_height, int64_t grid_width,
                           const std::function<int64_t(const VaeTilePlan&)>& bytes, int64_t budget) {
  if (budget < 1) throw std::invalid_argument("VAE tile plan: budget " + std::to_string(budget) + " bytes is not positive");
  for (;; budget *= 2) {
    VaeTilePlan best = vae_untiled_plan(c, grid_height, grid_width);
    if (bytes(best) <= budget) {
      best.budget = budget;
      return best;
    }
    bool found = false;
    double best_work = 0;
    // Latest first: on a tie the later start keeps more of the decode whole.
    for (int f = best.up_blocks - 1; f >= 0; --f) {
      const VaeTilePlan probe = vae_tile_plan(c, grid_height, grid_width, f, 1 << 30);
      const int64_t halo = vae_tile_halo(c, f), longest = std::max(probe.level_height, probe.level_width);
      if (bytes(vae_tile_plan(c, grid_height, grid_width, f, std::min(halo, longest))) > budget) continue;
      int64_t lo = std::min(halo, longest), hi = longest;  // bytes grow with the tile: the largest that fits
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (bytes(vae_tile_plan(c, grid_height, grid_width, f, mid)) <= budget) lo = mid;
        else hi = mid - 1;
      }
      VaeTilePlan plan = vae_tile_plan(c, grid_height, grid_width, f, lo);
      const double work = vae_tile_extra_work(c, plan);
      if (!found || work < best_work) best = std::move(plan), best_work = work, found = true;
    }
    if (found) {
      best.budget = budget;
      return best;
    }
    if (budget > (int64_t{1} << 60)) throw std::logic_error("VAE tile plan: no budget fits");
  }
}

}  // namespace rgbaq::engine
