// Contact sheets over a LoRA's weight, through the real binaries: make_tiny_model --lora writes the
// test LoRAs, a real rgbaqd renders a weight sweep on the tiny model, and `rgbaq sheet --x lora`
// writes a PNG that is read back: the cell layout worked by hand, the labels' pixels against
// FreeType's rendering, and each cell the composite of the image its job wrote (found through
// `export`). A run that varies two LoRAs is laid out with `lora:NAME`; a run without LoRAs, a LoRA no
// job has, and overlapping axes are refused with exit 2 and the reason.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "cli/contact_sheet.h"
#include "storage/png_file.h"
#include "tests/cli/sheet_label_check.h"
#include "tests/daemon/daemon_test_helpers.h"

namespace rgbaq {
namespace {

using cli::SheetGeometry;

constexpr int kThumb = 128;                                 // the images' own size: thumbnails at 1:1
constexpr int kGridX = 8 + kThumb * 3 / 2 + 4;              // margin, the 192 px row-label column, gutter
int cell_x(int column) { return kGridX + column * (kThumb + 4); }

std::vector<json> exported_jobs(const DaemonProcess& d, int run) {
  const auto r = rgbaq(d, {"export", std::to_string(run), "--format", "jsonl"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json> jobs;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) jobs.push_back(json::parse(line));
  return jobs;
}

// The cell at (x0, y0) shows `image` (kThumb x kThumb) over an 8 px checkerboard of 153 and 204,
// premultiplied: c * a + bg * (1 - a), rounded; one level of rounding allowed.
void expect_cell_shows(const storage::PngImage& sheet, int x0, int y0, const storage::PngImage& image, const std::string& what) {
  ASSERT_EQ(image.width, kThumb);
  ASSERT_EQ(image.channels, 4);
  int worst = 0;
  for (int y = 0; y < kThumb; ++y)
    for (int x = 0; x < kThumb; ++x) {
      const uint8_t* p = &image.rgba[(size_t(y) * kThumb + x) * 4];
      const double a = p[3] / 255.0, bg = ((x / 8 + y / 8) % 2) ? 204 : 153;
      const uint8_t* s = cli::pixel(sheet, x0 + x, y0 + y);
      for (int c = 0; c < 3; ++c) worst = std::max(worst, std::abs(int(s[c]) - int(std::lround(p[c] * a + bg * (1 - a)))));
    }
  EXPECT_LE(worst, 1) << what;
}

TEST(ContactSheetLora, AWeightSweepRenderedByTheDaemonIsLabelledAndPlaced) {
  TempDir dir;
  const fs::path loras = dir.path() / "loras", out = dir.path() / "out";
  const auto made = run_process({RGBAQ_MAKE_TINY_MODEL_PATH, "--lora", loras.string()});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  DaemonProcess d(kRgbaqd, model().dir(), dir.path(), {{"--lora-dir", loras.string()}});
  // Weights out of order, and one row with no LoRA: the columns sort them.
  write_file(dir.path() / "sweep.csv", "prompt,seed,name,lora\na fox,1-2,d1,detail:1\na fox,1-2,plain,\na fox,1-2,d025,detail:0.25\n");
  const auto r = rgbaq(d, {"submit", (dir.path() / "sweep.csv").string(), "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const fs::path sheet_path = dir.path() / "sheet1.png";
  const auto sheet = rgbaq(d, {"sheet", "1", "--x", "lora", "--y", "seed", "--thumb", std::to_string(kThumb), "-o", sheet_path.string()});
  ASSERT_EQ(sheet.exit_code, 0) << sheet.err;
  EXPECT_EQ(sheet.out, sheet_path.string() + " (2 rows x 3 columns)\n");
  const auto s = storage::read_png(sheet_path);
  const json legend = json::parse(s.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend["columns"], json({"no LoRA", "detail 0.25", "detail 1"}));
  EXPECT_EQ(legend["rows"], json({"seed 1", "seed 2"}));
  EXPECT_EQ(legend["loras"], json({"detail"}));

  // Three 128 px columns with 4 px gutters right of the labels, two rows under the header and labels.
  EXPECT_EQ(s.width, cell_x(3) - 4 + 8);
  const int grid_y = s.height - 8 - 2 * (kThumb + 4) + 4;
  const auto cell_y = [&](int row) { return grid_y + row * (kThumb + 4); };
  EXPECT_GT(grid_y, 8 + SheetGeometry::kHeaderPx + SheetGeometry::kLabelPx);

  const std::vector<std::string> columns = {"no LoRA", "detail 0.25", "detail 1"};
  for (int c = 0; c < 3; ++c) {
    const cli::Box b = cli::expect_label(s, columns[size_t(c)], SheetGeometry::kLabelPx, cell_x(c), grid_y - 20, cell_x(c) + kThumb,
                                         grid_y, cli::kSheetBackground);
    EXPECT_NEAR((b.x0 + b.x1) / 2.0, cell_x(c) + kThumb / 2.0, 2.0) << columns[size_t(c)] << " centred over its column";
  }
  for (int row = 0; row < 2; ++row) {
    cli::expect_label(s, "seed " + std::to_string(row + 1), SheetGeometry::kLabelPx, 0, cell_y(row), kGridX - 4,
                      cell_y(row) + kThumb, cli::kSheetBackground);
  }
  cli::expect_label(s, "run 1 (sweep)  \xC2\xB7  128x128  \xC2\xB7  LoRA detail", SheetGeometry::kHeaderPx, 0, 0, s.width, grid_y - 20,
                    cli::kSheetBackground);

  // Each cell shows the image its job wrote: the column by the job's LoRA set, the row by its seed.
  const std::map<std::string, int> column_of = {{"", 0}, {"detail:0.25", 1}, {"detail:1", 2}};
  const auto jobs = exported_jobs(d, 1);
  ASSERT_EQ(jobs.size(), 6u);
  std::map<std::string, std::vector<uint8_t>> pixels_of;
  for (const auto& j : jobs) {
    ASSERT_EQ(j["state"], "done") << j.dump();
    const auto image = storage::read_png(j["output"].get<std::string>());
    const int column = column_of.at(j["lora"].get<std::string>()), row = j["seed"].get<int>() - 1;
    expect_cell_shows(s, cell_x(column), cell_y(row), image, j.dump());
    pixels_of[j["lora"].get<std::string>() + "/" + std::to_string(row)] = image.rgba;
  }
  EXPECT_NE(pixels_of.at("detail:1/0"), pixels_of.at("/0")) << "the LoRA changes the image, so the cells tell the columns apart";
  EXPECT_NE(pixels_of.at("detail:1/0"), pixels_of.at("detail:0.25/0"));

  // Two LoRAs in one run: lora:detail sweeps one weight, the other LoRA splits the rows. The images
  // finished above are reused (the same jobs), two are new.
  write_file(dir.path() / "two.csv", "prompt,seed,name,lora\na fox,1,d025,detail:0.25\na fox,1,d1,detail:1\n"
                                     "a fox,1,sd025,style-diffusers:0.5;detail:0.25\na fox,1,sd1,style-diffusers:0.5;detail:1\n");
  const auto r2 = rgbaq(d, {"submit", (dir.path() / "two.csv").string(), "--size", "128", "--out", out.string(), "--wait"});
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  const fs::path sheet2 = dir.path() / "sheet2.png";
  const auto two = rgbaq(d, {"sheet", "2", "--x", "lora:detail", "--thumb", std::to_string(kThumb), "-o", sheet2.string()});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto s2 = storage::read_png(sheet2);
  const json legend2 = json::parse(s2.texts.at("rgbaq-sheet"));
  EXPECT_EQ(legend2["columns"], json({"detail 0.25", "detail 1"}));
  EXPECT_EQ(legend2["rows"], json({"a fox", "a fox"}));
  EXPECT_EQ(legend2["row_details"], json({"no other LoRA", "style-diffusers 0.5"}));
  EXPECT_EQ(legend2["loras"], json({"detail", "style-diffusers"}));
  const int grid_y2 = s2.height - 8 - 2 * (kThumb + 4) + 4;
  cli::expect_label(s2, "run 2 (two)  \xC2\xB7  128x128  \xC2\xB7  LoRAs detail, style-diffusers", SheetGeometry::kHeaderPx, 0, 0,
                    s2.width, grid_y2 - 20, cli::kSheetBackground);
  for (const auto& j : exported_jobs(d, 2)) {
    const std::string set = j["lora"];
    const int column = set.find("detail:1") != std::string::npos ? 1 : 0, row = set.find("style") != std::string::npos ? 1 : 0;
    expect_cell_shows(s2, cell_x(column), grid_y2 + row * (kThumb + 4), storage::read_png(j["output"].get<std::string>()), set);
  }
  // The whole set as the axis: each set a column, fewer LoRAs first.
  const auto sets = rgbaq(d, {"sheet", "2", "--x", "lora", "-o", (dir.path() / "sets.png").string()});
  ASSERT_EQ(sets.exit_code, 0) << sets.err;
  EXPECT_EQ(json::parse(storage::read_png(dir.path() / "sets.png").texts.at("rgbaq-sheet"))["columns"],
            json({"detail 0.25", "detail 1", "detail 0.25 + style-diffusers 0.5", "detail 1 + style-diffusers 0.5"}));

  // Refused, with exit 2 and the reason: a run without LoRAs, a LoRA no job of the run has, overlaps.
  const auto r3 = rgbaq(d, {"submit", "-", "--size", "128", "--out", out.string()}, "prompt,seed,name\nan owl,1,owl\n");
  ASSERT_EQ(r3.exit_code, 0) << r3.err;
  const auto no_lora = rgbaq(d, {"sheet", "3", "--x", "lora", "-o", (dir.path() / "no.png").string()});
  EXPECT_EQ(no_lora.exit_code, 2);
  EXPECT_NE(no_lora.err.find("--x lora: run 3: no job has a LoRA"), std::string::npos) << no_lora.err;
  EXPECT_FALSE(fs::exists(dir.path() / "no.png"));
  const auto absent = rgbaq(d, {"sheet", "1", "--y", "lora:style-diffusers"});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.err.find("--y lora:style-diffusers: run 1: no job has LoRA \"style-diffusers\" (the run's LoRAs: detail)"),
            std::string::npos) << absent.err;
  const auto overlap = rgbaq(d, {"sheet", "2", "--x", "lora", "--y", "lora:detail"});
  EXPECT_EQ(overlap.exit_code, 2);
  EXPECT_NE(overlap.err.find("--x and --y must name different axes"), std::string::npos) << overlap.err;
  const auto bad = rgbaq(d, {"sheet", "2", "--x", "loras"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--x \"loras\" is not one of prompt, seed, size, lora, lora:NAME"), std::string::npos) << bad.err;
  const auto help = run_process({kRgbaq, "sheet", "--help"});
  EXPECT_NE(help.out.find("lora:NAME  the weight of LoRA NAME"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace rgbaq
