#include "jobs/field_position.h"

#include <cctype>
#include <string>

namespace rgbaq::jobs {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

int column_of(std::string_view line, size_t byte) {
  int n = 1;
  for (size_t i = 0; i < byte && i < line.size(); ++i) n += !continuation(line[i]);
  return n;
}

// The bytes of JSON's \uXXXX escape at `p` (and of the low surrogate after a high one) in UTF-8, and the
// escape's length.
std::pair<size_t, size_t> unicode_escape(std::string_view s, size_t p) {
  const auto hex4 = [&](size_t at) { return at + 6 <= s.size() ? std::stoul(std::string(s.substr(at + 2, 4)), nullptr, 16) : 0ul; };
  const unsigned long cp = hex4(p);
  if (cp >= 0xD800 && cp <= 0xDBFF) return {4, 12};
  return {cp < 0x80 ? 1u : cp < 0x800 ? 2u : 3u, 6};
}

// Past the JSON string whose opening quote is at `p`; its text, simple escapes decoded, in `text`.
size_t skip_string(std::string_view s, size_t p, std::string* text) {
  for (++p; p < s.size() && s[p] != '"';) {
    if (s[p] == '\\' && p + 1 < s.size()) {
      if (s[p + 1] == 'u') {
        p += unicode_escape(s, p).second;
        if (text) *text += '\x01';  // no key we look for holds one
        continue;
      }
      if (text) *text += s[p + 1];
      p += 2;
    } else {
      if (text) *text += s[p];
      ++p;
    }
  }
  return p + 1;
}

size_t skip_blanks(std::string_view s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\r' || s[p] == '\n')) ++p;
  return p;
}

// Past the JSON value at `p`: a string, or anything up to the ',' or '}' that ends it at this level.
size_t skip_value(std::string_view s, size_t p) {
  int depth = 0;
  while (p < s.size()) {
    const char c = s[p];
    if (c == '"') {
      p = skip_string(s, p, nullptr);
      if (depth == 0) return p;
      continue;
    }
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') {
      if (depth == 0) return p;
      --depth;
    }
    if (c == ',' && depth == 0) return p;
    ++p;
  }
  return p;
}

}  // namespace

FilePosition csv_value_position(std::string_view file, size_t field_start, int line, int column, size_t offset) {
  size_t p = field_start;
  FilePosition at{line, column};
  const bool quoted = p < file.size() && file[p] == '"';
  if (quoted) {
    ++p;
    ++at.column;
  }
  for (size_t k = 0; k < offset && p < file.size(); ++k) {
    const char c = file[p];
    if (quoted && c == '"') {  // a doubled quote: one '"' of the value
      p += 2;
      at.column += 2;
      continue;
    }
    ++p;
    if (c == '\n' || (c == '\r' && (p >= file.size() || file[p] != '\n'))) {
      ++at.line;
      at.column = 1;
    } else if (!continuation(c) && c != '\r') {
      ++at.column;
    }
  }
  return at;
}

FilePosition jsonl_value_position(std::string_view line_text, int line, std::string_view key, size_t offset) {
  const std::string_view s = line_text;
  size_t p = skip_blanks(s, 0);
  if (p >= s.size() || s[p] != '{') return {line, 0};
  ++p;
  while (true) {
    p = skip_blanks(s, p);
    if (p >= s.size() || s[p] != '"') return {line, 0};
    std::string name;
    p = skip_blanks(s, skip_string(s, p, &name));
    if (p >= s.size() || s[p] != ':') return {line, 0};
    p = skip_blanks(s, p + 1);
    bool same = name.size() == key.size();
    for (size_t i = 0; same && i < name.size(); ++i) {
      same = std::tolower(static_cast<unsigned char>(name[i])) == std::tolower(static_cast<unsigned char>(key[i]));
    }
    if (same && p < s.size() && s[p] == '"') break;
    p = skip_blanks(s, skip_value(s, p));
    if (p >= s.size() || s[p] != ',') return {line, 0};
    ++p;
  }
  ++p;  // the value's opening quote
  for (size_t decoded = 0; decoded < offset && p < s.size();) {
    if (s[p] == '\\' && p + 1 < s.size()) {
      if (s[p + 1] == 'u') {
        const auto [bytes, length] = unicode_escape(s, p);
        decoded += bytes;
        p += length;
      } else {
        ++decoded;
        p += 2;
      }
    } else {
      ++decoded;
      ++p;
    }
  }
  return {line, column_of(s, p)};
}

}  // namespace rgbaq::jobs
