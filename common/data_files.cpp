#include "common/data_files.h"

#include <system_error>

namespace rgbaq::common {

std::filesystem::path executable_dir() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : self.parent_path();
}

std::filesystem::path data_file(const std::string& relative, const std::filesystem::path& source_tree_path) {
  const auto bin = executable_dir();
  if (!bin.empty()) {
    const auto installed = bin.parent_path() / "share" / "rgbaq" / relative;
    std::error_code ec;
    if (std::filesystem::exists(installed, ec)) return installed;
  }
  return source_tree_path;
}

}  // namespace rgbaq::common
