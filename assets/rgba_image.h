#pragma once
// An RGBA8 image in memory, the unit the export stage works on: rows top to bottom, 4 bytes a pixel,
// straight (not premultiplied) alpha unless a step says otherwise.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rgbaq::assets {

struct RgbaImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // width * height * 4 bytes

  RgbaImage() = default;
  // A transparent black image of that size.
  RgbaImage(int w, int h) : width(w), height(h), rgba(size_t(w) * size_t(h) * 4, 0) {}
  uint8_t* pixel(int x, int y) { return rgba.data() + (size_t(y) * size_t(width) + size_t(x)) * 4; }
  const uint8_t* pixel(int x, int y) const { return rgba.data() + (size_t(y) * size_t(width) + size_t(x)) * 4; }
};

// A rectangle of pixels: its top-left corner and its size.
struct PixelRect {
  int x = 0, y = 0, w = 0, h = 0;
  bool operator==(const PixelRect&) const = default;
};

}  // namespace rgbaq::assets
