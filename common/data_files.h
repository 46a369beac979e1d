#pragma once
// Data that ships with rgbaq (the Qwen3 tokenizer.json, the example job file): an installed binary
// finds it relative to itself (<prefix>/bin/rgbaq -> <prefix>/share/rgbaq/...), so an install can move;
// a binary in the build tree uses the source tree it was built from.
#include <filesystem>
#include <string>

namespace rgbaq::common {

// <dir of this executable>/../share/rgbaq/<relative> when it exists, else `source_tree_path`.
std::filesystem::path data_file(const std::string& relative, const std::filesystem::path& source_tree_path);

// The running executable's directory (empty when /proc/self/exe cannot be read).
std::filesystem::path executable_dir();

}  // namespace rgbaq::common
