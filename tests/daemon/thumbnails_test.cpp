// Thumbnails against independent references: the scaling against a float64 area average written here
// from its definition, and the WebP bytes decoded back by libwebp's own decoder.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <webp/decode.h>

#include "daemon/http/thumbnails.h"

namespace rgbaq::daemon::http {
namespace {

// The mean over the source area a target pixel covers, weighted by alpha for the colours.
std::vector<double> area_average(const std::vector<uint8_t>& src, int w, int h, int ow, int oh) {
  std::vector<double> out(static_cast<size_t>(ow) * oh * 4, 0);
  const int sub = 64;  // supersampling the box: exact enough for a reference at these sizes
  for (int y = 0; y < oh; ++y) {
    for (int x = 0; x < ow; ++x) {
      double c[3] = {0, 0, 0}, a = 0;
      for (int sy = 0; sy < sub; ++sy) {
        for (int sx = 0; sx < sub; ++sx) {
          const double fx = (x + (sx + 0.5) / sub) * w / ow, fy = (y + (sy + 0.5) / sub) * h / oh;
          const uint8_t* p = &src[(static_cast<size_t>(std::floor(fy)) * w + static_cast<size_t>(std::floor(fx))) * 4];
          for (int k = 0; k < 3; ++k) c[k] += p[k] * (p[3] / 255.0);
          a += p[3] / 255.0;
        }
      }
      double* q = &out[(static_cast<size_t>(y) * ow + x) * 4];
      for (int k = 0; k < 3; ++k) q[k] = a > 0 ? c[k] / a : 0;
      q[3] = a / (sub * sub) * 255.0;
    }
  }
  return out;
}

TEST(Thumbnails, ScalingIsTheAlphaWeightedAreaAverage) {
  std::mt19937 rng(7);
  const int w = 96, h = 64;
  std::vector<uint8_t> src(static_cast<size_t>(w) * h * 4);
  for (auto& v : src) v = static_cast<uint8_t>(rng());
  for (int i = 0; i < w * h; i += 5) src[static_cast<size_t>(i) * 4 + 3] = 0;  // fully transparent pixels carry no colour
  int ow = 0, oh = 0;
  const auto got = scale_rgba(src, w, h, 24, ow, oh);
  ASSERT_EQ(ow, 24);
  ASSERT_EQ(oh, 16);
  const auto want = area_average(src, w, h, ow, oh);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  EXPECT_LE(worst, 1.0);
  // Never scaled up.
  scale_rgba(src, w, h, 512, ow, oh);
  EXPECT_EQ(ow, w);
  EXPECT_EQ(oh, h);
}

TEST(Thumbnails, TheWebPIsLosslessWithItsAlpha) {
  std::mt19937 rng(3);
  const int w = 33, h = 17;
  std::vector<uint8_t> rgba(static_cast<size_t>(w) * h * 4);
  for (auto& v : rgba) v = static_cast<uint8_t>(rng());
  const std::string webp = encode_webp(rgba, w, h);
  int dw = 0, dh = 0;
  uint8_t* decoded = WebPDecodeRGBA(reinterpret_cast<const uint8_t*>(webp.data()), webp.size(), &dw, &dh);
  ASSERT_NE(decoded, nullptr);
  ASSERT_EQ(dw, w);
  ASSERT_EQ(dh, h);
  // Lossless keeps every visible pixel; where alpha is 0 the encoder may drop the colour.
  for (size_t i = 0; i < rgba.size(); i += 4) {
    EXPECT_EQ(decoded[i + 3], rgba[i + 3]);
    if (rgba[i + 3] != 0) {
      for (int k = 0; k < 3; ++k) EXPECT_EQ(decoded[i + k], rgba[i + k]);
    }
  }
  WebPFree(decoded);
}

}  // namespace
}  // namespace rgbaq::daemon::http
