#include "common/json_limits.h"

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <system_error>

#include "common/json_nesting.h"

namespace rgbaq::common {

void check_json_limits(std::string_view text, const JsonLimits& limits, const std::string& source) {
  if (text.size() > limits.max_bytes) {
    throw std::runtime_error(source + ": " + std::to_string(text.size()) + " bytes of JSON, over the " +
                             std::to_string(limits.max_bytes) + " allowed");
  }
  const JsonScan scan = scan_json(text, limits.max_depth);
  if (scan.too_deep_at != std::string_view::npos) {
    throw std::runtime_error(source + ": JSON nests deeper than " + std::to_string(limits.max_depth) +
                             " levels (at byte " + std::to_string(scan.too_deep_at) + ")");
  }
  if (scan.values > limits.max_values) {
    throw std::runtime_error(source + ": JSON holds about " + std::to_string(scan.values) + " values, over the " +
                             std::to_string(limits.max_values) + " allowed");
  }
}

std::string read_json_file(const std::filesystem::path& path, const JsonLimits& limits) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error(path.string() + ": cannot open: " + ec.message());
  if (size > limits.max_bytes) {
    throw std::runtime_error(path.string() + ": " + std::to_string(size) + " bytes of JSON, over the " +
                             std::to_string(limits.max_bytes) + " allowed");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  std::string text;
  text.reserve(static_cast<size_t>(size));
  text.assign(std::istreambuf_iterator<char>(in), {});
  check_json_limits(text, limits, path.string());  // the file may have grown since its size was read
  return text;
}

}  // namespace rgbaq::common
