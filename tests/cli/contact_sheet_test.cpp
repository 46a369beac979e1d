// The contact sheet's layout and labels: each label's pixels against FreeType's own rendering of the
// same string (made here glyph by glyph from the font file, not through the sheet's code), placed where
// the cell layout says; failed and missing cells marked in words; thumbnails equal to their images;
// a grid over prompt x size; and a clear error for a missing font. The sheet is read back from a PNG.
#include "cli/contact_sheet.h"

#include <gtest/gtest.h>

#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>

#include "cli/text_renderer.h"
#include "storage/png_file.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::cli {
namespace {

// A string as FreeType renders it: coverage 0..255 on a canvas with the pen starting at (0, baseline).
struct Reference {
  int width = 0, height = 0, baseline = 0;
  std::vector<int> coverage;
  int at(int x, int y) const { return coverage[size_t(y) * width + x]; }
};

Reference freetype_reference(const std::string& text, int pixel_size) {
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
int sheet_coverage(const storage::PngImage& s, int x, int y, uint8_t fill) {
  const int v = s.rgba[(size_t(y) * s.width + x) * 4];
  return (v - fill) * 255 / (kSheetText[0] - fill);
}

Box ink_box(const storage::PngImage& s, int x0, int y0, int x1, int y1, uint8_t fill) {
  Box b;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x)
      if (sheet_coverage(s, x, y, fill) > 0) b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x), std::max(b.y1, y)};
  return b;
}

Box ink_box(const Reference& r) {
  Box b;
  for (int y = 0; y < r.height; ++y)
    for (int x = 0; x < r.width; ++x)
      if (r.at(x, y) > 0) b = {std::min(b.x0, x), std::min(b.y0, y), std::max(b.x1, x), std::max(b.y1, y)};
  return b;
}

// The label's ink in the sheet, searched within a region, equals FreeType's rendering pixel for pixel
// (to rounding) and has the same shape; returns where it was found.
Box expect_label(const storage::PngImage& s, const std::string& text, int pixel_size, int x0, int y0, int x1, int y1, uint8_t fill) {
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

const uint8_t* pixel(const storage::PngImage& s, int x, int y) { return &s.rgba[(size_t(y) * s.width + x) * 4]; }

TEST(ContactSheet, LabelsCellsAndMarksReadBackFromThePng) {
  TempDir dir;
  constexpr int kThumb = 64;
  // Two opaque images the size of a cell: their thumbnails are the images themselves.
  std::vector<uint8_t> red(kThumb * kThumb * 4), blue(kThumb * kThumb * 4);
  for (size_t i = 0; i < red.size(); i += 4) {
    red[i] = 200, red[i + 1] = 30, red[i + 2] = 20, red[i + 3] = 255;
    blue[i] = 10, blue[i + 1] = 40, blue[i + 2] = 220, blue[i + 3] = 255;
  }
  storage::write_png_atomic(dir.path() / "fox_7.png", red.data(), kThumb, kThumb, {});
  storage::write_png_atomic(dir.path() / "owl_7.png", blue.data(), kThumb, kThumb, {});
  const std::vector<SheetJob> jobs = {
      {"a red fox", 7, 64, 64, "done", (dir.path() / "fox_7.png").string()},
      {"a red fox", 12, 64, 64, "failed", ""},
      {"an owl", 7, 64, 64, "done", (dir.path() / "owl_7.png").string()},
      {"an owl", 12, 64, 64, "done", (dir.path() / "gone.png").string()},  // done, but its file is gone
  };
  const SheetLayout layout = layout_sheet("run 3 (test)", jobs);
  EXPECT_EQ(layout.rows, (std::vector<std::string>{"a red fox", "an owl"}));
  EXPECT_EQ(layout.columns, (std::vector<std::string>{"seed 7", "seed 12"}));
  const Sheet sheet = render_sheet(layout, kThumb, kDefaultFontPath);
  const auto path = dir.path() / "sheet.png";
  storage::write_png_atomic(path, sheet.rgba.data(), sheet.geometry.width, sheet.geometry.height, {});
  const auto s = storage::read_png(path);
  const SheetGeometry& g = sheet.geometry;

  // The layout, worked by hand: 8 px margins, a 120 px row-label column (64 * 1.5 < 120), 4 px gutters.
  EXPECT_EQ(g.grid_x, 8 + 120 + 4);
  EXPECT_EQ(s.width, g.grid_x + 2 * kThumb + 4 + 8);
  EXPECT_EQ(s.height, g.grid_y + 2 * kThumb + 4 + 8);
  EXPECT_EQ(g.cell_x(1), g.grid_x + kThumb + 4);

  // Thumbnails: the images' own pixels.
  EXPECT_EQ(std::vector<uint8_t>(pixel(s, g.cell_x(0) + 30, g.cell_y(0) + 30), pixel(s, g.cell_x(0) + 30, g.cell_y(0) + 30) + 4),
            (std::vector<uint8_t>{200, 30, 20, 255}));
  EXPECT_EQ(pixel(s, g.cell_x(0) + 5, g.cell_y(1) + 5)[2], 220);

  // Column labels over their cells, centred; row labels left of theirs; the header above all.
  const Box seed7 = expect_label(s, "seed 7", SheetGeometry::kLabelPx, g.cell_x(0), g.grid_y - 20, g.cell_x(0) + kThumb, g.grid_y,
                                 kSheetBackground);
  EXPECT_NEAR((seed7.x0 + seed7.x1) / 2.0, g.cell_x(0) + kThumb / 2.0, 2.0) << "centred over its column";
  expect_label(s, "seed 12", SheetGeometry::kLabelPx, g.cell_x(1), g.grid_y - 20, g.cell_x(1) + kThumb, g.grid_y, kSheetBackground);
  const Box fox = expect_label(s, "a red fox", SheetGeometry::kLabelPx, 0, g.cell_y(0), g.grid_x - 4, g.cell_y(0) + kThumb,
                               kSheetBackground);
  EXPECT_EQ(fox.x0 >= g.row_label_x && fox.x0 <= g.row_label_x + 1, true) << fox.x0;
  expect_label(s, "an owl", SheetGeometry::kLabelPx, 0, g.cell_y(1), g.grid_x - 4, g.cell_y(1) + kThumb, kSheetBackground);
  expect_label(s, "run 3 (test)  \xC2\xB7  64x64", SheetGeometry::kHeaderPx, 0, 0, s.width, g.grid_y - 20, kSheetBackground);

  // The failed job's cell and the missing image's cell say so, on the failure colour.
  const uint8_t* failed = pixel(s, g.cell_x(1) + 2, g.cell_y(0) + 2);
  EXPECT_EQ(std::vector<uint8_t>(failed, failed + 3), std::vector<uint8_t>(kSheetFailedFill, kSheetFailedFill + 3));
  expect_label(s, "failed", SheetGeometry::kLabelPx, g.cell_x(1), g.cell_y(0), g.cell_x(1) + kThumb, g.cell_y(0) + kThumb,
               kSheetFailedFill[0]);
  expect_label(s, "missing", SheetGeometry::kLabelPx, g.cell_x(1), g.cell_y(1), g.cell_x(1) + kThumb, g.cell_y(1) + kThumb,
               kSheetFailedFill[0]);
}

TEST(ContactSheet, SeveralSizesJoinTheRowsOrMakeAnAxis) {
  const std::vector<SheetJob> jobs = {
      {"fox", 1, 256, 256, "done", ""}, {"fox", 1, 512, 512, "queued", ""}, {"owl", 1, 256, 256, "canceled", ""},
      {"fox", 2, 256, 256, "running", ""}};
  const SheetLayout by_seed = layout_sheet("run 1", jobs);
  EXPECT_EQ(by_seed.sizes, (std::vector<std::string>{"256x256", "512x512"}));
  EXPECT_EQ(by_seed.rows, (std::vector<std::string>{"fox", "fox", "owl"}));
  EXPECT_EQ(by_seed.row_details, (std::vector<std::string>{"256x256", "512x512", "256x256"}));
  EXPECT_EQ(by_seed.columns, (std::vector<std::string>{"seed 1", "seed 2"}));
  // 4 jobs and 2 empty cells (fox 512 seed 2, owl seed 2) marked "no job".
  ASSERT_EQ(by_seed.cells.size(), 6u);
  EXPECT_EQ(std::count_if(by_seed.cells.begin(), by_seed.cells.end(), [](const SheetCell& c) { return c.mark == "no job"; }), 2);
  EXPECT_EQ(by_seed.cells[1].mark, "not rendered yet");
  EXPECT_EQ(by_seed.cells[2].mark, "canceled");
  // Size across, prompt down: seeds now split the rows.
  const SheetLayout by_size = layout_sheet("run 1", jobs, SheetAxis::kSize, SheetAxis::kPrompt);
  EXPECT_EQ(by_size.columns, (std::vector<std::string>{"256x256", "512x512"}));
  EXPECT_EQ(by_size.row_details, (std::vector<std::string>{"seed 1", "seed 2", "seed 1"}));
  EXPECT_THROW(layout_sheet("run 1", jobs, SheetAxis::kSeed, SheetAxis::kSeed), std::exception);
}

TEST(ContactSheet, AMissingFontIsAClearError) {
  try {
    TextRenderer font("/nonexistent/DejaVuSans.ttf", 13);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("font /nonexistent/DejaVuSans.ttf not found"), std::string::npos) << e.what();
  }
  try {
    TextRenderer font(kDefaultFontPath, 13);
    const std::string cut = font.fit("a red fox sitting on a rock", font.measure("a red fox"));
    ASSERT_GE(cut.size(), 3u);
    EXPECT_EQ(cut.substr(cut.size() - 3), "…");
    EXPECT_EQ(std::string("a red fox").rfind(cut.substr(0, cut.size() - 3), 0), 0u) << cut;
    EXPECT_LE(font.measure(cut), font.measure("a red fox"));
    const auto lines = font.wrap("a red fox sitting on a rock", font.measure("a red fox sitting"), 2);
    EXPECT_EQ(lines, (std::vector<std::string>{"a red fox sitting", "on a rock"}));
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
}

}  // namespace
}  // namespace rgbaq::cli
