#pragma once
// Premultiplied alpha, as engines that blend with (ONE, ONE_MINUS_SRC_ALPHA) take it: each colour
// channel c becomes round(c * a / 255), alpha unchanged.
#include "assets/rgba_image.h"

namespace rgbaq::assets {

// Premultiplies `image` in place.
void premultiply(RgbaImage& image);

}  // namespace rgbaq::assets
