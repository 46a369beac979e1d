#pragma once
// An output size in pixels and its token grid (one token per 16x16 tile, h rows by w columns).
#include <span>
#include <string>
#include <string_view>

namespace rgbaq::host {

struct ImageSize {
  int width = 0;   // pixels
  int height = 0;  // pixels

  int grid_width() const { return width / 16; }    // w: token columns
  int grid_height() const { return height / 16; }  // h: token rows
  int tokens() const { return grid_width() * grid_height(); }
  std::string to_string() const;  // "256" for square sizes, "WxH" otherwise
  bool operator==(const ImageSize&) const = default;
};

// Parses "256" (square) or "WxH" (width x height, pixels) and checks it: both sides positive multiples
// of 16 and a token count N within the contract's 64..4096. Throws std::invalid_argument naming the text.
ImageSize parse_image_size(std::string_view text);

// The same checks for a size built in code.
void check_image_size(const ImageSize& size);

// For backends with fixed-size decoders (Core AI's 256/512/1024 VAEs): square and one of `allowed`.
void check_fixed_decoder_size(const ImageSize& size, std::span<const int> allowed);

}  // namespace rgbaq::host
