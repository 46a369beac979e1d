#include "cli/contact_sheet.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "common/arguments.h"
#include "common/printable_text.h"
#include "cli/daemon_client.h"
#include "cli/qa_command.h"
#include "cli/run_export.h"
#include "cli/text_renderer.h"
#include "jobs/lora_list.h"
#include "jobs/prompt_template.h"
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


// What the sheet can lay out along an axis or split rows by: the first three as SheetAxis names them;
// a job's whole LoRA set; one named LoRA's weight; the set without the LoRAs swept on an axis; a
// template variable's value; the template (a plain prompt's own text); the choices not on an axis.
enum class Attribute { kPrompt, kSeed, kSize, kLoraSet, kLoraWeight, kLoraRest, kVariable, kTemplate, kChoiceRest };

struct Dimension {
  Attribute attribute;
  std::vector<std::string> loras;  // kLoraWeight: the one swept; kLoraRest: those left out
  std::vector<std::string> variables = {};  // kVariable: the one on the axis; kChoiceRest: those left out
};

// A job's choices in their template's order (jobs::sort_choices).
std::vector<std::pair<std::string, std::string>> ordered_choices(const std::map<std::string, std::string>& choices) {
  std::vector<std::pair<std::string, std::string>> out(choices.begin(), choices.end());
  jobs::sort_choices(out);
  return out;
}

std::string choice_label(const std::string& value) { return value.empty() ? "(empty)" : value; }

// A job's LoRAs as (the name's rank in first use order, weight), by rank.
using LoraKey = std::vector<std::pair<int, float>>;

struct AxisValue {
  std::string label;
  uint64_t order = 0, tie = 0;
  LoraKey loras;  // LoRA attributes order by count (in `order`), then by these
};

std::string weight_text(float w) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, w);
  return std::string(buf, ec == std::errc() ? end : buf);
}

// What the layout needs to know of the run's jobs, gathered once.
struct RunIndex {
  std::map<std::string, uint64_t> prompt_order;
  std::vector<std::string> lora_names;  // first use order
  std::map<std::string, int> lora_rank;
  std::vector<LoraKey> job_loras;       // parallel to the jobs

  explicit RunIndex(const std::vector<SheetJob>& jobs) {
    for (const auto& j : jobs) {
      prompt_order.emplace(j.prompt, prompt_order.size());
      std::string error;
      const auto items = jobs::parse_lora_list(j.lora, error);
      if (!items) throw std::runtime_error("a job's LoRA set \"" + j.lora + "\" does not parse: " + error);
      LoraKey key;
      for (const auto& item : *items) {
        if (lora_rank.emplace(item.name, int(lora_names.size())).second) lora_names.push_back(item.name);
        key.emplace_back(lora_rank.at(item.name), item.weight);
      }
      std::sort(key.begin(), key.end());
      job_loras.push_back(std::move(key));
    }
  }

  AxisValue lora_value(LoraKey key, const std::string& none) const {
    AxisValue v{"", key.size(), 0, key};
    for (const auto& [rank, weight] : key) {
      v.label += (v.label.empty() ? "" : " + ") + lora_names[size_t(rank)] + " " + weight_text(weight);
    }
    if (key.empty()) v.label = none;
    return v;
  }

  AxisValue value_of(const std::vector<SheetJob>& jobs, size_t i, const Dimension& d) const {
    const SheetJob& j = jobs[i];
    const auto rank_of = [&](const std::string& name) {
      const auto it = lora_rank.find(name);
      return it == lora_rank.end() ? -1 : it->second;
    };
    switch (d.attribute) {
      case Attribute::kPrompt: return {j.prompt, prompt_order.at(j.prompt), 0, {}};
      case Attribute::kSeed: return {"seed " + std::to_string(j.seed), j.seed, 0, {}};
      case Attribute::kSize:
        return {std::to_string(j.width) + "x" + std::to_string(j.height), uint64_t(j.width) * uint64_t(j.height), uint64_t(j.width), {}};
      case Attribute::kLoraSet: return lora_value(job_loras[i], "no LoRA");
      case Attribute::kLoraWeight: {
        const int swept = rank_of(d.loras.at(0));
        LoraKey key;
        for (const auto& item : job_loras[i]) if (item.first == swept) key.push_back(item);
        return lora_value(key, "no " + d.loras.at(0));
      }
      case Attribute::kLoraRest: {
        LoraKey key;
        for (const auto& item : job_loras[i]) {
          if (std::none_of(d.loras.begin(), d.loras.end(), [&](const std::string& n) { return rank_of(n) == item.first; }))
            key.push_back(item);
        }
        return lora_value(key, "no other LoRA");
      }
      // Ordered by first appearance: axis_of keeps each label's first job, whose index is its order.
      case Attribute::kVariable: {
        const auto it = j.choices.find(d.variables.at(0));
        return {it == j.choices.end() ? "(none)" : choice_label(it->second), i, 0, {}};
      }
      case Attribute::kTemplate: return {j.template_text.empty() ? j.prompt : j.template_text, i, 0, {}};
      case Attribute::kChoiceRest: {
        std::string label;
        for (const auto& [name, value] : ordered_choices(j.choices)) {
          if (std::find(d.variables.begin(), d.variables.end(), name) != d.variables.end()) continue;
          label += (label.empty() ? "" : ", ") + name + "=" + value;
        }
        return {label, i, 0, {}};
      }
    }
    return {};
  }
};

// The distinct values of a dimension in order, and each label's index.
struct Axis {
  std::vector<AxisValue> values;
  std::map<std::string, int> index;
};

Axis axis_of(const std::vector<SheetJob>& jobs, const Dimension& d, const RunIndex& run) {
  std::map<std::string, AxisValue> distinct;
  for (size_t i = 0; i < jobs.size(); ++i) {
    AxisValue v = run.value_of(jobs, i, d);
    distinct.emplace(v.label, std::move(v));
  }
  Axis a;
  for (const auto& [label, v] : distinct) a.values.push_back(v);
  std::sort(a.values.begin(), a.values.end(), [](const AxisValue& l, const AxisValue& r) {
    return std::tie(l.order, l.tie, l.loras, l.label) < std::tie(r.order, r.tie, r.loras, r.label);
  });
  for (size_t i = 0; i < a.values.size(); ++i) a.index[a.values[i].label] = static_cast<int>(i);
  return a;
}

Dimension dimension_of(const SheetAxisChoice& c) {
  switch (c.axis) {
    case SheetAxis::kPrompt: return {Attribute::kPrompt, {}};
    case SheetAxis::kSeed: return {Attribute::kSeed, {}};
    case SheetAxis::kSize: return {Attribute::kSize, {}};
    case SheetAxis::kLora: return c.lora.empty() ? Dimension{Attribute::kLoraSet, {}} : Dimension{Attribute::kLoraWeight, {c.lora}};
    case SheetAxis::kVariable: return {Attribute::kVariable, {}, {c.variable}};
  }
  return {};
}

// The same attribute on both axes, or the whole LoRA set beside a part of it. Two LoRAs' weights may
// make the two axes.
bool axes_overlap(const SheetAxisChoice& x, const SheetAxisChoice& y) {
  if (x.axis == SheetAxis::kVariable && y.axis == SheetAxis::kVariable) return x.variable == y.variable;
  return x.axis == y.axis && (x.axis != SheetAxis::kLora || x.lora.empty() || y.lora.empty() || x.lora == y.lora);
}

// The attributes on neither axis: each splits the rows where it varies.
std::vector<Dimension> other_dimensions(const SheetAxisChoice& x, const SheetAxisChoice& y) {
  std::vector<Dimension> out;
  // A template variable on an axis: the prompt is its template and its choices, the one on the axis
  // taken out (else every row would be one prompt).
  std::vector<std::string> variables;
  for (const auto* c : {&x, &y})
    if (c->axis == SheetAxis::kVariable) variables.push_back(c->variable);
  if (!variables.empty() && x.axis != SheetAxis::kPrompt && y.axis != SheetAxis::kPrompt) {
    out.push_back({Attribute::kTemplate, {}});
    out.push_back({Attribute::kChoiceRest, {}, variables});
  }
  for (const SheetAxis a : {SheetAxis::kPrompt, SheetAxis::kSeed, SheetAxis::kSize})
    if (x.axis != a && y.axis != a && !(a == SheetAxis::kPrompt && !variables.empty())) out.push_back(dimension_of(a));
  std::vector<std::string> swept;
  for (const auto* c : {&x, &y})
    if (c->axis == SheetAxis::kLora) swept.push_back(c->lora);
  const bool whole_set_swept = std::any_of(swept.begin(), swept.end(), [](const std::string& n) { return n.empty(); });
  if (swept.empty()) out.push_back({Attribute::kLoraSet, {}});
  else if (!whole_set_swept) out.push_back({Attribute::kLoraRest, swept});
  return out;
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

std::string sheet_axis_problem(const std::vector<SheetJob>& jobs, const SheetAxisChoice& axis) {
  if (axis.axis == SheetAxis::kVariable) {
    std::set<std::string> names;
    for (const auto& j : jobs)
      for (const auto& [name, value] : j.choices) names.insert(name);
    if (names.count(axis.variable)) return "";
    if (names.empty()) return "its jobs have no template variables (their prompts are no templates)";
    std::map<std::string, std::string> listed;
    for (const auto& n : names) listed.emplace(n, "");
    std::string all;
    for (const auto& [n, v] : ordered_choices(listed)) all += (all.empty() ? "" : ", ") + n;
    return "no job has the template variable \"" + axis.variable + "\" (the run's variables: " + all + ")";
  }
  if (axis.axis != SheetAxis::kLora) return "";
  if (!axis.lora.empty())
    if (std::string why = jobs::lora_name_problem(axis.lora); !why.empty()) return why;
  const RunIndex run(jobs);
  if (run.lora_names.empty()) return "no job has a LoRA";
  if (axis.lora.empty() || run.lora_rank.count(axis.lora)) return "";
  std::string names;
  for (const auto& n : run.lora_names) names += (names.empty() ? "" : ", ") + n;
  return "no job has LoRA \"" + axis.lora + "\" (the run's LoRAs: " + names + ")";
}

SheetLayout layout_sheet(const std::string& title, const std::vector<SheetJob>& jobs, const SheetAxisChoice& x,
                         const SheetAxisChoice& y, bool filtered) {
  if (axes_overlap(x, y)) {
    throw std::invalid_argument("the sheet's two axes must differ (two LoRA axes must each name one LoRA: lora:NAME)");
  }
  for (const auto* axis : {&x, &y})
    if (std::string why = sheet_axis_problem(jobs, *axis); !why.empty()) {
      throw std::invalid_argument((axis->axis == SheetAxis::kVariable ? "a template variable axis: " : "a LoRA axis: ") + why);
    }
  const RunIndex run(jobs);
  const Dimension x_dim = dimension_of(x), y_dim = dimension_of(y);
  const Axis columns = axis_of(jobs, x_dim, run), ys = axis_of(jobs, y_dim, run),
             sizes = axis_of(jobs, {Attribute::kSize, {}}, run);
  // Rows: the y values, each split by the attributes on neither axis that vary (only the combinations
  // some job has).
  std::vector<std::pair<Dimension, Axis>> splits;
  for (auto& d : other_dimensions(x, y)) {
    Axis a = axis_of(jobs, d, run);
    if (a.values.size() > 1) splits.emplace_back(std::move(d), std::move(a));
  }
  const auto row_key = [&](size_t i) {
    std::vector<int> key{ys.index.at(run.value_of(jobs, i, y_dim).label)};
    for (const auto& [d, a] : splits) key.push_back(a.index.at(run.value_of(jobs, i, d).label));
    return key;
  };
  SheetLayout l;
  l.title = title;
  l.loras = run.lora_names;
  for (const auto& v : sizes.values) l.sizes.push_back(v.label);
  for (const auto& v : columns.values) l.columns.push_back(v.label);
  std::set<std::vector<int>> row_keys;
  for (size_t i = 0; i < jobs.size(); ++i) row_keys.insert(row_key(i));
  std::map<std::vector<int>, int> row_of;
  for (const auto& key : row_keys) {
    row_of[key] = static_cast<int>(l.rows.size());
    l.rows.push_back(ys.values[size_t(key[0])].label);
    std::string detail;
    for (size_t s = 0; s < splits.size(); ++s) detail += (s ? ", " : "") + splits[s].second.values[size_t(key[s + 1])].label;
    l.row_details.push_back(detail);
  }
  std::set<std::pair<int, int>> filled;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const SheetJob& j = jobs[i];
    SheetCell cell;
    cell.row = row_of.at(row_key(i));
    cell.column = columns.index.at(run.value_of(jobs, i, x_dim).label);
    if (j.state == "done" && !j.image_path.empty()) cell.image_path = j.image_path;
    else cell.mark = mark_of(j.state);
    cell.job = j.id;
    filled.emplace(cell.row, cell.column);
    l.cells.push_back(std::move(cell));
  }
  if (filtered) return l;  // a filter's sheet: the places of the jobs it left out stay empty
  for (int r = 0; r < int(l.rows.size()); ++r)
    for (int c = 0; c < int(l.columns.size()); ++c)
      if (!filled.count({r, c})) l.cells.push_back({r, c, "", "no job"});
  return l;
}

std::string sheet_filter_word(const std::string& marked) {
  if (marked == "star") return "starred";
  if (marked == "reject") return "rejected";
  if (marked == "none") return "unmarked";
  if (marked == "any") return "marked";
  throw std::invalid_argument("\"" + marked + "\" is not one of star, reject, none, any");
}

std::filesystem::path default_sheet_path(const std::filesystem::path& out_dir, uint64_t run, const std::string& filter_word,
                                         int page, int pages) {
  std::string name = "sheet_run" + std::to_string(run);
  if (!filter_word.empty()) name += "_" + filter_word;
  if (pages > 1) name += "_p" + std::to_string(page);
  return out_dir / ".rgbaq" / "sheets" / (name + ".png");
}

SheetLayout wrap_columns(const SheetLayout& l, int columns) {
  const int total = int(l.columns.size());
  if (columns <= 0 || total <= columns) return l;
  const int bands = (total + columns - 1) / columns;
  SheetLayout out = l;
  out.rows.clear();
  out.row_details.clear();
  out.cells.clear();
  out.columns.assign(l.columns.begin(), l.columns.begin() + columns);
  for (size_t r = 0; r < l.rows.size(); ++r) {
    for (int b = 0; b < bands; ++b) {
      out.rows.push_back(l.rows[r]);
      out.row_details.push_back(l.row_details[r]);
      out.row_columns.emplace_back(l.columns.begin() + b * columns, l.columns.begin() + std::min(total, (b + 1) * columns));
    }
  }
  for (const SheetCell& c : l.cells) {
    out.cells.push_back({c.row * bands + c.column / columns, c.column % columns, c.image_path, c.mark, c.job});
  }
  return out;
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
  if (!l.row_columns.empty()) g.row_labels_height = label_font.line_height() + 4;
  const int row_step = thumb + kGutter + g.row_labels_height;
  const int64_t width = g.grid_x + int64_t(l.columns.size()) * (thumb + kGutter) - kGutter + kMargin;
  const int64_t height = g.grid_y + int64_t(l.rows.size()) * row_step - kGutter - g.row_labels_height + kMargin;
  if (width * height > int64_t(kMaxSheetPixels) || width > kMaxSheetSide || height > kMaxSheetSide) {
    const int64_t fit_height = std::min<int64_t>(kMaxSheetSide, int64_t(kMaxSheetPixels) / width);
    const int64_t rows = width > kMaxSheetSide ? 0
                                               : std::max<int64_t>(0, (fit_height - g.grid_y - kMargin + kGutter + g.row_labels_height) / row_step);
    throw SheetTooLarge(std::to_string(l.rows.size()) + (l.rows.size() == 1 ? " row x " : " rows x ") +
                            std::to_string(l.columns.size()) + " columns at " + std::to_string(thumb) + " px would be a " +
                            std::to_string(width) + "x" + std::to_string(height) + " px sheet (" +
                            std::to_string(width * height * 4 >> 20) + " MiB), over the " + std::to_string(kMaxSheetPixels >> 20) +
                            " Mi pixels and " + std::to_string(kMaxSheetSide) + " px a side a sheet may have",
                        int(std::min<int64_t>(rows, l.rows.size())));
  }
  g.width = int(width);
  g.height = int(height);
  Sheet sheet{std::vector<uint8_t>(size_t(g.width) * g.height * 4), g};
  Canvas canvas{sheet.rgba, g.width, g.height};
  const uint8_t background[3] = {kSheetBackground, kSheetBackground, kSheetBackground};
  fill(canvas, 0, 0, g.width, g.height, background);
  const Rgb text{kSheetText[0], kSheetText[1], kSheetText[2]};

  std::string header = l.title + "  ·  ";
  for (size_t i = 0; i < l.sizes.size(); ++i) header += (i ? ", " : "") + l.sizes[i];
  for (size_t i = 0; i < l.loras.size(); ++i) {
    header += (i ? ", " : l.loras.size() == 1 ? "  ·  LoRA " : "  ·  LoRAs ") + l.loras[i];
  }
  header_font.draw(canvas, kMargin, g.header_baseline, header_font.fit(header, g.width - 2 * kMargin), text);
  // Column labels over the grid, or (wrapped) over each row's cells, at the same height above them.
  const auto draw_column_labels = [&](const std::vector<std::string>& labels, int baseline) {
    for (size_t c = 0; c < labels.size(); ++c) {
      const std::string label = label_font.fit(labels[c], thumb);
      label_font.draw(canvas, g.cell_x(int(c)) + (thumb - label_font.measure(label)) / 2, baseline, label, text);
    }
  };
  if (l.row_columns.empty()) draw_column_labels(l.columns, g.column_label_baseline);
  for (size_t r = 0; r < l.row_columns.size(); ++r) {
    draw_column_labels(l.row_columns[r], g.cell_y(int(r)) - (g.grid_y - g.column_label_baseline));
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

int sheet_pages(const SheetLayout& l, int per_page) {
  return std::max(1, int((l.rows.size() + size_t(per_page) - 1) / size_t(per_page)));
}

SheetLayout sheet_page(const SheetLayout& l, int page, int per_page) {
  const int pages = sheet_pages(l, per_page);
  if (page < 1 || page > pages) {
    throw std::invalid_argument("page " + std::to_string(page) + " is not one of the " + std::to_string(pages) + " pages of " +
                                std::to_string(per_page) + (per_page == 1 ? " row" : " rows"));
  }
  const int first = (page - 1) * per_page, end = std::min(int(l.rows.size()), first + per_page);
  SheetLayout out = l;
  out.rows.assign(l.rows.begin() + first, l.rows.begin() + end);
  out.row_details.assign(l.row_details.begin() + first, l.row_details.begin() + end);
  if (!l.row_columns.empty()) out.row_columns.assign(l.row_columns.begin() + first, l.row_columns.begin() + end);
  out.cells.clear();
  for (const SheetCell& c : l.cells) {
    if (c.row >= first && c.row < end) out.cells.push_back({c.row - first, c.column, c.image_path, c.mark, c.job});
  }
  if (pages > 1) out.title += "  ·  page " + std::to_string(page) + " of " + std::to_string(pages);
  return out;
}

int sheet_command(const std::vector<std::string>& args, CliContext& ctx) {
  std::vector<std::string> words;
  for (const auto& w : args) words.push_back(w == "-o" ? "--output" : w);
  const Arguments a(words, {"output", "thumb", "x", "y", "font", "page", "per-page", "marked", "columns", "qa"}, {});
  const std::string usage =
      "usage: rgbaq sheet RUN [-o FILE.png] [--thumb PX] [--x AXIS] [--y AXIS] [--columns N] [--per-page ROWS [--page N]] "
      "[--font FILE.ttf] [--marked M] [--qa FLAG]";
  if (a.positionals().size() != 1) throw UsageError(usage);
  const auto run = parse_u64(a.positionals()[0]);
  if (!run || *run == 0) throw UsageError("run \"" + a.positionals()[0] + "\" is not a positive integer");
  const int thumb = a.get_int("thumb", 128);
  if (thumb < 16 || thumb > 1024) throw UsageError("--thumb must be 16..1024 px");
  const int columns = a.get_int("columns", kDefaultSheetColumns);
  if (columns < 0) throw UsageError("--columns must be 0 (one row per prompt, however long) or a number of columns");
  const auto axis = [&](const char* option, SheetAxis fallback) -> SheetAxisChoice {
    const auto v = a.get(option);
    if (!v) return fallback;
    if (*v == "prompt") return SheetAxis::kPrompt;
    if (*v == "seed") return SheetAxis::kSeed;
    if (*v == "size") return SheetAxis::kSize;
    if (*v == "lora") return SheetAxis::kLora;
    if (v->rfind("lora:", 0) == 0) return {SheetAxis::kLora, v->substr(5)};
    if (v->rfind("var:", 0) == 0) return SheetAxisChoice::template_variable(v->substr(4));
    return SheetAxisChoice::template_variable(*v);  // a template variable, as the run's jobs name them (checked below)
  };
  const SheetAxisChoice x = axis("x", SheetAxis::kSeed), y = axis("y", SheetAxis::kPrompt);
  if (axes_overlap(x, y)) {
    throw UsageError(x.axis == SheetAxis::kLora ? "--x and --y must name different axes (two LoRA axes: lora:NAME and lora:OTHER)"
                                                : "--x and --y must name different axes");
  }
  const std::filesystem::path font = a.get("font").value_or(kDefaultFontPath);
  DaemonClient client(ctx.socket);
  nlohmann::json params = {{"run", *run}};
  const auto marked = a.get("marked");
  std::string filter_word;
  if (marked) {
    filter_word = common::parse_option("marked", *marked, sheet_filter_word);
    params["marked"] = *marked;
  }
  // --qa FLAG: the jobs whose alpha check has FLAG (or none, for ok): a sheet of its own, _qa-FLAG.
  const auto qa = a.get("qa");
  if (qa) {
    params["qa"] = qa_filter_option(*qa);
    filter_word += (filter_word.empty() ? "qa-" : "_qa-") + *qa;
  }
  const bool filtered = marked || qa;
  std::vector<SheetJob> jobs;  // what a cell needs of each job, read a page at a time (not the run's JSON whole)
  std::string run_name, run_out_dir;
  for_each_exported_job(client, params,
                        [&](const nlohmann::json& run) {
                          run_name = run.value("name", "");
                          run_out_dir = run.value("out_dir", ".");
                        },
                        [&](const nlohmann::json& j) {
                          std::map<std::string, std::string> choices;
                          if (j.contains("choices") && j["choices"].is_object()) {
                            for (const auto& [name, value] : j["choices"].items()) {
                              if (value.is_string()) choices.emplace(name, value.get<std::string>());
                            }
                          }
                          jobs.push_back({j.value("prompt", ""), j.value("seed", uint64_t{0}), j.value("width", 0),
                                          j.value("height", 0), j.value("state", ""),
                                          j.value("state", "") == "done" ? j.value("output", "") : "", j.value("lora", ""),
                                          j.value("id", int64_t{0}),
                                          j.contains("template") && j["template"].is_string() ? j["template"].get<std::string>() : "",
                                          std::move(choices)});
                        });
  if (jobs.empty()) {
    throw std::runtime_error("run " + a.positionals()[0] + " has no jobs" + (marked ? " marked " + *marked : "") +
                             (qa ? std::string(marked ? " and" : "") + " whose alpha check is " + *qa : ""));
  }
  for (const char* option : {"x", "y"}) {
    const SheetAxisChoice& axis = option[0] == 'x' ? x : y;
    const std::string why = sheet_axis_problem(jobs, axis);
    if (why.empty()) continue;
    if (axis.axis == SheetAxis::kVariable) {
      throw UsageError(std::string("--") + option + " \"" + *a.get(option) + "\" is not one of prompt, seed, size, lora, lora:NAME, " +
                       "or a template variable of run " + a.positionals()[0] + ": " + why);
    }
    throw UsageError(std::string("--") + option + " " + *a.get(option) + ": run " + a.positionals()[0] + ": " + why);
  }
  // A filter's sheet says so first, before a long run name can push it out of the header.
  std::string title = "run " + std::to_string(*run);
  if (marked) title += ", " + sheet_filter_word(*marked) + " only";
  if (qa) title += std::string(marked ? " and" : ",") + " alpha check " + *qa + " only";
  if (!run_name.empty()) title += " (" + run_name + ")";
  const SheetLayout whole = wrap_columns(layout_sheet(title, jobs, x, y, filtered), columns);
  const int per_page = a.has("per-page") ? a.get_int("per-page", 0) : std::max<int>(1, int(whole.rows.size()));
  if (per_page < 1) throw UsageError("--per-page must be a positive number of rows");
  if (a.has("page") && !a.has("per-page")) throw UsageError("--page needs --per-page ROWS (how many rows a page holds)");
  const int page = a.get_int("page", 1), pages = sheet_pages(whole, per_page);
  if (page < 1 || page > pages) {
    throw UsageError("--page " + std::to_string(page) + ": run " + a.positionals()[0] + " has " + std::to_string(pages) +
                     (pages == 1 ? " page" : " pages") + " of " + std::to_string(per_page) + " rows");
  }
  const SheetLayout layout = sheet_page(whole, page, per_page);
  Sheet sheet;
  try {
    sheet = render_sheet(layout, thumb, font);
  } catch (const SheetTooLarge& e) {
    if (e.rows_per_page == 0) {
      throw UsageError(std::string(e.what()) + "; one row alone is too wide: lower --thumb or swap --x and --y");
    }
    throw UsageError(std::string(e.what()) + "; page it: --per-page " + std::to_string(e.rows_per_page) + " --page 1.." +
                     std::to_string(sheet_pages(whole, e.rows_per_page)) + " (or lower --thumb)");
  }
  const std::string out = a.get("output").value_or(default_sheet_path(run_out_dir, *run, filter_word, page, pages).string());
  nlohmann::json legend = {{"run", *run}, {"rows", layout.rows}, {"row_details", layout.row_details}, {"columns", layout.columns},
                           {"loras", layout.loras}, {"thumb", thumb}, {"page", page}, {"pages", pages}};
  if (!layout.row_columns.empty()) legend["row_columns"] = layout.row_columns;
  // Which job is where: [job, row, column] for each cell that holds one (a tool reads the grid by it).
  nlohmann::json cells = nlohmann::json::array();
  for (const SheetCell& c : layout.cells)
    if (c.job != 0) cells.push_back({c.job, c.row, c.column});
  legend["cells"] = std::move(cells);
  if (marked) legend["marked"] = *marked;
  if (qa) legend["qa"] = *qa;
  if (const auto dir = std::filesystem::path(out).parent_path(); !dir.empty()) std::filesystem::create_directories(dir);
  storage::write_png_atomic(out, sheet.rgba.data(), sheet.geometry.width, sheet.geometry.height, {{"rgbaq-sheet", legend.dump()}});
  ctx.out << common::printable(out) << " (" << layout.rows.size() << (layout.rows.size() == 1 ? " row x " : " rows x ") << layout.columns.size()
          << (layout.columns.size() == 1 ? " column)\n" : " columns)\n");
  return 0;
}

}  // namespace rgbaq::cli
