#include "cli/watch_display.h"

#include <utf8proc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/printable_text.h"

namespace rgbaq::cli {
namespace {

constexpr double kSmoothing = 0.3;  // weight of the newest measurement: follows a change within a few steps
constexpr int kMinLabelColumns = 12;  // below this a job's prompt gets a line of its own

// Calls f(code point or -1 for an invalid byte, bytes) for each character of `text`.
template <typename F>
void for_each_char(std::string_view text, F f) {
  size_t i = 0;
  while (i < text.size()) {
    utf8proc_int32_t cp = -1;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                    static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      f(-1, text.substr(i, 1));
      ++i;
    } else {
      f(cp, text.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    }
  }
}

std::string join_fitting(const std::string& left, const std::string& right, int width) {
  return fit_columns(left + right, width);
}

std::vector<std::string> job_lines(const JobInHand& j, int width) {
  const std::string where = (j.worker.empty() ? "" : common::printable(j.worker) + "  ") + "run " + std::to_string(j.run) + " job " +
                            std::to_string(j.job) + "  ";
  std::string progress = j.decoding ? "decoding" : j.steps > 0 ? "step " + std::to_string(j.step) + "/" + std::to_string(j.steps) : "step ?";
  std::string facts = "  seed " + std::to_string(j.seed) + "  " + std::to_string(j.width) + "x" + std::to_string(j.height) + "  ";
  const std::string label = common::printable(j.label);
  // A bar only where the prompt keeps a fair share of the line.
  const int bar_width = std::min(20, (width - 80) / 2);
  if (bar_width >= 8 && j.steps > 0) {
    progress = progress_bar(j.decoding ? j.steps : j.step, j.steps, bar_width) + " " + progress;
  }
  const int room = width - display_columns(where) - display_columns(facts) - display_columns(progress);
  if (room >= kMinLabelColumns || room >= display_columns(label)) {
    return {where + fit_columns(label, std::max(room, 0)) + facts + progress};
  }
  return {fit_columns(where + label, width), fit_columns("  " + facts.substr(2) + progress, width)};
}

std::string run_line(const RunInProgress& r, bool paused, int width) {
  std::string left = "run " + std::to_string(r.id);
  if (!r.name.empty()) left += " " + fit_columns(common::printable(r.name), 16);
  std::string right = " " + std::to_string(r.done) + "/" + std::to_string(r.total) + " done";
  if (r.failed) right += ", " + std::to_string(r.failed) + " failed";
  if (r.canceled) right += ", " + std::to_string(r.canceled) + " canceled";
  const bool finished = r.done + r.failed + r.canceled >= r.total;
  if (!finished) right += paused ? "  paused" : r.eta_s ? (r.eta_guessed ? "  ETA ~" : "  ETA ") + format_duration(*r.eta_s) : "  ETA ?";
  const int bar_width = std::min(40, width - display_columns(left) - display_columns(right) - 4);
  if (bar_width >= 5) left += "  " + progress_bar(r.done, r.total, bar_width);
  return join_fitting(left, right, width);
}

}  // namespace

std::string progress_bar(int64_t done, int64_t total, int width) {
  const int64_t filled = total > 0 ? std::clamp<int64_t>(done * width / total, 0, width) : 0;
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '-') + "]";
}

int display_columns(std::string_view text) {
  int columns = 0;
  for_each_char(text, [&](int32_t cp, std::string_view) { columns += cp < 0 ? 1 : std::max(0, utf8proc_charwidth(cp)); });
  return columns;
}

std::string fit_columns(std::string_view text, int columns) {
  if (columns <= 0) return "";
  if (display_columns(text) <= columns) return std::string(text);
  std::string out;
  int used = 0;
  bool full = false;
  for_each_char(text, [&](int32_t cp, std::string_view bytes) {
    const int w = cp < 0 ? 1 : std::max(0, utf8proc_charwidth(cp));
    if (full || used + w > columns - 1) {
      full = true;
      return;
    }
    out.append(bytes);
    used += w;
  });
  return out + "…";
}

std::string format_duration(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600), static_cast<long long>(s / 60 % 60));
  return buf;
}

std::vector<std::string> render_watch(const WatchView& view, int width, int max_lines) {
  width = std::max(width, 10);
  std::vector<std::string> lines;
  std::string header = "rgbaqd  " + view.scope;
  if (!view.daemon_gone.empty()) {
    header += "  " + view.daemon_gone;
  } else {
    header += "  " + std::to_string(view.jobs.size()) + (view.jobs.size() == 1 ? " job" : " jobs") + " in hand";
    if (view.paused) header += "  queue paused";
  }
  lines.push_back(fit_columns(header, width));
  for (const auto& j : view.jobs) {
    for (auto& l : job_lines(j, width)) lines.push_back(std::move(l));
  }
  for (const auto& w : view.idle_workers) lines.push_back(fit_columns(common::printable(w.label) + "  " + common::printable(w.state), width));
  for (const auto& r : view.runs) lines.push_back(run_line(r, view.paused, width));
  if (view.runs.empty() && view.daemon_gone.empty()) lines.push_back("no run in progress");
  max_lines = std::max(max_lines, 2);
  if (static_cast<int>(lines.size()) > max_lines) {
    const size_t hidden = lines.size() - static_cast<size_t>(max_lines - 1);
    lines.resize(static_cast<size_t>(max_lines - 1));
    lines.push_back(fit_columns("… " + std::to_string(hidden) + " more lines (a taller terminal shows them)", width));
  }
  return lines;
}

void StepTimes::step(int width, int height, int steps, double step_s) {
  Size& s = sizes_[{width, height}];
  s.step_s = s.steps == 0 ? step_s : (1 - kSmoothing) * s.step_s + kSmoothing * step_s;
  s.steps = steps;
}

void StepTimes::image_done(int width, int height, double seconds) {
  const auto it = sizes_.find({width, height});
  if (it == sizes_.end() || it->second.steps == 0) return;
  Size& s = it->second;
  const double other = std::max(0.0, seconds - s.steps * s.step_s);
  s.other_s = s.other_measured ? (1 - kSmoothing) * s.other_s + kSmoothing * other : other;
  s.other_measured = true;
}

const StepTimes::Size* StepTimes::measured(int width, int height, bool* guessed, double& scale) const {
  scale = 1;
  const auto it = sizes_.find({width, height});
  if (it != sizes_.end() && it->second.steps > 0) return &it->second;
  if (!guessed || width <= 0 || height <= 0) return nullptr;
  // A step's work grows with the image's tokens, about linearly at the sizes the model renders: a
  // guess, shown as one, until a step of this size is measured.
  const double pixels = static_cast<double>(width) * height;
  const Size* nearest = nullptr;
  for (const auto& [size, s] : sizes_) {
    if (s.steps == 0) continue;
    const double ratio = pixels / (static_cast<double>(size.first) * size.second);
    if (!nearest || std::abs(std::log(ratio)) < std::abs(std::log(scale))) nearest = &s, scale = ratio;
  }
  if (nearest) *guessed = true;
  return nearest;
}

std::optional<double> StepTimes::image_s(int width, int height, bool* guessed) const {
  double scale = 1;
  const Size* s = measured(width, height, guessed, scale);
  if (!s) return std::nullopt;
  return (s->steps * s->step_s + s->other_s) * scale;
}

std::optional<double> StepTimes::rest_of_job_s(const JobInHand& job, bool* guessed) const {
  double scale = 1;
  const Size* s = measured(job.width, job.height, guessed, scale);
  if (!s) return std::nullopt;
  const int steps = job.steps > 0 ? job.steps : s->steps;
  const int left = job.decoding ? 0 : std::max(0, steps - job.step);
  return (left * s->step_s + s->other_s) * scale;
}

}  // namespace rgbaq::cli
