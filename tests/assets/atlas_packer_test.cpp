// The atlas packer: every rectangle placed once, inside its page, none overlapping (checked pair by
// pair), pages within the limit and cut to what they hold; as few pages as the area allows in the
// cases worked out by hand; a rectangle larger than a page refused by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <set>

#include "assets/atlas_packer.h"

namespace rgbaq::assets {
namespace {

void expect_valid(const std::vector<PackSize>& sizes, const std::vector<PackedPage>& pages, int max_side) {
  std::multiset<int> seen;
  for (const PackedPage& page : pages) {
    EXPECT_LE(page.width, max_side);
    EXPECT_LE(page.height, max_side);
    ASSERT_EQ(page.items.size(), page.places.size());
    int right = 0, bottom = 0;
    for (size_t a = 0; a < page.items.size(); ++a) {
      const PixelRect& r = page.places[a];
      seen.insert(page.items[a]);
      EXPECT_EQ(r.w, sizes[size_t(page.items[a])].w);
      EXPECT_EQ(r.h, sizes[size_t(page.items[a])].h);
      EXPECT_GE(r.x, 0);
      EXPECT_GE(r.y, 0);
      EXPECT_LE(r.x + r.w, page.width);
      EXPECT_LE(r.y + r.h, page.height);
      right = std::max(right, r.x + r.w);
      bottom = std::max(bottom, r.y + r.h);
      for (size_t b = a + 1; b < page.items.size(); ++b) {
        const PixelRect& s = page.places[b];
        const bool apart = r.x + r.w <= s.x || s.x + s.w <= r.x || r.y + r.h <= s.y || s.y + s.h <= r.y;
        ASSERT_TRUE(apart) << "items " << page.items[a] << " and " << page.items[b] << " overlap";
      }
    }
    EXPECT_EQ(page.width, right) << "the page is cut to what it holds";
    EXPECT_EQ(page.height, bottom);
  }
  std::multiset<int> all;
  for (int i = 0; i < int(sizes.size()); ++i) all.insert(i);
  EXPECT_EQ(seen, all) << "every rectangle once";
}

TEST(AtlasPacker, SixteenSquaresFillOneSquarePageExactly) {
  const std::vector<PackSize> sizes(16, {32, 32});
  const auto pages = pack_atlas(sizes, 4096);
  ASSERT_EQ(pages.size(), 1u);
  expect_valid(sizes, pages, 4096);
  EXPECT_EQ(pages[0].width, 128);  // 4 x 4 squares of 32: no waste
  EXPECT_EQ(pages[0].height, 128);
}

TEST(AtlasPacker, MixedSizesPackTightly) {
  std::vector<PackSize> sizes;
  uint32_t s = 5;
  int64_t area = 0;
  for (int i = 0; i < 200; ++i) {
    s = s * 1664525u + 1013904223u;
    sizes.push_back({int(8 + (s >> 8) % 120), int(8 + (s >> 20) % 90)});
    area += int64_t(sizes.back().w) * sizes.back().h;
  }
  const auto pages = pack_atlas(sizes, 4096);
  ASSERT_EQ(pages.size(), 1u);
  expect_valid(sizes, pages, 4096);
  const double used = double(area) / (double(pages[0].width) * pages[0].height);
  std::printf("200 rectangles: %dx%d page, %.1f%% of it used\n", pages[0].width, pages[0].height, 100 * used);
  EXPECT_GT(used, 0.75);
}

TEST(AtlasPacker, WhatDoesNotFitGoesOnFurtherPages) {
  // Ten 60x60 images on 128 px pages: 4 fit a page (2 x 2), so 3 pages: 4, 4 and 2.
  const std::vector<PackSize> sizes(10, {60, 60});
  const auto pages = pack_atlas(sizes, 128);
  ASSERT_EQ(pages.size(), 3u);
  expect_valid(sizes, pages, 128);
  EXPECT_EQ(pages[0].items.size(), 4u);
  EXPECT_EQ(pages[1].items.size(), 4u);
  EXPECT_EQ(pages[2].items.size(), 2u);
  EXPECT_EQ(pages[2].width * pages[2].height, 120 * 60) << "the last page holds two side by side";
}

TEST(AtlasPacker, ARectangleLargerThanAPageIsRefused) {
  try {
    pack_atlas({{10, 10}, {300, 20}}, 256);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("300x20"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("256x256"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(pack_atlas({}, 64).empty());
}

}  // namespace
}  // namespace rgbaq::assets
