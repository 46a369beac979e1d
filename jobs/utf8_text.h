#pragma once
// UTF-8 validity, as a job file's prompts and a template's wildcard files must have it, and the
// characters a column counts.
#include <cstddef>
#include <string_view>

namespace rgbaq::jobs {

// The byte offset of the first invalid UTF-8 sequence in `s` (an overlong form, a surrogate, a code
// point over U+10FFFF, a truncated or stray byte), or npos when it is all valid.
size_t invalid_utf8_at(std::string_view s);

// The characters of `s` (its bytes that are no UTF-8 continuation byte): what a message's column counts.
int count_chars(std::string_view s);

}  // namespace rgbaq::jobs
