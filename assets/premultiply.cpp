#include "assets/premultiply.h"

namespace rgbaq::assets {

void premultiply(RgbaImage& image) {
  for (size_t i = 0; i < image.rgba.size(); i += 4) {
    const unsigned a = image.rgba[i + 3];
    // round(c * a / 255) in integers: (2ca + 255) / 510, exact for every c, a in 0..255.
    for (size_t c = 0; c < 3; ++c) image.rgba[i + c] = uint8_t((2u * image.rgba[i + c] * a + 255u) / 510u);
  }
}

}  // namespace rgbaq::assets
