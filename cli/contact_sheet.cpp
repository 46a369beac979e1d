#include "cli/contact_sheet.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "cli/daemon_client.h"
#include "storage/png_file.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
using common::parse_u64;
namespace {

constexpr int kGutter = 4;
constexpr int kCheck = 8;  // checkerboard square, px

uint8_t checker(int x, int y) { return ((x / kCheck + y / kCheck) % 2) ? 204 : 153; }

// Area-average downscale of `img` to fit a thumb x thumb box (never upscaled past 1:1), premultiplied
// by alpha, then composited over the checkerboard into the cell at (x0, y0).
void draw_thumbnail(const storage::PngImage& img, int thumb, std::vector<uint8_t>& sheet, int sheet_w, int x0, int y0) {
  const double scale = std::max({1.0, double(img.width) / thumb, double(img.height) / thumb});
  const int w = std::max(1, int(img.width / scale)), h = std::max(1, int(img.height / scale));
  const int ox = x0 + (thumb - w) / 2, oy = y0 + (thumb - h) / 2;
  for (int ty = 0; ty < h; ++ty) {
    for (int tx = 0; tx < w; ++tx) {
      const int sx0 = int(tx * scale), sx1 = std::max(sx0 + 1, int((tx + 1) * scale));
      const int sy0 = int(ty * scale), sy1 = std::max(sy0 + 1, int((ty + 1) * scale));
      double r = 0, g = 0, b = 0, a = 0;
      int n = 0;
      for (int sy = sy0; sy < std::min(sy1, img.height); ++sy) {
        for (int sx = sx0; sx < std::min(sx1, img.width); ++sx) {
          const uint8_t* p = &img.rgba[(size_t(sy) * img.width + sx) * 4];
          const double alpha = p[3] / 255.0;
          r += p[0] * alpha, g += p[1] * alpha, b += p[2] * alpha, a += alpha;
          ++n;
        }
      }
      if (n == 0) continue;
      r /= n, g /= n, b /= n, a /= n;
      const int x = ox + tx, y = oy + ty;
      uint8_t* d = &sheet[(size_t(y) * sheet_w + x) * 4];
      const double bg = checker(x - x0, y - y0);
      d[0] = uint8_t(std::clamp(r + bg * (1 - a), 0.0, 255.0) + 0.5);
      d[1] = uint8_t(std::clamp(g + bg * (1 - a), 0.0, 255.0) + 0.5);
      d[2] = uint8_t(std::clamp(b + bg * (1 - a), 0.0, 255.0) + 0.5);
      d[3] = 255;
    }
  }
}

}  // namespace

SheetLayout layout_sheet(const std::vector<std::tuple<std::string, uint64_t, std::string>>& jobs) {
  SheetLayout l;
  std::map<std::string, int> row_of;
  for (const auto& [prompt, seed, path] : jobs) {
    if (row_of.emplace(prompt, static_cast<int>(l.rows.size())).second) l.rows.push_back(prompt);
    l.columns.push_back(seed);
  }
  std::sort(l.columns.begin(), l.columns.end());
  l.columns.erase(std::unique(l.columns.begin(), l.columns.end()), l.columns.end());
  for (const auto& [prompt, seed, path] : jobs) {
    const int column = static_cast<int>(std::lower_bound(l.columns.begin(), l.columns.end(), seed) - l.columns.begin());
    l.cells.push_back({row_of[prompt], column, path});
  }
  return l;
}

std::vector<uint8_t> render_sheet(const SheetLayout& l, int thumb, int& width, int& height) {
  width = kGutter + int(l.columns.size()) * (thumb + kGutter);
  height = kGutter + int(l.rows.size()) * (thumb + kGutter);
  std::vector<uint8_t> sheet(size_t(width) * height * 4, 0);
  for (size_t i = 0; i < sheet.size(); i += 4) sheet[i] = sheet[i + 1] = sheet[i + 2] = 48, sheet[i + 3] = 255;
  for (size_t r = 0; r < l.rows.size(); ++r) {
    for (size_t c = 0; c < l.columns.size(); ++c) {
      const int x0 = kGutter + int(c) * (thumb + kGutter), y0 = kGutter + int(r) * (thumb + kGutter);
      for (int y = 0; y < thumb; ++y)
        for (int x = 0; x < thumb; ++x) {
          uint8_t* d = &sheet[(size_t(y0 + y) * width + x0 + x) * 4];
          d[0] = d[1] = d[2] = checker(x, y);
        }
    }
  }
  for (const auto& cell : l.cells) {
    if (cell.image_path.empty()) continue;
    try {
      const auto img = storage::read_png(cell.image_path);
      draw_thumbnail(img, thumb, sheet, width, kGutter + cell.column * (thumb + kGutter), kGutter + cell.row * (thumb + kGutter));
    } catch (const std::exception&) {
      // A missing or damaged image leaves its cell empty; the sheet is still useful.
    }
  }
  return sheet;
}

int sheet_command(const std::vector<std::string>& args, CliContext& ctx) {
  std::vector<std::string> words;
  for (const auto& w : args) words.push_back(w == "-o" ? "--output" : w);
  const Arguments a(words, {"output", "thumb"}, {});
  if (a.positionals().size() != 1) throw UsageError("usage: rgbaq sheet RUN [-o FILE.png] [--thumb PX]");
  const auto run = parse_u64(a.positionals()[0]);
  if (!run || *run == 0) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
  const int thumb = a.get_int("thumb", 128);
  if (thumb < 16 || thumb > 1024) throw UsageError("--thumb must be 16..1024 px");
  DaemonClient client(ctx.socket);
  const auto r = client.call("export", {{"run", *run}});
  std::vector<std::tuple<std::string, uint64_t, std::string>> jobs;
  for (const auto& j : r["jobs"]) {
    jobs.emplace_back(j.value("prompt", ""), j.value("seed", uint64_t{0}), j.value("state", "") == "done" ? j.value("output", "") : "");
  }
  if (jobs.empty()) throw std::runtime_error("run " + a.positionals()[0] + " has no jobs");
  const SheetLayout layout = layout_sheet(jobs);
  int w = 0, h = 0;
  const auto pixels = render_sheet(layout, thumb, w, h);
  const std::string out =
      a.get("output").value_or((std::filesystem::path(r["run"].value("out_dir", ".")) / ("sheet_run" + a.positionals()[0] + ".png")).string());
  nlohmann::json legend = {{"run", *run}, {"rows", layout.rows}, {"columns", layout.columns}, {"thumb", thumb}};
  if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty()) std::filesystem::create_directories(dir);
  storage::write_png_atomic(out, pixels.data(), w, h, {{"rgbaq-sheet", legend.dump()}});
  ctx.out << out << " (" << layout.rows.size() << " prompts x " << layout.columns.size() << " seeds)\n";
  return 0;
}

}  // namespace rgbaq::cli
