#include "host/rgba8.h"

#include <gtest/gtest.h>

#include <cmath>

namespace rgbaq::host {
namespace {

// The reference pipeline's postprocess is numpy's (images * 255).round(): halves go to the even
// neighbour (2.5 -> 2, 3.5 -> 4), unlike C's round() (2.5 -> 3). Find inputs whose fp32 product lands on
// an exact half and check both directions.
float input_landing_on(double half) {
  float p = static_cast<float>(half / 255.0);
  for (int i = 0; i < 64; ++i, p = std::nextafter(p, 2.0f)) {
    if (p * 255.0f == static_cast<float>(half)) {
      return (p - 0.5f) * 2.0f;  // v with v * 0.5 + 0.5 == p (exact in this range)
    }
  }
  p = static_cast<float>(half / 255.0);
  for (int i = 0; i < 64; ++i, p = std::nextafter(p, -1.0f)) {
    if (p * 255.0f == static_cast<float>(half)) return (p - 0.5f) * 2.0f;
  }
  return std::nanf("");
}

TEST(Rgba8, HalvesRoundToEvenAsNumpyDoes) {
  int checked = 0;
  for (double half = 64.5; half < 250; half += 1.0) {
    const float v = input_landing_on(half);
    if (std::isnan(v) || v * 0.5f + 0.5f != (v * 0.5f + 0.5f)) continue;
    if ((v * 0.5f + 0.5f) * 255.0f != static_cast<float>(half)) continue;
    const int lower = static_cast<int>(half - 0.5);
    const int even = lower % 2 == 0 ? lower : lower + 1;
    EXPECT_EQ(unit_to_u8(v), even) << "value landing on " << half;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(Rgba8, ClipsAndMapsEnds) {
  EXPECT_EQ(unit_to_u8(-1.0f), 0);
  EXPECT_EQ(unit_to_u8(1.0f), 255);
  EXPECT_EQ(unit_to_u8(-3.0f), 0);
  EXPECT_EQ(unit_to_u8(7.0f), 255);
  EXPECT_EQ(unit_to_u8(0.0f), 128);  // 127.5 -> 128 (even)
  EXPECT_EQ(unit_to_u8(std::nanf("")), 0);
}

TEST(Rgba8, PlanarToInterleavedRGBA) {
  const int w = 3, h = 2;
  std::vector<float> planar(4 * w * h);
  // channel c at pixel i: a value that decodes to 10 * c + i (v = (k / 255) * 2 - 1 rounds back to k).
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < w * h; ++i) planar[c * w * h + i] = static_cast<float>((10.0 * c + i) / 255.0 * 2 - 1);
  std::vector<uint8_t> rgba(4 * w * h);
  image_to_rgba8(planar, w, h, rgba);
  for (int i = 0; i < w * h; ++i)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(rgba[i * 4 + c], 10 * c + i) << "pixel " << i << " channel " << c;
  std::vector<uint8_t> small(3);
  EXPECT_THROW(image_to_rgba8(planar, w, h, small), std::invalid_argument);
}

}  // namespace
}  // namespace rgbaq::host
