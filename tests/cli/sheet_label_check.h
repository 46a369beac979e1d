#pragma once
// Checks of a contact sheet read back from its PNG: a label's ink against FreeType's own rendering of
// the same string, made here glyph by glyph from the font file (not through the sheet's code).
#include <gtest/gtest.h>

#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/contact_sheet.h"
#include "cli/text_renderer.h"
#include "storage/png_file.h"

namespace rgbaq::cli {

// A string as FreeType renders it: coverage 0..255 on a canvas with the pen starting at (0, baseline).
struct Reference {
  int width = 0, height = 0, baseline = 0;
  std::vector<int> coverage;
  int at(int x, int y) const { return coverage[size_t(y) * width + x]; }
};

inline Reference freetype_reference(const std::string& text, int pixel_size) {
  FT_Library lib;
  FT_Face face;
  EXPECT_EQ(FT_Init_FreeType(&lib), 0);
  EXPECT_EQ(FT_New_Face(lib, kDefaultFontPath, 0, &face), 0);
  FT_Set_Pixel_Sizes(face, 0, pixel_size);
  Reference r;
  r.baseline = pixel_size * 2;
  r.height = pixel_size * 3;
  r.width = pixel_size * int(text.size() + 2);
  r.coverage.assign(size_t(r.width) * r.height, 0);
  int pen = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    // UTF-8 of one or two bytes is all the labels here use.
    FT_ULong cp = static_cast<unsigned char>(text[i]);
    if (cp >= 0xC0) cp = ((cp & 0x1F) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F);
    EXPECT_EQ(FT_Load_Char(face, cp, FT_LOAD_RENDER), 0);
    const FT_Bitmap& bm = face->glyph->bitmap;
    for (unsigned y = 0; y < bm.rows; ++y)
      for (unsigned x = 0; x < bm.width; ++x) {
        const int px = pen + face->glyph->bitmap_left + int(x), py = r.baseline - face->glyph->bitmap_top + int(y);
        int& c = r.coverage[size_t(py) * r.width + px];
        c = std::max(c, int(bm.buffer[y * bm.pitch + x]));
      }
    pen += int(face->glyph->advance.x >> 6);
  }
  FT_Done_Face(face);
  FT_Done_FreeType(lib);
  return r;
}

struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  bool empty() const { return x1 < 0; }
};

// The sheet's text coverage in a region: how far each pixel went from `fill` towards the text colour.
inline int sheet_coverage(const storage::PngImage& s, int x, int y, uint8_t fill) {
  const int v = s.rgba[(size_t(y) * s.width + x) * 4];
  return (v - fill) * 255 / (kSheetText[0] - fill);
}

inline Box ink_box(const storage::PngImage& s, int x0, int y0, int x1, int y1, uint8_t fill) {
  Box b;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      if (sheet_coverage(s, x, y, fill) > 0) b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x), std::max(b.y1, y)};
  return b;
}

inline Box ink_box(const Reference& r) {
  Box b;
  for (int y = 0; y < r.height; ++y)
    for (int x = 0; x < r.width; ++x)
      if (r.at(x, y) > 0) b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x), std::max(b.y1, y)};
  return b;
}

// The label's ink in the sheet, searched within a region, equals FreeType's rendering pixel for pixel
// (to rounding) and has the same shape; returns where it was found.
inline Box expect_label(const storage::PngImage& s, const std::string& text, int pixel_size, int x0, int y0, int x1, int y1,
                        uint8_t fill) {
  const Reference ref = freetype_reference(text, pixel_size);
  const Box want = ink_box(ref), got = ink_box(s, x0, y0, x1, y1, fill);
  EXPECT_FALSE(got.empty()) << "no ink for \"" << text << "\"";
  if (got.empty()) return got;
  EXPECT_EQ(got.x1 - got.x0, want.x1 - want.x0) << text;
  EXPECT_EQ(got.y1 - got.y0, want.y1 - want.y0) << text;
  int worst = 0;
  for (int y = 0; y <= std::min(got.y1 - got.y0, want.y1 - want.y0); ++y)
    for (int x = 0; x <= std::min(got.x1 - got.x0, want.x1 - want.x0); ++x)
      worst = std::max(worst, std::abs(sheet_coverage(s, got.x0 + x, got.y0 + y, fill) - ref.at(want.x0 + x, want.y0 + y)));
  EXPECT_LE(worst, 3) << "\"" << text << "\" differs from FreeType's rendering";
  return got;
}

inline const uint8_t* pixel(const storage::PngImage& s, int x, int y) { return &s.rgba[(size_t(y) * s.width + x) * 4]; }

}  // namespace rgbaq::cli
