#pragma once
// `rgbaq model pull`'s progress on a terminal: a bar for the file in hand and one for the whole pull,
// each with bytes, rate and ETA, redrawn in place at most ten times a second. Silent when the stream
// is not a terminal (a log gets the summary lines only).
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace rgbaq::cli {

// "812.0 MiB", "3.20 GiB".
std::string format_bytes(uint64_t bytes);

class DownloadProgress {
 public:
  // `total`: the bytes the pull still has to fetch; `files`: how many files.
  DownloadProgress(std::ostream& out, bool terminal, uint64_t total, int files);
  // A file starts (or resumes at `already` of its `size` bytes).
  void start_file(const std::string& name, uint64_t size, uint64_t already);
  void advance(uint64_t bytes);
  // The file's bytes restart at `at` (the server ignored the range, or a retry resumes elsewhere).
  void rewind_file(uint64_t at);
  void finish_file();
  void finish();

 private:
  void draw(bool force);
  std::string line(const std::string& label, uint64_t done, uint64_t total, double rate, int width) const;

  std::ostream& out_;
  bool terminal_;
  uint64_t total_, total_done_ = 0;
  int files_, file_index_ = 0;
  std::string name_;
  uint64_t file_size_ = 0, file_done_ = 0;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point started_, last_draw_;
  uint64_t fetched_ = 0;  // bytes received since the start, for the rate
};

}  // namespace rgbaq::cli
