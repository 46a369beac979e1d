#pragma once
// Trim and pad (issue 40's export stage): an image cut to its content, with a transparent border added.
// Content is every pixel the alpha check does not call transparent (a > 8, assets/alpha_check.h), so a
// trim rectangle is the check's bbox.
#include <optional>

#include "assets/rgba_image.h"

namespace rgbaq::assets {

// The most alpha a pixel may have and still be left out of the content (the alpha check's "transparent").
inline constexpr int kTrimAlphaMax = 8;

// The smallest rectangle holding every pixel with alpha > kTrimAlphaMax; nullopt when there is none.
std::optional<PixelRect> content_rect(const RgbaImage& image);

// The part of `image` under `rect`, which must lie inside it (std::invalid_argument otherwise).
RgbaImage crop(const RgbaImage& image, PixelRect rect);

// `image` inside a border of `px` transparent black pixels on every side (px >= 0).
RgbaImage pad(const RgbaImage& image, int px);

}  // namespace rgbaq::assets
