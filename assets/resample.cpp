#include "assets/resample.h"

#include <stb_image_resize.h>  // libstb-dev: the implementation is in Debian's libstb.so

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace rgbaq::assets {

ResampleFilter resample_filter_for(int from_longer, int to_longer) {
  return to_longer > from_longer ? ResampleFilter::kCatmullRom : ResampleFilter::kMitchell;
}

const char* resample_filter_name(ResampleFilter filter) {
  return filter == ResampleFilter::kMitchell ? "mitchell" : "catmull-rom";
}

std::pair<int, int> fitted_size(int width, int height, int longer) {
  const bool wide = width >= height;
  const int64_t big = wide ? width : height, small = wide ? height : width;
  // round(small * longer / big), half up, in integers
  const int other = int(std::max<int64_t>(1, (2 * small * longer + big) / (2 * big)));
  return wide ? std::pair{longer, other} : std::pair{other, longer};
}

RgbaImage resample(const RgbaImage& image, int width, int height) {
  if (width == image.width && height == image.height) return image;
  const size_t in_pixels = size_t(image.width) * size_t(image.height), out_pixels = size_t(width) * size_t(height);
  std::vector<float> in(in_pixels * 4), out(out_pixels * 4);
  for (size_t i = 0; i < in_pixels; ++i) {
    const uint8_t* p = &image.rgba[i * 4];
    const float a = float(p[3]) / 255.0f;
    for (int c = 0; c < 3; ++c) in[i * 4 + c] = float(p[c]) / 255.0f * a;
    in[i * 4 + 3] = a;
  }
  const ResampleFilter filter = resample_filter_for(std::max(image.width, image.height), std::max(width, height));
  const int ok = stbir_resize_float_generic(in.data(), image.width, image.height, 0, out.data(), width, height, 0, 4, 3,
                                            STBIR_FLAG_ALPHA_PREMULTIPLIED, STBIR_EDGE_CLAMP,
                                            filter == ResampleFilter::kMitchell ? STBIR_FILTER_MITCHELL : STBIR_FILTER_CATMULLROM,
                                            STBIR_COLORSPACE_LINEAR, nullptr);
  if (!ok) {
    throw std::runtime_error("stb_image_resize could not resample " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                             " to " + std::to_string(width) + "x" + std::to_string(height));
  }
  RgbaImage result(width, height);
  const auto level = [](float v) { return uint8_t(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f)); };
  for (size_t i = 0; i < out_pixels; ++i) {
    const float* p = &out[i * 4];
    uint8_t* q = &result.rgba[i * 4];
    q[3] = level(p[3]);
    if (q[3] == 0) continue;  // nothing to see: colour 0, as every transparent pixel the export writes
    for (int c = 0; c < 3; ++c) q[c] = level(p[c] / p[3]);
  }
  return result;
}

}  // namespace rgbaq::assets
