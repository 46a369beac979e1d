// Contact sheets as a new user met them (issue 43, item 8 and the sheet's labels), through the real
// binaries and read back from their PNGs: a sheet is written where no game engine's importer looks
// (OUT/.rgbaq/sheets/), a `--marked star` sheet is a file of its own that says "starred" in its
// header and leaves the places of unstarred jobs empty (not "no job"), emoji in labels are drawn in
// colour (❤️ with its U+FE0F, which DejaVu has a black glyph for, and 🎮), and a CJK prompt's line
// never starts with its "，".
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "cli/contact_sheet.h"
#include "cli/text_renderer.h"
#include "storage/png_file.h"
#include "tests/cli/sheet_label_check.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

using cli::SheetGeometry;

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), {});
}

// Where render_sheet puts things for these rows and columns at `thumb` (the geometry depends on the
// fonts' metrics and the grid's shape only, not on what a cell holds).
SheetGeometry geometry_of(const std::vector<cli::SheetJob>& jobs, int thumb) {
  return cli::render_sheet(cli::layout_sheet("run 1", jobs), thumb, cli::kDefaultFontPath).geometry;
}

TEST(ContactSheetMarked, AStarredSheetIsItsOwnFileSaysSoAndLeavesTheUnstarredOut) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "Assets" / "Sprites";
  write_file(dir.path() / "pets.csv", "prompt,seed\nfox,1-2\nowl,1-2\n");
  const auto submitted = rgbaq(d, {"submit", (dir.path() / "pets.csv").string(), "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  // fox seed 1 (job 1) and owl seed 2 (job 4): the diagonal.
  ASSERT_EQ(rgbaq(d, {"mark", "1", "4", "--star"}).exit_code, 0);

  const fs::path sheets = out / ".rgbaq" / "sheets";
  const auto whole = rgbaq(d, {"sheet", "1"});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out, (sheets / "sheet_run1.png").string() + " (2 rows x 2 columns)\n");
  // What an importer of OUT sees (Unity and Godot skip folders whose names start with '.'): the 4
  // images and nothing else.
  std::set<std::string> visible;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name[0] == '.') continue;
    visible.insert(name);
    EXPECT_TRUE(name.ends_with("_1.png") || name.ends_with("_2.png")) << name << ": an importer would take it for an asset";
    EXPECT_EQ(name.find("sheet"), std::string::npos) << name;
  }
  EXPECT_EQ(visible.size(), 4u);
  const std::string whole_bytes = bytes_of(sheets / "sheet_run1.png");

  const auto starred = rgbaq(d, {"sheet", "1", "--marked", "star"});
  ASSERT_EQ(starred.exit_code, 0) << starred.err;
  EXPECT_EQ(starred.out, (sheets / "sheet_run1_starred.png").string() + " (2 rows x 2 columns)\n");
  EXPECT_EQ(bytes_of(sheets / "sheet_run1.png"), whole_bytes) << "the full sheet is not overwritten";
  ASSERT_TRUE(fs::exists(sheets / "sheet_run1_starred.png"));
  const auto s = storage::read_png(sheets / "sheet_run1_starred.png");
  const json legend = json::parse(s.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["marked"], "star");
  EXPECT_EQ(legend["rows"], json({"fox", "owl"}));
  EXPECT_EQ(legend["columns"], json({"seed 1", "seed 2"}));

  // The header says which jobs the sheet holds: its ink is FreeType's rendering of that text.
  const std::vector<cli::SheetJob> jobs = {{"fox", 1, 128, 128, "done", ""}, {"fox", 2, 128, 128, "done", ""},
                                           {"owl", 1, 128, 128, "done", ""}, {"owl", 2, 128, 128, "done", ""}};
  const SheetGeometry g = geometry_of(jobs, 128);
  ASSERT_EQ(s.width, g.width);
  ASSERT_EQ(s.height, g.height);
  cli::expect_label(s, "run 1, starred only (pets)  \xC2\xB7  128x128", SheetGeometry::kHeaderPx, 0, 0, g.width,
                    g.header_baseline + 6, cli::kSheetBackground);

  // Starred cells show their images; the places of the unstarred jobs stay the sheet's background,
  // with no "no job" (or any) cell drawn there.
  const auto centre = [&](int row, int column) { return cli::pixel(s, g.cell_x(column) + 64, g.cell_y(row) + 64); };
  for (const auto& [row, column] : {std::pair{0, 1}, std::pair{1, 0}}) {
    for (int y = g.cell_y(row); y < g.cell_y(row) + 128; ++y)
      for (int x = g.cell_x(column); x < g.cell_x(column) + 128; ++x) {
        const uint8_t* p = cli::pixel(s, x, y);
        ASSERT_TRUE(p[0] == cli::kSheetBackground && p[1] == cli::kSheetBackground && p[2] == cli::kSheetBackground)
            << "cell " << row << "," << column << " at " << x << "," << y << ": " << int(p[0]) << " " << int(p[1]) << " " << int(p[2]);
      }
  }
  for (const auto& [row, column] : {std::pair{0, 0}, std::pair{1, 1}}) {
    const uint8_t* p = centre(row, column);
    EXPECT_FALSE(p[0] == cli::kSheetBackground && p[1] == cli::kSheetBackground && p[2] == cli::kSheetBackground)
        << "the starred cell " << row << "," << column << " shows its image";
  }
  // -o still writes where it is told.
  const auto told = rgbaq(d, {"sheet", "1", "--marked", "star", "-o", (dir.path() / "mine.png").string()});
  EXPECT_EQ(told.exit_code, 0) << told.err;
  EXPECT_TRUE(fs::exists(dir.path() / "mine.png"));
  // Each filter its own name; a filter that is none of them is a usage error naming them.
  EXPECT_EQ(rgbaq(d, {"sheet", "1", "--marked", "none"}).out, (sheets / "sheet_run1_unmarked.png").string() + " (2 rows x 2 columns)\n");
  const auto bad = rgbaq(d, {"sheet", "1", "--marked", "stars"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--marked: \"stars\" is not one of star, reject, none, any"), std::string::npos) << bad.err;
}

// Coloured pixels (R, G and B apart) in a box of the sheet.
int coloured_pixels(const storage::PngImage& s, int x0, int y0, int x1, int y1) {
  int n = 0;
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) {
      const uint8_t* p = cli::pixel(s, x, y);
      if (std::max({p[0], p[1], p[2]}) - std::min({p[0], p[1], p[2]}) > 40) ++n;
    }
  return n;
}

TEST(ContactSheetMarked, EmojiAreInColourAndNoCjkLineStartsWithItsComma) {
  TempDir dir;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {});
  const fs::path out = dir.path() / "o";
  // The example file's CJK prompt, and a label each for ❤️ (U+2764 U+FE0F) and 🎮 (U+1F3AE).
  const std::string cat = "一只坐在窗台上的猫，水彩风格，透明背景";
  write_file(dir.path() / "labels.csv", "prompt,seed\n" + cat + ",1\n\xE2\x9D\xA4\xEF\xB8\x8F hero,1\n\xF0\x9F\x8E\xAE pad,1\n");
  const auto submitted = rgbaq(d, {"submit", (dir.path() / "labels.csv").string(), "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out << submitted.err;
  // 80 px cells: a 120 px label column, where nine CJK characters of 13 px fit and the "，" after
  // them does not.
  const fs::path sheet = dir.path() / "labels.png";
  const auto r = rgbaq(d, {"sheet", "1", "--thumb", "80", "-o", sheet.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = storage::read_png(sheet);
  const SheetGeometry g =
      geometry_of({{cat, 1, 128, 128, "done", ""}, {"\xE2\x9D\xA4\xEF\xB8\x8F hero", 1, 128, 128, "done", ""},
                   {"\xF0\x9F\x8E\xAE pad", 1, 128, 128, "done", ""}},
                  80);
  ASSERT_EQ(s.width, g.width);
  ASSERT_EQ(s.height, g.height);
  cli::TextRenderer label(cli::kDefaultFontPath, SheetGeometry::kLabelPx);
  ASSERT_EQ(label.measure("一只坐在窗台上的猫"), 117) << "the CJK font's advance is not the 13 px this test is laid out for";
  ASSERT_EQ(g.row_label_width, 120);

  // Emoji: each in its own colours, in its glyph's box at the start of its label (a pixel size wide).
  // ❤️ is red all over; Noto's 🎮 is a gray pad whose four buttons (yellow, blue, red, green) are a
  // few pixels each at 13 px.
  const int line = label.line_height();
  for (const auto& [row, least] : {std::pair{1, 40}, std::pair{2, 4}}) {
    const int top = g.cell_y(row), x0 = g.row_label_x;
    EXPECT_GE(coloured_pixels(s, x0, top, x0 + SheetGeometry::kLabelPx + 4, top + line), least)
        << (row == 1 ? "❤️" : "🎮") << " is drawn without colour";
  }

  // Kinsoku: the second line of the CJK label starts with 猫 (ink of a full CJK glyph, most of the
  // line's height), not with "，" (a few pixels at the bottom of its box).
  const int top = g.cell_y(0) + line;
  const cli::Box first = cli::ink_box(s, g.row_label_x, top, g.row_label_x + 11, top + line, cli::kSheetBackground);
  ASSERT_FALSE(first.empty()) << "no second line";
  EXPECT_GE(first.y1 - first.y0 + 1, 9) << "the second line starts with a punctuation mark, not a character";
}

}  // namespace
}  // namespace rgbaq
