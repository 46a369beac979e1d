#include "host/rgba8.h"

#include <cfenv>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rgbaq::host {

uint8_t unit_to_u8(float v) {
  float p = v * 0.5f + 0.5f;
  if (std::isnan(p)) return 0;
  p = p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p);
  const float scaled = p * 255.0f;
  // nearbyint rounds in the current mode, which is round-to-nearest-even unless someone changed it.
  return static_cast<uint8_t>(std::nearbyint(scaled));
}

void image_to_rgba8(std::span<const float> planar, int width, int height, std::span<uint8_t> rgba) {
  const size_t pixels = static_cast<size_t>(width) * height;
  if (planar.size() != pixels * 4 || rgba.size() != pixels * 4) {
    throw std::invalid_argument("image_to_rgba8: " + std::to_string(planar.size()) + " values and " +
                                std::to_string(rgba.size()) + " bytes for a " + std::to_string(width) + "x" +
                                std::to_string(height) + " RGBA image");
  }
  if (std::fegetround() != FE_TONEAREST) throw std::logic_error("image_to_rgba8: rounding mode is not to-nearest");
  for (size_t c = 0; c < 4; ++c) {
    const float* src = planar.data() + c * pixels;
    for (size_t i = 0; i < pixels; ++i) rgba[i * 4 + c] = unit_to_u8(src[i]);
  }
}

}  // namespace rgbaq::host
