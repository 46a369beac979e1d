// ConvRot's math (engine/model/convrot.h) against independent references: the fast in-place rotation
// against x times R built in float64 from the Kronecker definition (tests/engine/w8a8_reference.h's
// hadamard_matrix, applied per group of the row), R R = I, and the row quantizer against worked examples
// done by hand (scale = absmax / 127, ties to even, the +-127 clamp, ComfyUI's 1e-30 scale floor for a
// zero row).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "engine/model/convrot.h"
#include "tests/engine/w8a8_reference.h"

namespace rgbaq::engine {
namespace {

TEST(ConvRot, GroupSizesArePowersOfFourFromFour) {
  for (int64_t g : {4, 16, 64, 256, 1024, 4096}) EXPECT_TRUE(is_convrot_group(g)) << g;
  for (int64_t g : {-4, 0, 1, 2, 8, 12, 32, 128, 512, 192}) EXPECT_FALSE(is_convrot_group(g)) << g;
}

TEST(ConvRot, FastRotationEqualsTheKroneckerProduct) {
  std::mt19937 rng(39);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int g : {4, 16, 64, 256}) {
    const std::vector<double> r = rgbaq::testing::hadamard_matrix(g);
    for (int groups : {1, 2, 3}) {
      const int64_t rows = 3, cols = int64_t{g} * groups, ld = cols + 5;
      std::vector<float> x(static_cast<size_t>(rows * ld));
      for (float& v : x) v = normal(rng);
      const std::vector<float> before = x;
      convrot_rotate_rows(x.data(), rows, cols, ld, g);
      for (int64_t row = 0; row < rows; ++row) {
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t g0 = c / g * g, j = c - g0;
          double want = 0;
          for (int i = 0; i < g; ++i) want += double(before[row * ld + g0 + i]) * r[i * g + j];
          ASSERT_NEAR(x[row * ld + c], want, 2e-6) << "G " << g << " width " << cols << " row " << row << " col " << c;
        }
        for (int64_t c = cols; c < ld; ++c) ASSERT_EQ(x[row * ld + c], before[row * ld + c]) << "past the width";
      }
    }
  }
}

TEST(ConvRot, RotationIsItsOwnInverse) {
  for (int g : {4, 16, 64, 256}) {
    // The rows of I rotated are R itself: symmetric, and R R = I (in float64 from the float R).
    std::vector<float> r(static_cast<size_t>(g) * g, 0.0f);
    for (int i = 0; i < g; ++i) r[i * g + i] = 1.0f;
    convrot_rotate_rows(r.data(), g, g, g, g);
    for (int i = 0; i < g; ++i) {
      for (int j = 0; j < g; ++j) {
        ASSERT_EQ(r[i * g + j], r[j * g + i]) << "G " << g;
        double dot = 0;
        for (int t = 0; t < g; ++t) dot += double(r[i * g + t]) * r[t * g + j];
        ASSERT_NEAR(dot, i == j ? 1.0 : 0.0, 1e-6) << "G " << g << " (" << i << ", " << j << ")";
      }
    }
  }
}

TEST(ConvRot, RotationRefusesABadGroup) {
  std::vector<float> x(96, 1.0f);
  EXPECT_THROW(convrot_rotate_rows(x.data(), 1, 96, 96, 64), std::invalid_argument);  // 64 does not divide 96
  EXPECT_THROW(convrot_rotate_rows(x.data(), 1, 96, 96, 32), std::invalid_argument);  // not a power of four
  EXPECT_THROW(convrot_rotate_rows(x.data(), 1, 96, 96, 1), std::invalid_argument);
}

// Worked by hand: absmax 127 gives the scale 1, so the codes are x rounded half to even.
TEST(ConvRot, QuantizesWithScaleOneAndTiesToEven) {
  const std::vector<float> x = {127.0f, -0.5f, 0.5f, 1.5f, 2.5f, -2.5f, -126.5f, 3.49f, -3.5f, 0.0f};
  const std::vector<int> want = {127, 0, 0, 2, 2, -2, -126, 3, -4, 0};
  std::vector<int8_t> q(x.size());
  float scale = 0;
  quantize_rows_int8(x.data(), 1, static_cast<int64_t>(x.size()), static_cast<int64_t>(x.size()), q.data(), &scale);
  EXPECT_EQ(scale, 1.0f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(q[i], want[i]) << "x = " << x[i];
}

// A long row (the vectorized path takes 16 at a time): absmax 127, so scale 1; halves round to even,
// and a NaN is skipped by the maximum and coded 0.
TEST(ConvRot, QuantizesALongRowLikeTheShortOnes) {
  std::vector<float> x(67);
  x[0] = -127.0f;
  for (size_t i = 1; i < x.size(); ++i) x[i] = (static_cast<float>(i) - 33.0f) / 2.0f;
  x[40] = std::nanf("");
  std::vector<int8_t> q(x.size());
  float scale = 0;
  quantize_rows_int8(x.data(), 1, static_cast<int64_t>(x.size()), static_cast<int64_t>(x.size()), q.data(), &scale);
  EXPECT_EQ(scale, 1.0f);
  EXPECT_EQ(q[0], -127);
  EXPECT_EQ(q[40], 0);
  for (size_t i = 1; i < x.size(); ++i) {
    if (i == 40) continue;
    const double half = (static_cast<double>(i) - 33.0) / 2.0;
    const double lower = std::floor(half);
    // by hand: a tie goes to the even neighbour, anything else to the nearest
    const double want = half - lower == 0.5 ? (std::fmod(lower, 2.0) == 0 ? lower : lower + 1) : std::round(half);
    EXPECT_EQ(q[i], want) << "x = " << x[i];
  }
}

// Two rows with a row stride: absmax 254 gives the scale 2 (x / 2: 127, -127, 1.5, 2.5, 0.5, 3.5), and a
// row with absmax 1 gives 1/127 (0.3 * 127 = 38.1 -> 38, -0.7 * 127 = -88.9 -> -89,
// 0.25 * 127 = 31.75 -> 32).
TEST(ConvRot, QuantizesEachRowWithItsOwnScale) {
  const int64_t cols = 6, ld = 8;
  const std::vector<float> x = {254, -254, 3, 5, 1, 7, 99, 99, 1.0f, 0.3f, -0.7f, 0, -1.0f, 0.25f, 99, 99};
  std::vector<int8_t> q(2 * cols);
  float scales[2];
  quantize_rows_int8(x.data(), 2, cols, ld, q.data(), scales);
  EXPECT_EQ(scales[0], 2.0f);
  EXPECT_EQ(scales[1], 1.0f / 127.0f);
  const std::vector<int> want = {127, -127, 2, 2, 0, 4, 127, 38, -89, 0, -127, 32};
  for (int64_t i = 0; i < 2 * cols; ++i) EXPECT_EQ(q[i], want[i]) << i;
}

// ComfyUI's writer clamps the scale to >= 1e-30: an all-zero row (or a vanishing one) gets 1e-30 and
// zero codes, never a 0 scale or a NaN.
TEST(ConvRot, ZeroRowGetsTheFloorScaleAndZeroCodes) {
  const std::vector<float> x = {0, 0, 0, 0, 1e-35f, -1e-36f, 0, 0};
  std::vector<int8_t> q(8, 99);
  float scales[2];
  quantize_rows_int8(x.data(), 2, 4, 4, q.data(), scales);
  EXPECT_EQ(scales[0], 1e-30f);
  EXPECT_EQ(scales[1], 1e-30f);
  for (int8_t v : q) EXPECT_EQ(v, 0);
}

TEST(ConvRot, PerElementCodeClampsToPlusMinus127) {
  EXPECT_EQ(convrot::quantized(300.0f, 1.0f), 127);
  EXPECT_EQ(convrot::quantized(-300.0f, 1.0f), -127);
  EXPECT_EQ(convrot::quantized(-127.6f, 1.0f), -127);  // rounds to -128, clamped
  EXPECT_EQ(convrot::quantized(127.5f, 1.0f), 127);    // ties to even: 128, clamped
  EXPECT_EQ(convrot::quantized(std::nanf(""), 1.0f), 0);
  EXPECT_EQ(convrot::row_scale(3.0f), 3.0f / 127.0f);
}

}  // namespace
}  // namespace rgbaq::engine
