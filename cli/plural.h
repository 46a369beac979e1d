#pragma once
// Counts that read right: "1 job", "2 jobs", "1 image", "0 images".
#include <cstdint>
#include <string>

namespace rgbaq::cli {

inline std::string count_of(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}
inline std::string count_of(uint64_t n, const std::string& one) { return count_of(n, one, one + "s"); }

}  // namespace rgbaq::cli
