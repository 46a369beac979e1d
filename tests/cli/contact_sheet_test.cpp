// The contact sheet's layout and labels: each label's pixels against FreeType's own rendering of the
// same string (made here glyph by glyph from the font file, not through the sheet's code), placed where
// the cell layout says; failed and missing cells marked in words; thumbnails equal to their images;
// a grid over prompt x size; and a clear error for a missing font. The sheet is read back from a PNG.
#include "cli/contact_sheet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli/text_renderer.h"
#include "storage/png_file.h"
#include "tests/cli/sheet_label_check.h"
#include "tests/test_temp_dir.h"

namespace rgbaq::cli {
namespace {

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

// LoRA axes, the labels and orders worked by hand from the jobs below.
TEST(ContactSheet, LoraWeightsMakeAnAxisAndSplitRowsWhenOnNeither) {
  const std::vector<SheetJob> sweep = {
      {"fox", 1, 128, 128, "done", "", "detail:1"}, {"fox", 1, 128, 128, "done", "", ""},
      {"fox", 1, 128, 128, "done", "", "detail:0.25"}, {"fox", 2, 128, 128, "failed", "", "detail:0.25"}};
  const SheetLayout by_weight = layout_sheet("run 1", sweep, SheetAxis::kLora, SheetAxis::kSeed);
  EXPECT_EQ(by_weight.columns, (std::vector<std::string>{"no LoRA", "detail 0.25", "detail 1"}));
  EXPECT_EQ(by_weight.rows, (std::vector<std::string>{"seed 1", "seed 2"}));
  EXPECT_EQ(by_weight.row_details, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(by_weight.loras, (std::vector<std::string>{"detail"}));
  ASSERT_EQ(by_weight.cells.size(), 6u);  // 4 jobs, 2 cells without one
  EXPECT_EQ(by_weight.cells[0].column, 2);
  EXPECT_EQ(by_weight.cells[3].row, 1);
  EXPECT_EQ(by_weight.cells[3].column, 1);
  EXPECT_EQ(by_weight.cells[3].mark, "failed");
  // On neither axis, the LoRA sets split the rows instead of sharing cells.
  const SheetLayout plain = layout_sheet("run 1", sweep);
  EXPECT_EQ(plain.rows, (std::vector<std::string>{"fox", "fox", "fox"}));
  EXPECT_EQ(plain.row_details, (std::vector<std::string>{"no LoRA", "detail 0.25", "detail 1"}));
  EXPECT_EQ(plain.cells.size(), 6u);

  // Two LoRAs: the whole set as labels, or one LoRA's weight with the rest splitting the rows, or one
  // LoRA across and the other down.
  const std::vector<SheetJob> two = {
      {"fox", 1, 128, 128, "done", "", "detail:0.5"}, {"fox", 1, 128, 128, "done", "", "style:0.9;detail:1"},
      {"fox", 1, 128, 128, "done", "", "detail:1"}, {"fox", 1, 128, 128, "done", "", "detail:0.5;style:0.9"}};
  const SheetLayout sets = layout_sheet("run 2", two, SheetAxis::kLora, SheetAxis::kPrompt);
  EXPECT_EQ(sets.columns, (std::vector<std::string>{"detail 0.5", "detail 1", "detail 0.5 + style 0.9", "detail 1 + style 0.9"}));
  EXPECT_EQ(sets.loras, (std::vector<std::string>{"detail", "style"}));
  const SheetLayout one = layout_sheet("run 2", two, {SheetAxis::kLora, "detail"}, SheetAxis::kPrompt);
  EXPECT_EQ(one.columns, (std::vector<std::string>{"detail 0.5", "detail 1"}));
  EXPECT_EQ(one.rows, (std::vector<std::string>{"fox", "fox"}));
  EXPECT_EQ(one.row_details, (std::vector<std::string>{"no other LoRA", "style 0.9"}));
  const SheetLayout both = layout_sheet("run 2", two, {SheetAxis::kLora, "detail"}, {SheetAxis::kLora, "style"});
  EXPECT_EQ(both.columns, (std::vector<std::string>{"detail 0.5", "detail 1"}));
  EXPECT_EQ(both.rows, (std::vector<std::string>{"no style", "style 0.9"}));
  EXPECT_EQ(both.row_details, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(both.cells.size(), 4u);

  // What cannot make an axis, said.
  const std::vector<SheetJob> none = {{"fox", 1, 128, 128, "done", "", ""}};
  EXPECT_EQ(sheet_axis_problem(none, SheetAxis::kLora), "no job has a LoRA");
  EXPECT_EQ(sheet_axis_problem(two, {SheetAxis::kLora, "nope"}), "no job has LoRA \"nope\" (the run's LoRAs: detail, style)");
  EXPECT_NE(sheet_axis_problem(two, {SheetAxis::kLora, "a/b"}).find("has a path separator"), std::string::npos);
  EXPECT_EQ(sheet_axis_problem(two, {SheetAxis::kLora, "style"}), "");
  EXPECT_EQ(sheet_axis_problem(none, SheetAxis::kSeed), "");
  EXPECT_THROW(layout_sheet("run 1", none, SheetAxis::kLora, SheetAxis::kSeed), std::invalid_argument);
  EXPECT_THROW(layout_sheet("run 2", two, SheetAxis::kLora, {SheetAxis::kLora, "detail"}), std::invalid_argument);
  EXPECT_THROW(layout_sheet("run 2", two, {SheetAxis::kLora, "detail"}, {SheetAxis::kLora, "detail"}), std::invalid_argument);
  const std::vector<SheetJob> bad = {{"fox", 1, 128, 128, "done", "", "detail:eleven"}};
  EXPECT_THROW(layout_sheet("run 1", bad), std::runtime_error);
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

// A 25-seed sweep wrapped at 10: three rows for the prompt, each with its own seeds above its cells
// (issue 27, item 6: a 30-seed sweep was one strip).
TEST(ContactSheet, ALongSweepWrapsIntoRowsWithTheirOwnColumnLabels) {
  TempDir dir;
  constexpr int kThumb = 64;
  std::vector<SheetJob> jobs;
  for (uint64_t seed = 1; seed <= 25; ++seed) jobs.push_back({"a fox", seed, 64, 64, "failed", ""});
  const SheetLayout wrapped = wrap_columns(layout_sheet("run 1", jobs), 10);
  EXPECT_EQ(wrapped.rows, (std::vector<std::string>{"a fox", "a fox", "a fox"}));
  ASSERT_EQ(wrapped.row_columns.size(), 3u);
  EXPECT_EQ(wrapped.row_columns[1].front(), "seed 11");
  EXPECT_EQ(wrapped.row_columns[2], (std::vector<std::string>{"seed 21", "seed 22", "seed 23", "seed 24", "seed 25"}));
  EXPECT_EQ(wrapped.cells.size(), 25u);
  for (const auto& c : wrapped.cells) EXPECT_LT(c.column, 10);
  EXPECT_EQ(wrap_columns(layout_sheet("run 1", jobs), 0).columns.size(), 25u) << "0: never wrapped";

  const Sheet sheet = render_sheet(wrapped, kThumb, kDefaultFontPath);
  const auto path = dir.path() / "sheet.png";
  storage::write_png_atomic(path, sheet.rgba.data(), sheet.geometry.width, sheet.geometry.height, {});
  const auto s = storage::read_png(path);
  const SheetGeometry& g = sheet.geometry;
  // By hand: ten 64 px cells and 4 px gutters across; three rows, each under a line of labels.
  TextRenderer label(kDefaultFontPath, SheetGeometry::kLabelPx);
  EXPECT_EQ(s.width, g.grid_x + 10 * (kThumb + 4) - 4 + 8);
  EXPECT_EQ(g.cell_y(1) - g.cell_y(0), kThumb + 4 + label.line_height() + 4);
  EXPECT_EQ(s.height, g.cell_y(2) + kThumb + 8);
  expect_label(s, "seed 1", SheetGeometry::kLabelPx, g.cell_x(0) - 2, g.grid_y - 20, g.cell_x(0) + kThumb + 2, g.grid_y, kSheetBackground);
  expect_label(s, "seed 11", SheetGeometry::kLabelPx, g.cell_x(0) - 4, g.cell_y(1) - 20, g.cell_x(0) + kThumb + 4, g.cell_y(1),
               kSheetBackground);
  expect_label(s, "seed 25", SheetGeometry::kLabelPx, g.cell_x(4) - 4, g.cell_y(2) - 20, g.cell_x(4) + kThumb + 4, g.cell_y(2),
               kSheetBackground);
  // Past the last seed the third row is background, no cell.
  EXPECT_EQ(pixel(s, g.cell_x(7) + 5, g.cell_y(2) + 5)[0], kSheetBackground);
}

// The file and face index fontconfig's own fc-match names for a character, "" when it names none.
std::pair<std::string, int> fc_match(const std::string& hex) {
  FILE* p = popen(("fc-match -f '%{file}|%{index}' ':charset=" + hex + "' 2>/dev/null").c_str(), "r");
  if (!p) return {"", 0};
  char buf[1024];
  const size_t n = fread(buf, 1, sizeof buf, p);
  pclose(p);
  const std::string out(buf, n);
  const auto bar = out.find('|');
  if (bar == std::string::npos) return {"", 0};
  return {out.substr(0, bar), std::atoi(out.c_str() + bar + 1)};
}

// One glyph as FreeType renders it from `font` (glyph index `index` when cp is 0): its coverage.
Reference glyph_reference(const std::string& font, int face_index, char32_t cp, int pixel_size, FT_UInt index = 0) {
  FT_Library lib;
  FT_Face face;
  EXPECT_EQ(FT_Init_FreeType(&lib), 0);
  EXPECT_EQ(FT_New_Face(lib, font.c_str(), face_index, &face), 0) << font;
  FT_Set_Pixel_Sizes(face, 0, pixel_size);
  EXPECT_EQ(cp ? FT_Load_Char(face, cp, FT_LOAD_RENDER) : FT_Load_Glyph(face, index, FT_LOAD_RENDER), 0);
  const FT_Bitmap& bm = face->glyph->bitmap;
  Reference r;
  r.width = int(bm.width), r.height = int(bm.rows);
  r.coverage.assign(size_t(r.width) * r.height, 0);
  for (int y = 0; y < r.height; ++y)
    for (int x = 0; x < r.width; ++x) r.coverage[size_t(y) * r.width + x] = bm.buffer[y * bm.pitch + x];
  FT_Done_Face(face);
  FT_Done_FreeType(lib);
  return r;
}

// The largest coverage difference between the sheet's ink at `at` and a reference; 255 when their
// ink boxes differ in size.
int worst_difference(const storage::PngImage& s, const Box& at, const Reference& ref) {
  const Box want = ink_box(ref);
  if (at.x1 - at.x0 != want.x1 - want.x0 || at.y1 - at.y0 != want.y1 - want.y0) return 255;
  int worst = 0;
  for (int y = 0; y <= at.y1 - at.y0; ++y)
    for (int x = 0; x <= at.x1 - at.x0; ++x)
      worst = std::max(worst, std::abs(sheet_coverage(s, at.x0 + x, at.y0 + y, kSheetBackground) - ref.at(want.x0 + x, want.y0 + y)));
  return worst;
}

// Prompts DejaVu has no glyphs for (issue 27, item 6: they drew as empty boxes): a CJK label equals
// FreeType's rendering of the glyph from the font fontconfig names for it, not DejaVu's .notdef box,
// and an emoji label is drawn in colour.
TEST(ContactSheet, CjkAndEmojiLabelsDrawFromTheFontsThatHaveThem) {
  const auto cjk = fc_match("732b");  // 猫
  if (cjk.first.empty() || cjk.first.find("DejaVu") != std::string::npos) GTEST_SKIP() << "no CJK font (scripts/setup installs fonts-noto-cjk)";
  TempDir dir;
  constexpr int kThumb = 64;
  const std::vector<SheetJob> jobs = {{"\xE7\x8C\xAB", 7, 64, 64, "failed", ""}, {"\xF0\x9F\xA6\x8A", 7, 64, 64, "failed", ""}};  // 猫, 🦊
  const SheetLayout layout = layout_sheet("run 1", jobs);
  const Sheet sheet = render_sheet(layout, kThumb, kDefaultFontPath);
  const auto path = dir.path() / "sheet.png";
  storage::write_png_atomic(path, sheet.rgba.data(), sheet.geometry.width, sheet.geometry.height, {});
  const auto s = storage::read_png(path);
  const SheetGeometry& g = sheet.geometry;

  const Box cat = ink_box(s, 0, g.cell_y(0), g.grid_x - 4, g.cell_y(0) + kThumb, kSheetBackground);
  ASSERT_FALSE(cat.empty()) << "no ink for the CJK label";
  EXPECT_LE(worst_difference(s, cat, glyph_reference(cjk.first, cjk.second, U'\u732B', SheetGeometry::kLabelPx)), 3)
      << "differs from " << cjk.first << "'s glyph";
  EXPECT_EQ(worst_difference(s, cat, glyph_reference(kDefaultFontPath, 0, 0, SheetGeometry::kLabelPx, 0)), 255)
      << "DejaVu's .notdef box";

  const auto emoji = fc_match("1f98a");
  if (emoji.first.empty() || emoji.first.find("DejaVu") != std::string::npos) GTEST_SKIP() << "no emoji font (fonts-noto-color-emoji)";
  int coloured = 0, inked = 0;
  int x0 = 1 << 30, x1 = -1;
  for (int y = g.cell_y(1); y < g.cell_y(1) + kThumb; ++y)
    for (int x = 0; x < g.grid_x - 4; ++x) {
      const uint8_t* p = pixel(s, x, y);
      const int hi = std::max({p[0], p[1], p[2]}), lo = std::min({p[0], p[1], p[2]});
      if (hi - lo > 60) ++coloured;
      if (hi != kSheetBackground || lo != kSheetBackground) ++inked, x0 = std::min(x0, x), x1 = std::max(x1, x);
    }
  EXPECT_GT(coloured, 20) << "the fox emoji is orange, not the text's gray";
  // One glyph at the label's size: about a pixel size wide (the strike scaled down), not a 109 px one.
  EXPECT_GE(x1 - x0 + 1, SheetGeometry::kLabelPx - 4);
  EXPECT_LE(x1 - x0 + 1, SheetGeometry::kLabelPx + 4);
  EXPECT_GT(inked, 40);
}

// Kinsoku (issue 43): the example file's CJK prompt broke with "，" at the start of its second line.
// The layout function itself: no line starts with closing punctuation or ends with an opening
// bracket, every line stays within the width, and no character is lost.
TEST(TextRendererWrap, NoLineStartsWithClosingPunctuation) {
  const auto cjk = fc_match("732b");
  if (cjk.first.empty() || cjk.first.find("DejaVu") != std::string::npos) GTEST_SKIP() << "no CJK font (scripts/setup installs fonts-noto-cjk)";
  TextRenderer label(kDefaultFontPath, SheetGeometry::kLabelPx);
  const std::string cat = "一只坐在窗台上的猫，水彩风格，透明背景";
  const int width = label.measure("一只坐在窗台上的猫");  // nine fit; the "，" after them does not
  const auto lines = label.wrap(cat, width, 5);
  ASSERT_GE(lines.size(), 2u);
  std::string joined;
  for (const auto& l : lines) {
    joined += l;
    EXPECT_LE(label.measure(l), width) << l;
  }
  EXPECT_EQ(joined, cat);
  EXPECT_EQ(lines[0], "一只坐在窗台上的");
  EXPECT_EQ(lines[1].rfind("猫，", 0), 0u) << lines[1];
  for (const std::string closing : {"，", "。", "、", "）", "」", "』", "！", "？"}) {
    for (const auto& l : label.wrap("一只坐在窗台上的猫" + closing + "水彩", width, 5)) {
      EXPECT_NE(l.rfind(closing, 0), 0u) << closing << " starts \"" << l << "\"";
    }
  }
  // An opening bracket does not end a line: it goes down with what it opens.
  const auto open = label.wrap("一只坐在窗台上的「猫」", width, 5);
  ASSERT_GE(open.size(), 2u);
  EXPECT_EQ(open[0], "一只坐在窗台上的");
  EXPECT_EQ(open[1], "「猫」");
  // A line of one character and its punctuation, too narrow for both: the mark hangs rather than
  // start the next line.
  const auto narrow = label.wrap("猫。", label.measure("猫"), 3);
  ASSERT_EQ(narrow.size(), 1u);
  EXPECT_EQ(narrow[0], "猫。");
}

// Emoji in colour (issue 43): ❤️ is U+2764, which DejaVu has in black, asking for its emoji form with
// U+FE0F; 🎮 (U+1F3AE) is an emoji by default. Drawn onto a gray canvas, each has pixels whose R, G
// and B differ in its glyph's box; ❤ followed by U+FE0E (text form) stays DejaVu's gray glyph.
TEST(TextRendererEmoji, EmojiAreDrawnInTheirColours) {
  const auto emoji = fc_match("1f3ae");
  if (emoji.first.empty() || emoji.first.find("DejaVu") != std::string::npos) GTEST_SKIP() << "no emoji font (fonts-noto-color-emoji)";
  TextRenderer label(kDefaultFontPath, SheetGeometry::kLabelPx);
  const auto coloured = [&](const std::string& text) {
    std::vector<uint8_t> rgba(64 * 32 * 4, kSheetBackground);
    Canvas canvas{rgba, 64, 32};
    label.draw(canvas, 4, 20, text, {kSheetText[0], kSheetText[1], kSheetText[2]});
    int n = 0;
    for (size_t i = 0; i < rgba.size(); i += 4) n += std::max({rgba[i], rgba[i + 1], rgba[i + 2]}) - std::min({rgba[i], rgba[i + 1], rgba[i + 2]}) > 40;
    return n;
  };
  EXPECT_GE(coloured("\xE2\x9D\xA4\xEF\xB8\x8F"), 40) << "❤️ is red";
  EXPECT_GE(coloured("\xF0\x9F\x8E\xAE"), 4) << "🎮: a gray pad with four coloured buttons";
  EXPECT_EQ(coloured("\xE2\x9D\xA4\xEF\xB8\x8E"), 0) << "❤︎ asks for the text form";
  EXPECT_EQ(coloured("\xE2\x9D\xA4"), 0) << "a bare ❤ is text by default";
  // The selector draws nothing of its own and takes no room.
  EXPECT_EQ(label.measure("\xE2\x9D\xA4\xEF\xB8\x8E"), label.measure("\xE2\x9D\xA4"));
}

// A filter's sheet (issue 43): the places of the jobs the filter left out stay empty, no "no job".
TEST(ContactSheet, AFilteredLayoutLeavesOutWhatItsFilterLeftOut) {
  const std::vector<SheetJob> starred = {{"fox", 1, 64, 64, "done", "/a.png"}, {"owl", 2, 64, 64, "done", "/b.png"}};
  const SheetLayout all = layout_sheet("run 1", starred);
  EXPECT_EQ(all.cells.size(), 4u);  // two of them "no job"
  const SheetLayout filtered = layout_sheet("run 1, starred only", starred, SheetAxis::kSeed, SheetAxis::kPrompt, true);
  ASSERT_EQ(filtered.cells.size(), 2u);
  for (const auto& c : filtered.cells) EXPECT_TRUE(c.mark.empty()) << c.mark;
  EXPECT_EQ(sheet_filter_word("star"), "starred");
  EXPECT_EQ(sheet_filter_word("any"), "marked");
  EXPECT_THROW(sheet_filter_word("stars"), std::invalid_argument);
  EXPECT_EQ(default_sheet_path("/o", 3, "starred", 2, 4), std::filesystem::path("/o/.rgbaq/sheets/sheet_run3_starred_p2.png"));
  EXPECT_EQ(default_sheet_path("/o", 3, "", 1, 1), std::filesystem::path("/o/.rgbaq/sheets/sheet_run3.png"));
}

}  // namespace
}  // namespace rgbaq::cli
