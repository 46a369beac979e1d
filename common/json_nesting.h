#pragma once
// A guard run before a JSON parser sees untrusted text: a value nested 100,000 levels deep would
// overflow the stack of the parser, of dump() or of the destructor.
#include <cstddef>
#include <string_view>

namespace rgbaq::common {

// The byte offset of the first '[' or '{' that nests deeper than `max_depth`, or npos (brackets inside
// strings do not count). A linear scan, safe on any input; malformed JSON is left to the parser.
inline size_t json_too_deep_at(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string_view::npos;
}

}  // namespace rgbaq::common
