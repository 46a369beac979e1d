#pragma once
// RoPE for the DiT (contract §4): per-axis cos/sin tables and the four per-image tensors built from them.
#include <array>
#include <filesystem>
#include <vector>

#include "host/image_size.h"

namespace rgbaq::host {

// cos/sin rows for positions kMinPosition..kMaxPosition of the three axes (widths 8, 28, 28).
class RopeTables {
 public:
  static constexpr int kMinPosition = -1024;
  static constexpr int kMaxPosition = 8191;
  static constexpr int kRows = kMaxPosition - kMinPosition + 1;  // 9216
  static constexpr std::array<int, 3> kAxisWidths = {8, 28, 28};   // complex pairs: d/2 for d = 16, 56, 56

  // polar(1, outer(pos, 1 / 10000^(arange(0, d, 2) / d))) with every tensor step rounded to fp32 as
  // torch does, and cos/sin evaluated in double then rounded.
  static RopeTables from_formula();
  // host/rope_axis{0,1,2}_{cos,sin}.f32 (fp32 LE, row-major [9216, P]). Throws naming the file when one
  // is missing or has the wrong size.
  static RopeTables from_files(const std::filesystem::path& host_dir);
  // The files when `model_dir/host/` has any of them, the formula otherwise.
  static RopeTables for_model(const std::filesystem::path& model_dir);

  bool from_files() const { return from_files_; }
  const float* cos_row(int axis, int position) const;
  const float* sin_row(int axis, int position) const;

 private:
  std::array<std::vector<float>, 3> cos_, sin_;
  bool from_files_ = false;
};

// The DiT's RoPE inputs for one image, row-major, 64 values a token.
struct RopeTensors {
  int text_len = 0;
  int image_tokens = 0;
  std::vector<float> txt_cos, txt_sin;  // [L, 64]
  std::vector<float> img_cos, img_sin;  // [N, 64]
};

// Throws std::invalid_argument when an image of `size` places a token at a position the tables have no
// row for (e.g. 65536x16: x from -2048). build_rope checks it, and a submit checks it up front so that a
// size the render would refuse is refused before it is queued.
void check_rope_positions(const ImageSize& size);

// Text token i at (i, i, i); image token (y, x) at (L, y - (h - h/2), x - (w - w/2)). Throws
// std::invalid_argument when L or N is outside the contract or a position has no table row.
RopeTensors build_rope(const RopeTables& tables, int text_len, const ImageSize& size);

}  // namespace rgbaq::host
