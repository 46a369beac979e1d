// RoPE tables against a float64 evaluation of the fp32 formula, the token positions against the
// contract's rules worked by hand, and table files read back bit for bit.
#include "host/rope.h"

#include <gtest/gtest.h>

#include <iostream>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/test_temp_dir.h"

namespace rgbaq::host {
namespace {

// The fp32 formula with each tensor step rounded to fp32 in double arithmetic, cos/sin in double.
double reference_value(bool cosine, int d, int j, int pos) {
  const float exponent = static_cast<float>(static_cast<double>(2 * j) / d);
  const float base = static_cast<float>(std::pow(10000.0L, static_cast<long double>(exponent)));
  const float inv = static_cast<float>(1.0 / static_cast<double>(base));
  const float angle = static_cast<float>(static_cast<double>(pos) * static_cast<double>(inv));
  return cosine ? std::cos(static_cast<long double>(angle)) : std::sin(static_cast<long double>(angle));
}

TEST(Rope, FormulaTablesWithinOneMillionthOfFloat64) {
  const auto tables = RopeTables::from_formula();
  const int dims[3] = {16, 56, 56};
  double worst = 0;
  for (int axis = 0; axis < 3; ++axis) {
    for (int pos = RopeTables::kMinPosition; pos <= RopeTables::kMaxPosition; pos += 7) {
      for (int j = 0; j < dims[axis] / 2; ++j) {
        worst = std::max(worst, std::abs(tables.cos_row(axis, pos)[j] - reference_value(true, dims[axis], j, pos)));
        worst = std::max(worst, std::abs(tables.sin_row(axis, pos)[j] - reference_value(false, dims[axis], j, pos)));
      }
    }
  }
  EXPECT_LE(worst, 1e-6);
  std::cout << "RoPE tables from the formula: max |error| " << worst << " against float64\n";
}

TEST(Rope, FormulaKnownValues) {
  const auto tables = RopeTables::from_formula();
  // Position 0: cos 1, sin 0 on every axis. Position 1, pair 0: the angle is exactly 1 rad.
  for (int axis = 0; axis < 3; ++axis) {
    EXPECT_EQ(tables.cos_row(axis, 0)[0], 1.0f);
    EXPECT_EQ(tables.sin_row(axis, 0)[5], 0.0f);
    EXPECT_FLOAT_EQ(tables.cos_row(axis, 1)[0], static_cast<float>(std::cos(1.0)));
    EXPECT_FLOAT_EQ(tables.sin_row(axis, -1)[0], static_cast<float>(-std::sin(1.0)));
  }
  // Axis 0, pair 1: frequency 10000^(-2/16) = 0.31622776...
  EXPECT_NEAR(tables.cos_row(0, 10)[1], std::cos(10 * 0.316227766016838), 1e-6);
}

TEST(Rope, TokenPositionsFollowTheContract) {
  const auto tables = RopeTables::from_formula();
  const ImageSize size{144, 128};  // w = 9 columns, h = 8 rows: non-square, odd width
  const auto r = build_rope(tables, 9, size);
  ASSERT_EQ(r.txt_cos.size(), 9u * 64);
  ASSERT_EQ(r.img_cos.size(), 72u * 64);
  auto expect_token = [&](const std::vector<float>& cos, const std::vector<float>& sin, int token, int f, int hp,
                          int wp) {
    const int pos[3] = {f, hp, wp};
    int k = 0;
    for (int axis = 0; axis < 3; ++axis) {
      for (int j = 0; j < RopeTables::kAxisWidths[axis]; ++j, ++k) {
        ASSERT_EQ(cos[token * 64 + k], tables.cos_row(axis, pos[axis])[j]) << "token " << token << " value " << k;
        ASSERT_EQ(sin[token * 64 + k], tables.sin_row(axis, pos[axis])[j]) << "token " << token << " value " << k;
      }
    }
  };
  for (int i = 0; i < 9; ++i) expect_token(r.txt_cos, r.txt_sin, i, i, i, i);
  // h = 8: rows at y - (8 - 4) = -4..3. w = 9: columns at x - (9 - 4) = -5..3.
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 9; ++x) expect_token(r.img_cos, r.img_sin, y * 9 + x, 9, y - 4, x - 5);
  }
  // h = 16: rows run -8..7, as the contract says.
  const auto square = build_rope(tables, 8, ImageSize{256, 256});
  expect_token(square.img_cos, square.img_sin, 0, 8, -8, -8);
  expect_token(square.img_cos, square.img_sin, 255, 8, 7, 7);
}

void write_f32(const std::filesystem::path& path, const std::vector<float>& v) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

TEST(Rope, TableFilesAreUsedBitForBit) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "host");
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> files[3][2];
  for (int axis = 0; axis < 3; ++axis) {
    for (int kind = 0; kind < 2; ++kind) {
      files[axis][kind].resize(static_cast<size_t>(RopeTables::kRows) * RopeTables::kAxisWidths[axis]);
      for (float& v : files[axis][kind]) v = dist(rng);
      write_f32(dir.path() / "host" / ("rope_axis" + std::to_string(axis) + (kind ? "_sin.f32" : "_cos.f32")),
                files[axis][kind]);
    }
  }
  const auto tables = RopeTables::for_model(dir.path());
  EXPECT_TRUE(tables.from_files());
  const auto r = build_rope(tables, 20, ImageSize{256, 512});  // h = 32, w = 16
  // Image token (y = 31, x = 0): positions (20, 31 - 16, 0 - 8); the row for p is p + 1024.
  const size_t token = 31 * 16;
  EXPECT_EQ(r.img_cos[token * 64 + 0], files[0][0][(20 + 1024) * 8 + 0]);
  EXPECT_EQ(r.img_sin[token * 64 + 8 + 27], files[1][1][(15 + 1024) * 28 + 27]);
  EXPECT_EQ(r.img_cos[token * 64 + 36 + 3], files[2][0][(-8 + 1024) * 28 + 3]);
  EXPECT_EQ(r.txt_sin[19 * 64 + 63], files[2][1][(19 + 1024) * 28 + 27]);
}

TEST(Rope, WrongSizedOrMissingTableFileIsAnErrorNamingIt) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "host");
  write_f32(dir.path() / "host" / "rope_axis0_cos.f32", std::vector<float>(100));
  try {
    RopeTables::for_model(dir.path());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_axis0_cos.f32 is 400 bytes; expected 294912"), std::string::npos)
        << e.what();
  }
  write_f32(dir.path() / "host" / "rope_axis0_cos.f32", std::vector<float>(9216 * 8));
  try {
    RopeTables::for_model(dir.path());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_axis0_sin.f32"), std::string::npos) << e.what();
  }
}

TEST(Rope, NoHostDirectoryMeansTheFormula) {
  TempDir dir;
  EXPECT_FALSE(RopeTables::for_model(dir.path()).from_files());
}

TEST(Rope, AxisLimitsAndTableRowsAreChecked) {
  const auto tables = RopeTables::from_formula();
  EXPECT_THROW(build_rope(tables, 7, ImageSize{256, 256}), std::invalid_argument);
  EXPECT_THROW(build_rope(tables, 513, ImageSize{256, 256}), std::invalid_argument);
  EXPECT_NO_THROW(build_rope(tables, 512, ImageSize{1024, 1024}));
  // 16 x 65536 px is 4096 tokens in one column: rows from -2048, below the tables' first row.
  try {
    build_rope(tables, 8, ImageSize{16, 65536});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RoPE position -2048 on axis 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rgbaq::host
