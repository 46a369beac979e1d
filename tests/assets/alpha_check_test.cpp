// The alpha check (assets/alpha_check.h) on small images whose figures are worked out by hand at each
// threshold of its definitions: the alpha bands (8 | 9, 127 | 128, 246 | 247), a component's least size
// (4 pixels, 0.05% of the image), 8-connectivity, the border of a one-row image, each flag at its bar
// (0.995, 0.02, 9 components, 20% in checker cells), and the checker rule's edges (cell sizes 4 and a
// quarter of the image; 3 and over it; tones 16 apart or less; the darker under 64; noise on the tones;
// colour). tests/cli/qa_command_test.cpp checks whole images written by Python.
#include <gtest/gtest.h>

#include <random>

#include "assets/alpha_check.h"
#include "jobs/qa_flags.h"

namespace rgbaq::assets {
namespace {

using jobs::QaFlag;
using jobs::qa_bit;

struct Rgba {
  int w, h;
  std::vector<uint8_t> px;
  Rgba(int w, int h, std::array<uint8_t, 4> fill = {0, 0, 0, 0}) : w(w), h(h), px(size_t(w) * h * 4) {
    for (size_t i = 0; i < px.size(); ++i) px[i] = fill[i % 4];
  }
  void set(int x, int y, std::array<uint8_t, 4> v) { std::copy(v.begin(), v.end(), px.begin() + (size_t(y) * w + x) * 4); }
  void alpha(int x, int y, uint8_t a) { px[(size_t(y) * w + x) * 4 + 3] = a; }
  void rect(int x0, int y0, int rw, int rh, std::array<uint8_t, 4> v) {
    for (int y = y0; y < y0 + rh; ++y)
      for (int x = x0; x < x0 + rw; ++x) set(x, y, v);
  }
  AlphaCheck check() const { return check_alpha(px.data(), w, h); }
};

constexpr std::array<uint8_t, 4> kSolid = {200, 30, 30, 255};

TEST(AlphaCheck, TheAlphaBandsAndTheBorderOfOneRow) {
  Rgba im(6, 1);
  const uint8_t alphas[] = {8, 9, 127, 128, 246, 247};
  for (int x = 0; x < 6; ++x) im.alpha(x, 0, alphas[x]);
  const AlphaCheck c = im.check();
  EXPECT_EQ(c.transparent_pixels, 1u);  // 8
  EXPECT_EQ(c.opaque_pixels, 1u);       // 247
  EXPECT_EQ(c.partial_pixels, 4u);
  EXPECT_EQ(c.bbox, (std::array<int, 4>{1, 0, 5, 1}));  // from the 9
  EXPECT_EQ(c.border_pixels, 6u);       // one row: every pixel is on the border
  EXPECT_EQ(c.solid_border_pixels, 3u); // 128, 246, 247
  EXPECT_EQ(c.edge(), 0.5);
  EXPECT_EQ(c.components, 0);           // 3 solid pixels: under 4
  EXPECT_EQ(c.flags_text(), "cut_off");
}

TEST(AlphaCheck, ComponentsAreEightConnectedAndAtLeastTheirShare) {
  // 100x100: at least max(4, 0.05% of 10,000 = 5) pixels.
  Rgba im(100, 100);
  im.rect(10, 10, 3, 3, kSolid);
  im.rect(13, 13, 3, 3, kSolid);  // touches the first at a corner only: one region of 18
  im.rect(30, 10, 3, 3, kSolid);
  im.rect(34, 10, 3, 3, kSolid);  // a column apart: two regions
  im.rect(50, 50, 2, 2, kSolid);  // 4 pixels: under 5
  im.rect(60, 60, 5, 1, kSolid);  // 5: counts
  im.rect(70, 70, 1, 1, {0, 0, 0, 127});  // partial, not solid: not a region, but in the bbox
  const AlphaCheck c = im.check();
  EXPECT_EQ(c.components, 4);
  EXPECT_EQ(c.bbox, (std::array<int, 4>{10, 10, 61, 61}));
  EXPECT_EQ(c.opaque_pixels, 18u + 18u + 4u + 5u);
  EXPECT_EQ(c.partial_pixels, 1u);
  EXPECT_EQ(c.edge(), 0.0);
  EXPECT_EQ(c.flags_text(), "empty");  // 9,954 of 10,000 pixels clear: over 0.995
}

TEST(AlphaCheck, AComponentOfAShareExactly) {
  Rgba im(200, 100);  // 20,000 pixels: 0.05% is 10
  im.rect(10, 10, 10, 1, kSolid);
  im.rect(10, 20, 9, 1, kSolid);
  EXPECT_EQ(im.check().components, 1);
}

TEST(AlphaCheck, EachFlagAtItsBar) {
  {  // 199 of 200 clear: 0.995, empty; 198: not
    Rgba im(200, 1);
    im.alpha(0, 0, 255);
    EXPECT_TRUE(im.check().flags & qa_bit(QaFlag::kEmpty));
    im.alpha(1, 0, 255);
    EXPECT_FALSE(im.check().flags & qa_bit(QaFlag::kEmpty));
  }
  {  // 199 of 200 opaque: no_alpha; 198: not
    Rgba im(200, 1, {0, 0, 0, 255});
    im.alpha(0, 0, 0);
    EXPECT_TRUE(im.check().flags & qa_bit(QaFlag::kNoAlpha));
    im.alpha(1, 0, 0);
    EXPECT_FALSE(im.check().flags & qa_bit(QaFlag::kNoAlpha));
  }
  {  // 26x26: a border of 100 pixels; 2 solid on it is 0.02: cut_off; 1 is not
    Rgba im(26, 26);
    im.set(0, 10, kSolid);
    EXPECT_EQ(im.check().border_pixels, 100u);
    EXPECT_FALSE(im.check().flags & qa_bit(QaFlag::kCutOff));
    im.set(25, 10, kSolid);
    EXPECT_EQ(im.check().edge(), 0.02);
    EXPECT_TRUE(im.check().flags & qa_bit(QaFlag::kCutOff));
  }
  {  // 8 regions: not fragmented; 9: fragmented
    Rgba im(100, 100);
    for (int i = 0; i < 8; ++i) im.rect(5 + 10 * i, 40, 3, 3, kSolid);
    EXPECT_EQ(im.check().flags_text(), "ok");
    im.rect(5, 60, 3, 3, kSolid);
    EXPECT_EQ(im.check().components, 9);
    EXPECT_EQ(im.check().flags_text(), "fragmented");
  }
}

// A grey checker of `cell` px, tones `light` and `dark`, over [x0, x0 + cells_w * cell) x [y0, ...) of an
// image of opaque red (cut at the image's sides); `noise`: each pixel's channels moved by up to that much (one draw for all three,
// and a second smaller one for the blue, so the pixel stays grey).
Rgba checker(int w, int h, int cell, int cells_w, int cells_h, uint8_t light, uint8_t dark, int x0 = 0, int y0 = 0, int noise = 0) {
  Rgba im(w, h, {220, 20, 20, 255});
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> d(-noise, noise);
  for (int y = y0; y < std::min(h, y0 + cells_h * cell); ++y) {
    for (int x = x0; x < std::min(w, x0 + cells_w * cell); ++x) {
      const int t = (((x - x0) / cell + (y - y0) / cell) % 2 ? dark : light) + (noise ? d(rng) : 0);
      const auto v = static_cast<uint8_t>(std::clamp(t, 0, 255));
      im.set(x, y, {v, v, static_cast<uint8_t>(std::clamp(t + (noise ? d(rng) / 2 : 0), 0, 255)), 255});
    }
  }
  return im;
}

TEST(AlphaCheck, ACheckerIsFoundAtEverySizeFromFourToAQuarterOfTheImage) {
  for (int cell : {4, 5, 7, 16, 64}) {
    SCOPED_TRACE(cell);
    // Filling 256x256 (a part cell at the edge when 256 is no multiple): the cells with a cell on each
    // side are counted: (n - 2)^2 for n whole cells a side, n = ceil(256 / cell) with the last possibly cut.
    const int n = (256 + cell - 1) / cell;
    const AlphaCheck c = checker(256, 256, cell, n, n, 0xff, 0xcc).check();
    const int whole = 256 / cell;  // cells wholly inside
    const int counted_side = whole == n ? n - 2 : whole - 1;  // a cut last cell still ends its neighbour's side
    EXPECT_EQ(c.checker_cells, counted_side * counted_side);
    EXPECT_EQ(c.checker_pixels, uint64_t(counted_side) * counted_side * cell * cell);
    EXPECT_TRUE(c.flags & qa_bit(QaFlag::kFakeTransparency)) << c.checker();
  }
  // 3 px cells, and cells over a quarter of the image's shorter side, are not a checker's.
  EXPECT_EQ(checker(256, 256, 3, 86, 86, 0xff, 0xcc).check().checker_cells, 0);
  EXPECT_EQ(checker(256, 256, 65, 4, 4, 0xff, 0xcc).check().checker_cells, 0);
}

TEST(AlphaCheck, TheCheckerMustCoverAFifthOfTheImage) {
  // 400x400 = 160,000 pixels. A board of 10x10 cells of 16 px from the corner on red: the cells with a
  // cell to the left, above, right and below are 8x8 = 64, 16,384 pixels: 10.24%, not flagged.
  AlphaCheck c = checker(400, 400, 16, 10, 10, 0x99, 0x66).check();
  EXPECT_EQ(c.checker_cells, 64);
  EXPECT_FALSE(c.flags & qa_bit(QaFlag::kFakeTransparency));
  // 14x14 cells: 12x12 = 144 counted, 36,864 pixels: 23.04%: flagged.
  c = checker(400, 400, 16, 14, 14, 0x99, 0x66).check();
  EXPECT_EQ(c.checker_cells, 144);
  EXPECT_EQ(c.checker(), 36864.0 / 160000.0);
  EXPECT_TRUE(c.flags & qa_bit(QaFlag::kFakeTransparency));
  // Inside the image, at an offset: the same cells.
  EXPECT_EQ(checker(400, 400, 16, 14, 14, 0x99, 0x66, 37, 101).check().checker_cells, 144);
}

TEST(AlphaCheck, ACheckerDrawnWithNoiseOnItsTonesIsStillOne) {
  const AlphaCheck c = checker(256, 256, 16, 16, 16, 0xee, 0xbb, 0, 0, 2).check();
  EXPECT_TRUE(c.flags & qa_bit(QaFlag::kFakeTransparency)) << c.checker();
}

TEST(AlphaCheck, WhatIsNoTransparencyChecker) {
  // Tones 15 apart (under 16); a chess board (the darker tone under 64); a coloured checker; noise.
  EXPECT_EQ(checker(256, 256, 16, 16, 16, 0xff, 0xf0).check().checker_cells, 0);
  EXPECT_EQ(checker(256, 256, 16, 16, 16, 0xff, 0x3f).check().checker_cells, 0);
  EXPECT_GT(checker(256, 256, 16, 16, 16, 0xff, 0x40).check().checker_cells, 0);  // 64: the least dark tone
  Rgba coloured(256, 256);
  for (int y = 0; y < 256; ++y)
    for (int x = 0; x < 256; ++x) coloured.set(x, y, (x / 16 + y / 16) % 2 ? std::array<uint8_t, 4>{40, 40, 200, 255} : std::array<uint8_t, 4>{200, 40, 40, 255});
  EXPECT_EQ(coloured.check().checker_cells, 0);
  Rgba noise(256, 256);
  std::mt19937 rng(1);
  for (auto& v : noise.px) v = static_cast<uint8_t>(rng());
  EXPECT_EQ(noise.check().checker_cells, 0);
  // Greys with noise: every pixel grey, two tones, but no flat cell.
  Rgba grey_noise(256, 256);
  for (int y = 0; y < 256; ++y) {
    for (int x = 0; x < 256; ++x) {
      const uint8_t t = rng() % 2 ? 0xff : 0xcc;
      grey_noise.set(x, y, {t, t, t, 255});
    }
  }
  EXPECT_EQ(grey_noise.check().checker_cells, 0);
}

TEST(AlphaCheck, ItsJsonForm) {
  Rgba im(4, 2);
  im.set(1, 1, kSolid);
  const auto j = alpha_check_json(im.check());
  EXPECT_EQ(j["bbox"], nlohmann::json({1, 1, 1, 1}));
  EXPECT_EQ(j["transparent"], 7.0 / 8.0);
  EXPECT_EQ(j["flags"], nlohmann::json({"cut_off"}));  // 4x2: every pixel is on the border
  EXPECT_EQ(qa_flags_of(j), "cut_off");
  const auto clear = alpha_check_json(Rgba(4, 2).check());
  EXPECT_TRUE(clear["bbox"].is_null());
  EXPECT_EQ(clear["flags"], nlohmann::json({"empty"}));
  EXPECT_THROW(qa_flags_of(nlohmann::json::object()), std::invalid_argument);
  EXPECT_THROW(qa_flags_of({{"flags", {"cut_of"}}}), std::invalid_argument);
  EXPECT_THROW(check_alpha(nullptr, 0, 4), std::invalid_argument);
}

TEST(QaFlags, ListsAreReadStrictlyAndWrittenInOneOrder) {
  EXPECT_EQ(jobs::qa_flags_text(jobs::parse_qa_flag_list("fragmented, cut_off")), "cut_off,fragmented");
  EXPECT_EQ(jobs::qa_flags_text(0), "ok");
  for (const char* bad : {"", "cut_off,", "cutoff", "ok", "cut_off,bogus"}) {
    SCOPED_TRACE(bad);
    try {
      jobs::parse_qa_flag_list(bad);
      ADD_FAILURE() << "accepted";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("one of empty, no_alpha, cut_off, fragmented, fake_transparency"), std::string::npos) << what;
      if (std::string(bad) == "cutoff") EXPECT_NE(what.find("'cutoff'"), std::string::npos) << what;
      if (std::string(bad) == "cut_off,bogus") EXPECT_NE(what.find("'bogus'"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(jobs::parse_qa_filter("ok"), "ok");
  EXPECT_EQ(jobs::parse_qa_filter("empty"), "empty");
  EXPECT_FALSE(jobs::parse_qa_filter("cut"));
}

}  // namespace
}  // namespace rgbaq::assets
