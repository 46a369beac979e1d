#pragma once
// The gallery's files as rgbaqd serves them under /web/ (and index.html at /).
#include <optional>
#include <string_view>

namespace rgbaq::web {

struct WebFile {
  std::string_view content_type;
  std::string_view bytes;
};

// The file named `name` ("app.js"), or nullopt.
std::optional<WebFile> web_file(std::string_view name);

}  // namespace rgbaq::web
