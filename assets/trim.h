#pragma once
// Trim and pad (issue 40's export stage): an image cut to its content, with a transparent border added.
// Content is every pixel the alpha check does not call transparent (a > kTransparentAlphaMax,
// assets/alpha_check.h), so a trim rectangle is the check's bbox.
#include <optional>

#include "assets/alpha_check.h"
#include "assets/rgba_image.h"

namespace rgbaq::assets {

// The smallest rectangle holding every pixel with alpha > kTransparentAlphaMax; nullopt when there is none.
std::optional<PixelRect> content_rect(const RgbaImage& image);

// The part of `image` under `rect`, which must lie inside it (std::invalid_argument otherwise).
RgbaImage crop(const RgbaImage& image, PixelRect rect);

// `image` inside a border of `px` transparent black pixels on every side (px >= 0).
RgbaImage pad(const RgbaImage& image, int px);

}  // namespace rgbaq::assets
