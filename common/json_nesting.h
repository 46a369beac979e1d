#pragma once
// A guard run before a JSON parser sees untrusted text: a value nested 100,000 levels deep would
// overflow the stack of the parser, of dump() or of the destructor.
#include <cstddef>
#include <string_view>

namespace rgbaq::common {

// One linear scan, safe on any input (brackets and commas inside strings do not count; malformed JSON
// is left to the parser).
struct JsonScan {
  size_t too_deep_at = std::string_view::npos;  // the first '[' or '{' nesting deeper than asked, or npos
  size_t values = 0;  // the values a parser would make of valid JSON: the root, and each container's items
};

inline JsonScan scan_json(std::string_view text, int max_depth) {
  JsonScan scan;
  int depth = 0;
  bool in_string = false, just_opened = false;  // just_opened: the container's first item is next, if any
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (just_opened && c != ']' && c != '}') ++scan.values;  // a non-empty container: its first item
    just_opened = false;
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      just_opened = true;
      if (++depth > max_depth) {
        scan.too_deep_at = i;
        return scan;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',') {
      ++scan.values;  // the item after it (in an object: the pair, whose value is the one made)
    }
  }
  if (text.find_first_not_of(" \t\n\r") != std::string_view::npos) ++scan.values;  // the root
  return scan;
}

// The byte offset of the first '[' or '{' that nests deeper than `max_depth`, or npos.
inline size_t json_too_deep_at(std::string_view text, int max_depth) { return scan_json(text, max_depth).too_deep_at; }

}  // namespace rgbaq::common
