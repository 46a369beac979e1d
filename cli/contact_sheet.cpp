#include "cli/contact_sheet.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "cli/daemon_client.h"
#include "cli/text_renderer.h"
#include "storage/png_file.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
using common::parse_u64;
namespace {

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


struct AxisValue {
  std::string label;
  uint64_t order = 0, tie = 0;
};

AxisValue value_of(const SheetJob& j, SheetAxis axis, const std::map<std::string, uint64_t>& prompt_order) {
  switch (axis) {
    case SheetAxis::kPrompt: return {j.prompt, prompt_order.at(j.prompt), 0};
    case SheetAxis::kSeed: return {"seed " + std::to_string(j.seed), j.seed, 0};
    case SheetAxis::kSize:
      return {std::to_string(j.width) + "x" + std::to_string(j.height), uint64_t(j.width) * uint64_t(j.height), uint64_t(j.width)};
  }
  return {};
}

// The distinct values of an axis in order, and each label's index.
struct Axis {
  std::vector<AxisValue> values;
  std::map<std::string, int> index;
};

Axis axis_of(const std::vector<SheetJob>& jobs, SheetAxis axis, const std::map<std::string, uint64_t>& prompt_order) {
  std::map<std::string, AxisValue> distinct;
  for (const auto& j : jobs) {
    const AxisValue v = value_of(j, axis, prompt_order);
    distinct.emplace(v.label, v);
  }
  Axis a;
  for (const auto& [label, v] : distinct) a.values.push_back(v);
  std::sort(a.values.begin(), a.values.end(),
            [](const AxisValue& l, const AxisValue& r) { return std::tie(l.order, l.tie, l.label) < std::tie(r.order, r.tie, r.label); });
  for (size_t i = 0; i < a.values.size(); ++i) a.index[a.values[i].label] = static_cast<int>(i);
  return a;
}

std::string mark_of(const std::string& state) {
  if (state == "failed") return "failed";
  if (state == "canceled") return "canceled";
  return "not rendered yet";
}

bool is_failure_mark(const std::string& mark) { return mark == "failed" || mark == "missing" || mark == "unreadable"; }

void fill(Canvas c, int x0, int y0, int w, int h, const uint8_t rgb[3]) {
  for (int y = y0; y < y0 + h; ++y)
    for (int x = x0; x < x0 + w; ++x) {
      uint8_t* d = &c.rgba[(size_t(y) * c.width + x) * 4];
      d[0] = rgb[0], d[1] = rgb[1], d[2] = rgb[2], d[3] = 255;
    }
}

}  // namespace

SheetLayout layout_sheet(const std::string& title, const std::vector<SheetJob>& jobs, SheetAxis x, SheetAxis y) {
  if (x == y) throw UsageError("the sheet's two axes must differ");
  std::map<std::string, uint64_t> prompt_order;
  for (const auto& j : jobs) prompt_order.emplace(j.prompt, prompt_order.size());
  const SheetAxis third = SheetAxis(3 - int(x) - int(y));
  const Axis columns = axis_of(jobs, x, prompt_order), ys = axis_of(jobs, y, prompt_order),
             thirds = axis_of(jobs, third, prompt_order), sizes = axis_of(jobs, SheetAxis::kSize, prompt_order);
  const bool third_varies = thirds.values.size() > 1;
  SheetLayout l;
  l.title = title;
  for (const auto& v : sizes.values) l.sizes.push_back(v.label);
  for (const auto& v : columns.values) l.columns.push_back(v.label);
  // Rows: the y values, each split by the third attribute where it varies (only the pairs some job has).
  std::set<std::pair<int, int>> row_keys;
  for (const auto& j : jobs) {
    row_keys.emplace(ys.index.at(value_of(j, y, prompt_order).label),
                     third_varies ? thirds.index.at(value_of(j, third, prompt_order).label) : 0);
  }
  std::map<std::pair<int, int>, int> row_of;
  for (const auto& key : row_keys) {
    row_of[key] = static_cast<int>(l.rows.size());
    l.rows.push_back(ys.values[size_t(key.first)].label);
    l.row_details.push_back(third_varies ? thirds.values[size_t(key.second)].label : "");
  }
  std::set<std::pair<int, int>> filled;
  for (const auto& j : jobs) {
    SheetCell cell;
    cell.row = row_of.at({ys.index.at(value_of(j, y, prompt_order).label),
                          third_varies ? thirds.index.at(value_of(j, third, prompt_order).label) : 0});
    cell.column = columns.index.at(value_of(j, x, prompt_order).label);
    if (j.state == "done" && !j.image_path.empty()) cell.image_path = j.image_path;
    else cell.mark = mark_of(j.state);
    filled.emplace(cell.row, cell.column);
    l.cells.push_back(std::move(cell));
  }
  for (int r = 0; r < int(l.rows.size()); ++r)
    for (int c = 0; c < int(l.columns.size()); ++c)
      if (!filled.count({r, c})) l.cells.push_back({r, c, "", "no job"});
  return l;
}

Sheet render_sheet(const SheetLayout& l, int thumb, const std::filesystem::path& font) {
  TextRenderer header_font(font, SheetGeometry::kHeaderPx), label_font(font, SheetGeometry::kLabelPx);
  constexpr int kGutter = SheetGeometry::kGutter, kMargin = SheetGeometry::kMargin;
  SheetGeometry g;
  g.thumb = thumb;
  g.row_label_x = kMargin;
  g.row_label_width = std::clamp(thumb * 3 / 2, 120, 320);
  g.header_baseline = kMargin + header_font.ascent();
  const int header_height = header_font.line_height() + 6;
  g.column_label_baseline = kMargin + header_height + label_font.ascent();
  g.grid_x = kMargin + g.row_label_width + kGutter;
  g.grid_y = kMargin + header_height + label_font.line_height() + 4;
  g.width = g.cell_x(int(l.columns.size())) - kGutter + kMargin;
  g.height = g.cell_y(int(l.rows.size())) - kGutter + kMargin;
  Sheet sheet{std::vector<uint8_t>(size_t(g.width) * g.height * 4), g};
  Canvas canvas{sheet.rgba, g.width, g.height};
  const uint8_t background[3] = {kSheetBackground, kSheetBackground, kSheetBackground};
  fill(canvas, 0, 0, g.width, g.height, background);
  const Rgb text{kSheetText[0], kSheetText[1], kSheetText[2]};

  std::string header = l.title + "  ·  ";
  for (size_t i = 0; i < l.sizes.size(); ++i) header += (i ? ", " : "") + l.sizes[i];
  header_font.draw(canvas, kMargin, g.header_baseline, header_font.fit(header, g.width - 2 * kMargin), text);
  for (size_t c = 0; c < l.columns.size(); ++c) {
    const std::string label = label_font.fit(l.columns[c], thumb);
    label_font.draw(canvas, g.cell_x(int(c)) + (thumb - label_font.measure(label)) / 2, g.column_label_baseline, label, text);
  }
  const int line = label_font.line_height();
  for (size_t r = 0; r < l.rows.size(); ++r) {
    const bool detail = !l.row_details[r].empty();
    const int max_lines = std::max(1, thumb / line - (detail ? 1 : 0));
    auto lines = label_font.wrap(l.rows[r], g.row_label_width, max_lines);
    if (detail) lines.push_back(label_font.fit(l.row_details[r], g.row_label_width));
    for (size_t i = 0; i < lines.size(); ++i) {
      label_font.draw(canvas, g.row_label_x, g.cell_y(int(r)) + label_font.ascent() + int(i) * line, lines[i], text);
    }
  }
  for (const auto& cell : l.cells) {
    const int x0 = g.cell_x(cell.column), y0 = g.cell_y(cell.row);
    std::string mark = cell.mark;
    if (!cell.image_path.empty()) {
      try {
        const auto img = storage::read_png(cell.image_path);
        for (int y = 0; y < thumb; ++y)
          for (int x = 0; x < thumb; ++x) {
            uint8_t* d = &sheet.rgba[(size_t(y0 + y) * g.width + x0 + x) * 4];
            d[0] = d[1] = d[2] = checker(x, y);
          }
        draw_thumbnail(img, thumb, sheet.rgba, g.width, x0, y0);
      } catch (const std::exception&) {
        std::error_code ec;
        mark = std::filesystem::exists(cell.image_path, ec) ? "unreadable" : "missing";
      }
    }
    if (mark.empty()) continue;
    fill(canvas, x0, y0, thumb, thumb, is_failure_mark(mark) ? kSheetFailedFill : kSheetPendingFill);
    const std::string label = label_font.fit(mark, thumb - 4);
    label_font.draw(canvas, x0 + (thumb - label_font.measure(label)) / 2, y0 + (thumb + label_font.ascent()) / 2 - 2, label, text);
  }
  return sheet;
}

int sheet_command(const std::vector<std::string>& args, CliContext& ctx) {
  std::vector<std::string> words;
  for (const auto& w : args) words.push_back(w == "-o" ? "--output" : w);
  const Arguments a(words, {"output", "thumb", "x", "y", "font"}, {});
  const std::string usage = "usage: rgbaq sheet RUN [-o FILE.png] [--thumb PX] [--x AXIS] [--y AXIS] [--font FILE.ttf]";
  if (a.positionals().size() != 1) throw UsageError(usage);
  const auto run = parse_u64(a.positionals()[0]);
  if (!run || *run == 0) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
  const int thumb = a.get_int("thumb", 128);
  if (thumb < 16 || thumb > 1024) throw UsageError("--thumb must be 16..1024 px");
  const auto axis = [&](const char* option, SheetAxis fallback) {
    const auto v = a.get(option);
    if (!v) return fallback;
    if (*v == "prompt") return SheetAxis::kPrompt;
    if (*v == "seed") return SheetAxis::kSeed;
    if (*v == "size") return SheetAxis::kSize;
    throw UsageError(std::string("--") + option + " \"" + *v + "\" is not one of prompt, seed, size");
  };
  const SheetAxis x = axis("x", SheetAxis::kSeed), y = axis("y", SheetAxis::kPrompt);
  if (x == y) throw UsageError("--x and --y must name different axes");
  const std::filesystem::path font = a.get("font").value_or(kDefaultFontPath);
  DaemonClient client(ctx.socket);
  const auto r = client.call("export", {{"run", *run}});
  std::vector<SheetJob> jobs;
  for (const auto& j : r["jobs"]) {
    jobs.push_back({j.value("prompt", ""), j.value("seed", uint64_t{0}), j.value("width", 0), j.value("height", 0),
                    j.value("state", ""), j.value("state", "") == "done" ? j.value("output", "") : ""});
  }
  if (jobs.empty()) throw std::runtime_error("run " + a.positionals()[0] + " has no jobs");
  std::string title = "run " + a.positionals()[0];
  if (const std::string name = r["run"].value("name", ""); !name.empty()) title += " (" + name + ")";
  const SheetLayout layout = layout_sheet(title, jobs, x, y);
  const Sheet sheet = render_sheet(layout, thumb, font);
  const std::string out =
      a.get("output").value_or((std::filesystem::path(r["run"].value("out_dir", ".")) / ("sheet_run" + a.positionals()[0] + ".png")).string());
  nlohmann::json legend = {{"run", *run}, {"rows", layout.rows}, {"row_details", layout.row_details}, {"columns", layout.columns},
                           {"thumb", thumb}};
  if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty()) std::filesystem::create_directories(dir);
  storage::write_png_atomic(out, sheet.rgba.data(), sheet.geometry.width, sheet.geometry.height, {{"rgbaq-sheet", legend.dump()}});
  ctx.out << out << " (" << layout.rows.size() << (layout.rows.size() == 1 ? " row x " : " rows x ") << layout.columns.size()
          << (layout.columns.size() == 1 ? " column)\n" : " columns)\n");
  return 0;
}

}  // namespace rgbaq::cli
