#pragma once
// Bounds on a JSON document read from a file nobody vouches for (a model directory's configs, a
// safetensors header), checked before a parser builds anything: a DOM costs tens of bytes a value, so a
// file of many small values costs ~30 times its size, and a deep one overflows the parser's stack.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace rgbaq::common {

struct JsonLimits {
  size_t max_bytes;
  int max_depth;
  size_t max_values;
};

// A model directory's small JSON files (config.json, model_index.json, scheduler_config.json, a
// *.safetensors.index.json). Real ones are a few KiB; the largest, an index naming ~1,000 tensors, is
// about 100 KiB and 2,000 values.
inline constexpr JsonLimits kModelConfigJsonLimits{4u << 20, 32, 1u << 17};

// Throws std::runtime_error "SOURCE: ..." naming the limit `text` is over, if any.
void check_json_limits(std::string_view text, const JsonLimits& limits, const std::string& source);

// The file's text, refused by its size before it is read and by check_json_limits after. Throws
// std::runtime_error naming the file.
std::string read_json_file(const std::filesystem::path& path, const JsonLimits& limits);

}  // namespace rgbaq::common
