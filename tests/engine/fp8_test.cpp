// FP8 E4M3 and its per-row scaling (engine/model/fp8_e4m3.h) against float64 references: every code's value
// from the format's definition, the encoder against a brute-force search for the nearest of the 254
// finite codes (ties to the even code, saturation at 448), and the row quantizer against the error
// bound half a step of the code grid gives.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/model/fp8_e4m3.h"

namespace rgbaq::engine {
namespace {

// E4M3 by its definition: exponent field E, mantissa M; E = 0 subnormal M 2^-9, else (1 + M/8) 2^(E-7).
double code_value(int code) {
  const int e = (code >> 3) & 15, m = code & 7;
  const double v = e == 0 ? m * std::pow(2.0, -9) : (1.0 + m / 8.0) * std::pow(2.0, e - 7);
  return (code & 0x80) ? -v : v;
}

// The nearest finite non-negative code to |x| by search, ties to the even code; above 448 saturates.
int nearest_code(double x) {
  const double a = std::fabs(x);
  int best = 0;
  for (int c = 1; c <= 0x7e; ++c) {
    const double d = std::fabs(a - code_value(c)), db = std::fabs(a - code_value(best));
    if (d < db || (d == db && c % 2 == 0)) best = c;
  }
  return (std::signbit(x) ? 0x80 : 0) | best;
}

TEST(Fp8E4m3, EveryCodeDecodesToItsDefinition) {
  for (int c = 0; c < 256; ++c) {
    const float got = fp8::e4m3_to_float(static_cast<uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(got)) << "code " << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), code_value(c)) << "code " << c;
    }
  }
  EXPECT_EQ(fp8::e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(fp8::e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(fp8::e4m3_to_float(0x08), std::ldexp(1.0f, -6));
}

TEST(Fp8E4m3, EncodesEachCodeValueToItselfAndMidpointsToTheEvenNeighbour) {
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;
    EXPECT_EQ(fp8::e4m3_from_float(static_cast<float>(code_value(c))), c) << "code " << c;
  }
  for (int c = 0; c < 0x7e; ++c) {  // between c and c + 1 (both non-negative, finite)
    const double lo = code_value(c), hi = code_value(c + 1), mid = (lo + hi) / 2;
    const float midf = static_cast<float>(mid);  // exact: the codes' midpoints have 5 significant bits
    ASSERT_EQ(static_cast<double>(midf), mid);
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECT_EQ(fp8::e4m3_from_float(midf), even) << "midpoint of codes " << c << " and " << c + 1;
    EXPECT_EQ(fp8::e4m3_from_float(std::nextafter(midf, 0.0f)), c) << "just below the midpoint of " << c;
    EXPECT_EQ(fp8::e4m3_from_float(std::nextafter(midf, 1e9f)), c + 1) << "just above the midpoint of " << c;
    EXPECT_EQ(fp8::e4m3_from_float(-midf), 0x80 | even);
  }
}

TEST(Fp8E4m3, RandomValuesEncodeToTheNearestCodeFoundBySearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exponent(-14.0, 10.0);
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>((i % 2 ? -1 : 1) * std::exp2(exponent(rng)));
    ASSERT_EQ(fp8::e4m3_from_float(x), nearest_code(x)) << "x = " << x;
  }
}

TEST(Fp8E4m3, SaturatesAtTheLargestFiniteValueAndKeepsNanAndSignedZero) {
  EXPECT_EQ(fp8::e4m3_from_float(448.0f), 0x7e);
  EXPECT_EQ(fp8::e4m3_from_float(463.9f), 0x7e);
  EXPECT_EQ(fp8::e4m3_from_float(1e30f), 0x7e);
  EXPECT_EQ(fp8::e4m3_from_float(-INFINITY), 0xfe);
  EXPECT_EQ(fp8::e4m3_from_float(INFINITY), 0x7e);
  EXPECT_EQ(fp8::e4m3_from_float(NAN) & 0x7f, 0x7f);
  EXPECT_EQ(fp8::e4m3_from_float(0.0f), 0x00);
  EXPECT_EQ(fp8::e4m3_from_float(-0.0f), 0x80);
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(1.0f, -11)), 0x00);  // a quarter step: to zero
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(1.0f, -10)), 0x00);  // half the smallest step: to the even zero
  EXPECT_EQ(fp8::e4m3_from_float(std::ldexp(3.0f, -11)), 0x01);
}

// Half a step of the code grid at |y| (y = x / scale): 2^(floor(log2 |y|) - 4) for normals, 2^-10 below 2^-6.
double half_step(double y) {
  const double a = std::fabs(y);
  return a < std::ldexp(1.0, -6) ? std::ldexp(1.0, -10) : std::ldexp(1.0, std::ilogb(a) - 4);
}

TEST(Fp8Rows, EachRowScalesToItsLargestMagnitudeAndStaysWithinHalfAStep) {
  const int64_t rows = 7, cols = 75;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const float magnitude = std::ldexp(1.0f, static_cast<int>(r * 5) - 15);  // rows from 2^-15 to 2^15
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = r == 3 ? 0.0f : magnitude * normal(rng);
  }
  std::vector<uint8_t> codes(x.size());
  std::vector<float> scales(rows);
  fp8::quantize_rows(x.data(), rows, cols, codes.data(), scales.data());
  for (int64_t r = 0; r < rows; ++r) {
    double max_abs = 0;
    for (int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::fabs(double(x[r * cols + c])));
    if (max_abs == 0) {
      EXPECT_EQ(scales[r], 1.0f);
      for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(codes[r * cols + c], 0);
      continue;
    }
    EXPECT_NEAR(scales[r], max_abs / 448.0, max_abs / 448.0 * 1e-7) << "row " << r;
    bool reaches_max = false;
    for (int64_t c = 0; c < cols; ++c) {
      const double s = scales[r], y = x[r * cols + c] / s, got = code_value(codes[r * cols + c]);
      EXPECT_LE(std::fabs(got - y), half_step(y) * (1 + 1e-6)) << "row " << r << " column " << c;
      reaches_max |= std::fabs(got) == 448.0;
    }
    EXPECT_TRUE(reaches_max) << "row " << r << ": its largest value should take the code for 448";
  }
}

}  // namespace
}  // namespace rgbaq::engine
