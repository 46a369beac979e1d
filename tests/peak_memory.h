#pragma once
// Peak resident memory, measured by the kernel: a test that bounds what a hostile input costs reads
// these figures instead of assuming them.
#include <sys/types.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

namespace rgbaq {

// A "VmHWM"/"VmRSS"-style field of /proc/PID/status, in bytes (0 when absent).
inline uint64_t proc_status_bytes(const std::string& field, const std::string& pid = "self") {
  std::ifstream in("/proc/" + pid + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;  // "  1234 kB"
  }
  return 0;
}

// How far this process's peak resident memory rose above where it stood while `fn` ran, in bytes. The
// kernel's peak is reset first (writing 5 to /proc/self/clear_refs), so the figure is this call's own.
inline uint64_t peak_rss_growth(const std::function<void()>& fn) {
  {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5";
    if (!reset.flush()) throw std::runtime_error("cannot reset the peak RSS through /proc/self/clear_refs");
  }
  const uint64_t before = proc_status_bytes("VmRSS");
  fn();
  const uint64_t peak = proc_status_bytes("VmHWM");
  return peak > before ? peak - before : 0;
}

}  // namespace rgbaq
