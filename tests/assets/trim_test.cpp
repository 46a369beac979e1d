// Trim, pad and premultiply (issue 40's export stage): trim rectangles against bboxes worked out by hand
// (the alpha check's rule: content is alpha > 8), padding by hand, and premultiplied values against
// round(c * a / 255) computed in double for every (c, a) pair.
#include <gtest/gtest.h>

#include <cmath>

#include "assets/premultiply.h"
#include "assets/trim.h"

namespace rgbaq::assets {
namespace {

void set(RgbaImage& im, int x, int y, uint8_t r, uint8_t g, uint8_t b, uint8_t a) {
  uint8_t* p = im.pixel(x, y);
  p[0] = r, p[1] = g, p[2] = b, p[3] = a;
}

TEST(Trim, TheRectangleIsTheBboxOfPixelsWithAlphaAbove8) {
  RgbaImage im(40, 30);
  set(im, 0, 0, 255, 0, 0, 8);      // alpha 8 is transparent: left out
  set(im, 39, 29, 255, 255, 255, 8);
  set(im, 5, 7, 10, 20, 30, 9);     // alpha 9: the top-left corner of the content
  set(im, 30, 20, 1, 2, 3, 255);    // the bottom-right
  set(im, 12, 11, 0, 0, 0, 128);
  // By hand: x 5..30, y 7..20 -> 26 x 14 at (5, 7).
  EXPECT_EQ(content_rect(im), (PixelRect{5, 7, 26, 14}));
}

TEST(Trim, ASinglePixelInACornerAndAnEmptyImage) {
  RgbaImage im(16, 9);
  EXPECT_EQ(content_rect(im), std::nullopt);
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 16; ++x) set(im, x, y, 255, 255, 255, 8);  // every pixel "transparent"
  }
  EXPECT_EQ(content_rect(im), std::nullopt);
  set(im, 15, 8, 0, 0, 0, 255);
  EXPECT_EQ(content_rect(im), (PixelRect{15, 8, 1, 1}));
  set(im, 0, 3, 0, 0, 0, 200);
  EXPECT_EQ(content_rect(im), (PixelRect{0, 3, 16, 6}));
}

TEST(Trim, ADiscCentredAtKnownPlace) {
  // A disc of radius 10 centred at (50.5, 40.5): pixel (x, y) is in when (x - 50)^2 + (y - 40)^2 <= 100,
  // so row 40 holds x 40..60 and column 50 holds y 30..50: 21 x 21 at (40, 30).
  RgbaImage im(100, 80);
  for (int y = 0; y < 80; ++y) {
    for (int x = 0; x < 100; ++x) {
      const double dx = x + 0.5 - 50.5, dy = y + 0.5 - 40.5;
      if (dx * dx + dy * dy <= 100.0) set(im, x, y, 200, 10, 10, 255);
    }
  }
  EXPECT_EQ(content_rect(im), (PixelRect{40, 30, 21, 21}));
}

TEST(Trim, CropAndPad) {
  RgbaImage im(5, 4);
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 5; ++x) set(im, x, y, uint8_t(x), uint8_t(y), uint8_t(x * 10 + y), 255);
  }
  const RgbaImage c = crop(im, {1, 2, 3, 2});
  ASSERT_EQ(c.width, 3);
  ASSERT_EQ(c.height, 2);
  EXPECT_EQ(c.pixel(0, 0)[0], 1);
  EXPECT_EQ(c.pixel(0, 0)[1], 2);
  EXPECT_EQ(c.pixel(2, 1)[2], 33);
  EXPECT_THROW(crop(im, {3, 0, 3, 1}), std::invalid_argument);
  const RgbaImage p = pad(c, 2);
  ASSERT_EQ(p.width, 7);
  ASSERT_EQ(p.height, 6);
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 7; ++x) {
      const bool inside = x >= 2 && x < 5 && y >= 2 && y < 4;
      if (!inside) {
        for (int ch = 0; ch < 4; ++ch) EXPECT_EQ(p.pixel(x, y)[ch], 0) << x << "," << y;
      } else {
        for (int ch = 0; ch < 4; ++ch) EXPECT_EQ(p.pixel(x, y)[ch], c.pixel(x - 2, y - 2)[ch]);
      }
    }
  }
  EXPECT_THROW(pad(c, -1), std::invalid_argument);
}

TEST(Premultiply, EveryColourAndAlphaIsRoundOfCTimesAOver255) {
  RgbaImage im(256, 256);
  for (int a = 0; a < 256; ++a) {
    for (int c = 0; c < 256; ++c) set(im, c, a, uint8_t(c), uint8_t(255 - c), uint8_t(c / 2), uint8_t(a));
  }
  premultiply(im);
  for (int a = 0; a < 256; ++a) {
    for (int c = 0; c < 256; ++c) {
      const uint8_t* p = im.pixel(c, a);
      const int channels[3] = {c, 255 - c, c / 2};
      for (int ch = 0; ch < 3; ++ch) {
        ASSERT_EQ(p[ch], std::lround(channels[ch] * a / 255.0)) << "c " << channels[ch] << " a " << a;
      }
      ASSERT_EQ(p[3], a);
    }
  }
}

}  // namespace
}  // namespace rgbaq::assets
