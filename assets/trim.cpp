#include "assets/trim.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rgbaq::assets {

std::optional<PixelRect> content_rect(const RgbaImage& image) {
  int x0 = image.width, y0 = image.height, x1 = -1, y1 = -1;
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* row = image.pixel(0, y);
    int first = -1, last = -1;
    for (int x = 0; x < image.width; ++x) {
      if (row[size_t(x) * 4 + 3] > kTransparentAlphaMax) {
        if (first < 0) first = x;
        last = x;
      }
    }
    if (first < 0) continue;
    x0 = std::min(x0, first);
    x1 = std::max(x1, last);
    y0 = std::min(y0, y);
    y1 = y;
  }
  if (x1 < 0) return std::nullopt;
  return PixelRect{x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

RgbaImage crop(const RgbaImage& image, PixelRect rect) {
  if (rect.x < 0 || rect.y < 0 || rect.w <= 0 || rect.h <= 0 || rect.x + rect.w > image.width || rect.y + rect.h > image.height) {
    throw std::invalid_argument("crop: rectangle " + std::to_string(rect.w) + "x" + std::to_string(rect.h) + " at " +
                                std::to_string(rect.x) + "," + std::to_string(rect.y) + " is not inside a " +
                                std::to_string(image.width) + "x" + std::to_string(image.height) + " image");
  }
  RgbaImage out(rect.w, rect.h);
  for (int y = 0; y < rect.h; ++y) std::memcpy(out.pixel(0, y), image.pixel(rect.x, rect.y + y), size_t(rect.w) * 4);
  return out;
}

RgbaImage pad(const RgbaImage& image, int px) {
  if (px < 0) throw std::invalid_argument("pad: " + std::to_string(px) + " pixels is negative");
  if (px == 0) return image;
  RgbaImage out(image.width + 2 * px, image.height + 2 * px);
  for (int y = 0; y < image.height; ++y) std::memcpy(out.pixel(px, y + px), image.pixel(0, y), size_t(image.width) * 4);
  return out;
}

}  // namespace rgbaq::assets
