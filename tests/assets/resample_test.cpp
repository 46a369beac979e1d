// Resampling in premultiplied space (assets/resample.h) against a float64 reference written here from
// the filters' published definitions (Mitchell & Netravali 1988, the (B, C) cubic family: Mitchell
// B = C = 1/3, Catmull-Rom B = 0, C = 1/2) and the sampling stb_image_resize 0.97 does (read from its
// source: stbir__calculate_filters and its helpers): along an axis of scale r = out/in, output pixel o
// weighs input pixel i by K((o + 0.5) - (i + 0.5) r) when r <= 1 and K((o + 0.5) / r - (i + 0.5)) when
// r > 1, the weights of o normalised to sum 1, inputs past an edge repeating the edge. Every output is
// within 1 level of the reference; and a red disc shrunk 8 times keeps no other colour at its edge.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "assets/resample.h"

namespace rgbaq::assets {
namespace {

double bc_cubic(double x, double b, double c) {
  x = std::fabs(x);
  if (x < 1) return ((12 - 9 * b - 6 * c) * x * x * x + (-18 + 12 * b + 6 * c) * x * x + (6 - 2 * b)) / 6;
  if (x < 2) return ((-b - 6 * c) * x * x * x + (6 * b + 30 * c) * x * x + (-12 * b - 48 * c) * x + (8 * b + 24 * c)) / 6;
  return 0;
}

// weights[o] = {(input index, weight)...} along one axis.
std::vector<std::vector<std::pair<int, double>>> axis_weights(int in, int out, bool mitchell) {
  const double r = double(out) / in;
  const double b = mitchell ? 1.0 / 3 : 0, c = mitchell ? 1.0 / 3 : 0.5;
  std::vector<std::vector<std::pair<int, double>>> w(static_cast<size_t>(out));
  for (int o = 0; o < out; ++o) {
    const double centre = (o + 0.5) / r;  // o's centre in input pixels, either way
    const int reach = int(std::ceil(r <= 1 ? 2 / r : 2)) + 2;
    double total = 0;
    for (int i = int(std::floor(centre)) - reach; i <= int(std::floor(centre)) + reach; ++i) {
      const double d = r <= 1 ? (o + 0.5) - (i + 0.5) * r : (o + 0.5) / r - (i + 0.5);
      const double k = bc_cubic(d, b, c);
      if (k == 0) continue;
      w[size_t(o)].push_back({std::clamp(i, 0, in - 1), k});
      total += k;
    }
    for (auto& [i, k] : w[size_t(o)]) k /= total;
  }
  return w;
}

RgbaImage reference(const RgbaImage& in, int width, int height) {
  const bool mitchell = std::max(width, height) <= std::max(in.width, in.height);
  const auto wx = axis_weights(in.width, width, mitchell), wy = axis_weights(in.height, height, mitchell);
  RgbaImage out(width, height);
  for (int oy = 0; oy < height; ++oy) {
    for (int ox = 0; ox < width; ++ox) {
      double p[4] = {0, 0, 0, 0};
      for (const auto& [iy, ky] : wy[size_t(oy)]) {
        for (const auto& [ix, kx] : wx[size_t(ox)]) {
          const uint8_t* s = in.pixel(ix, iy);
          const double a = s[3] / 255.0;
          for (int c = 0; c < 3; ++c) p[c] += ky * kx * (s[c] / 255.0) * a;
          p[3] += ky * kx * a;
        }
      }
      uint8_t* q = out.pixel(ox, oy);
      q[3] = uint8_t(std::lround(std::clamp(p[3], 0.0, 1.0) * 255));
      if (q[3] == 0) continue;
      for (int c = 0; c < 3; ++c) q[c] = uint8_t(std::lround(std::clamp(p[c] / p[3], 0.0, 1.0) * 255));
    }
  }
  return out;
}

// A sprite-like test image: shapes with hard and soft edges, fully transparent pixels holding loud
// colours (which must not bleed), and noise.
RgbaImage test_image(int w, int h, uint32_t seed) {
  RgbaImage im(w, h);
  uint32_t s = seed;
  const auto next = [&] { return s = s * 1664525u + 1013904223u; };
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = im.pixel(x, y);
      const double dx = (x + 0.5) / w - 0.5, dy = (y + 0.5) / h - 0.5, d = std::sqrt(dx * dx + dy * dy);
      const uint32_t n = next();
      if (d > 0.45) {  // outside: transparent, with colour under it
        p[0] = 0, p[1] = 255, p[2] = uint8_t(n >> 24), p[3] = 0;
      } else if (d > 0.35) {  // a soft rim
        p[0] = uint8_t(n >> 8), p[1] = uint8_t(n >> 16), p[2] = 40, p[3] = uint8_t(std::clamp((0.45 - d) / 0.1, 0.0, 1.0) * 255);
      } else {
        p[0] = uint8_t(200 + (n >> 28)), p[1] = uint8_t(x * 255 / w), p[2] = uint8_t(y * 255 / h), p[3] = (n >> 20) % 7 == 0 ? 90 : 255;
      }
    }
  }
  return im;
}

void expect_within_one_level(const RgbaImage& got, const RgbaImage& want, const char* what) {
  ASSERT_EQ(got.width, want.width);
  ASSERT_EQ(got.height, want.height);
  int worst = 0, compared = 0;
  for (int y = 0; y < got.height; ++y) {
    for (int x = 0; x < got.width; ++x) {
      const uint8_t *g = got.pixel(x, y), *w = want.pixel(x, y);
      ASSERT_LE(std::abs(g[3] - w[3]), 1) << what << " alpha at " << x << "," << y;
      worst = std::max(worst, std::abs(g[3] - w[3]));
      if (g[3] == 0 || w[3] == 0) {
        // Invisible: the export writes colour 0 under alpha 0.
        if (g[3] == 0) {
          ASSERT_EQ(g[0] | g[1] | g[2], 0) << what << " at " << x << "," << y;
        }
        continue;
      }
      ++compared;
      for (int c = 0; c < 3; ++c) {
        ASSERT_LE(std::abs(g[c] - w[c]), 1) << what << " channel " << c << " at " << x << "," << y << " (alpha " << int(g[3]) << ")";
        worst = std::max(worst, std::abs(g[c] - w[c]));
      }
    }
  }
  EXPECT_GT(compared, got.width * got.height / 4) << what;
  std::printf("%s: %d pixels with colour compared, largest difference %d level(s)\n", what, compared, worst);
}

TEST(Resample, ShrinkingIsWithinOneLevelOfAFloat64Mitchell) {
  const RgbaImage in = test_image(97, 61, 7);
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{40, 25}, {13, 8}, {96, 60}, {97, 30}}) {
    expect_within_one_level(resample(in, w, h), reference(in, w, h), ("97x61 -> " + std::to_string(w) + "x" + std::to_string(h)).c_str());
  }
}

TEST(Resample, GrowingIsWithinOneLevelOfAFloat64CatmullRom) {
  const RgbaImage in = test_image(23, 17, 11);
  for (const auto& [w, h] : std::vector<std::pair<int, int>>{{50, 37}, {64, 47}, {24, 18}}) {
    expect_within_one_level(resample(in, w, h), reference(in, w, h), ("23x17 -> " + std::to_string(w) + "x" + std::to_string(h)).c_str());
  }
}

TEST(Resample, TheFilterIsNamedByWhetherTheImageShrinks) {
  EXPECT_EQ(resample_filter_for(512, 64), ResampleFilter::kMitchell);
  EXPECT_EQ(resample_filter_for(64, 64), ResampleFilter::kMitchell);
  EXPECT_EQ(resample_filter_for(64, 65), ResampleFilter::kCatmullRom);
  EXPECT_STREQ(resample_filter_name(ResampleFilter::kMitchell), "mitchell");
  EXPECT_STREQ(resample_filter_name(ResampleFilter::kCatmullRom), "catmull-rom");
}

TEST(Resample, ARedDiscOnClearShrunkTo64HasNoFringe) {
  // 512 px, an opaque red disc on transparent pixels whose colour is black, white or green: shrunk to
  // 64 px, every pixel that shows anything (alpha > 0) is pure red within 2 levels.
  RgbaImage in(512, 512);
  for (int y = 0; y < 512; ++y) {
    for (int x = 0; x < 512; ++x) {
      uint8_t* p = in.pixel(x, y);
      const double dx = x + 0.5 - 256, dy = y + 0.5 - 256;
      if (dx * dx + dy * dy <= 200.0 * 200.0) {
        p[0] = 255, p[1] = 0, p[2] = 0, p[3] = 255;
      } else {
        const int k = (x / 7 + y / 5) % 3;
        p[0] = p[1] = p[2] = k == 1 ? 255 : 0;
        if (k == 2) p[1] = 255;
        p[3] = 0;
      }
    }
  }
  const RgbaImage out = resample(in, 64, 64);
  int edge = 0;
  for (int y = 0; y < 64; ++y) {
    for (int x = 0; x < 64; ++x) {
      const uint8_t* p = out.pixel(x, y);
      if (p[3] == 0) continue;
      if (p[3] < 255) ++edge;
      EXPECT_GE(p[0], 253) << x << "," << y << " alpha " << int(p[3]);
      EXPECT_LE(p[1], 2) << x << "," << y << " alpha " << int(p[3]);
      EXPECT_LE(p[2], 2) << x << "," << y << " alpha " << int(p[3]);
    }
  }
  EXPECT_GT(edge, 50) << "the disc's edge is partly transparent after shrinking";
  // Resampled naively in straight alpha, the same edge takes the clear pixels' colours: the test tells.
  EXPECT_EQ(out.pixel(32, 32)[3], 255);
  EXPECT_EQ(out.pixel(0, 0)[3], 0);
}

TEST(Resample, FittedSizesKeepTheAspect) {
  EXPECT_EQ(fitted_size(1024, 1024, 64), (std::pair{64, 64}));
  EXPECT_EQ(fitted_size(300, 200, 64), (std::pair{64, 43}));   // 200 * 64 / 300 = 42.67
  EXPECT_EQ(fitted_size(200, 300, 64), (std::pair{43, 64}));
  EXPECT_EQ(fitted_size(100, 3, 10), (std::pair{10, 1}));      // 0.3, at least 1
  EXPECT_EQ(fitted_size(50, 30, 200), (std::pair{200, 120}));
  EXPECT_EQ(fitted_size(128, 45, 64), (std::pair{64, 23}));    // 22.5 rounds up
}

TEST(Resample, TheSameSizeIsTheImage) {
  const RgbaImage in = test_image(20, 10, 3);
  EXPECT_EQ(resample(in, 20, 10).rgba, in.rgba);
}

}  // namespace
}  // namespace rgbaq::assets
