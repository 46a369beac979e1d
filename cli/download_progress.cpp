#include "cli/download_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <iomanip>
#include <ostream>
#include <sstream>

#include "cli/watch_display.h"
#include "common/printable_text.h"

namespace rgbaq::cli {

std::string format_bytes(uint64_t bytes) {
  std::ostringstream s;
  if (bytes >= (1ull << 30)) {
    s << std::fixed << std::setprecision(2) << static_cast<double>(bytes) / (1ull << 30) << " GiB";
  } else {
    s << std::fixed << std::setprecision(1) << static_cast<double>(bytes) / (1ull << 20) << " MiB";
  }
  return s.str();
}

DownloadProgress::DownloadProgress(std::ostream& out, bool terminal, uint64_t total, int files)
    : out_(out), terminal_(terminal), total_(total), files_(files), started_(std::chrono::steady_clock::now()) {}

void DownloadProgress::start_file(const std::string& name, uint64_t size, uint64_t already) {
  name_ = name;
  file_size_ = size;
  file_done_ = already;
  ++file_index_;
  draw(true);
}

void DownloadProgress::advance(uint64_t bytes) {
  file_done_ += bytes;
  total_done_ += bytes;
  fetched_ += bytes;
  draw(false);
}

void DownloadProgress::rewind_file(uint64_t at) {
  const uint64_t lost = file_done_ > at ? file_done_ - at : 0;
  total_done_ -= std::min(total_done_, lost);
  file_done_ = at;
  draw(true);
}

void DownloadProgress::finish_file() { draw(true); }

void DownloadProgress::finish() {
  if (terminal_ && drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

std::string DownloadProgress::line(const std::string& label, uint64_t done, uint64_t total, double rate, int width) const {
  std::string right = "  " + format_bytes(done) + " / " + format_bytes(total);
  if (rate > 0) {
    right += "  " + format_bytes(static_cast<uint64_t>(rate)) + "/s";
    if (total > done) right += "  ETA " + format_duration(static_cast<double>(total - done) / rate);
  }
  // label (22 columns) + " [" + bar + "]" + right
  constexpr int kLabel = 22;
  const int bar_width = std::min(30, width - display_columns(right) - kLabel - 3);
  std::string left = fit_columns(label, kLabel);
  left += std::string(static_cast<size_t>(std::max(0, kLabel - display_columns(left))), ' ');
  if (bar_width >= 5) left += " " + progress_bar(static_cast<int64_t>(done), static_cast<int64_t>(total), bar_width);
  return fit_columns(left + right, width);
}

void DownloadProgress::draw(bool force) {
  if (!terminal_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  winsize ws{};
  int width = 80;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) width = ws.ws_col;
  const double seconds = std::chrono::duration<double>(now - started_).count();
  const double rate = seconds > 0.5 ? static_cast<double>(fetched_) / seconds : 0;
  if (drawn_) out_ << "\x1b[1A\r";  // back to the file's line
  out_ << "\x1b[K" << line(common::printable(name_), file_done_, file_size_, rate, width) << "\n\x1b[K"
       << line("total (file " + std::to_string(file_index_) + "/" + std::to_string(files_) + ")", total_done_, total_, rate, width)
       << std::flush;
  drawn_ = true;
}

}  // namespace rgbaq::cli
