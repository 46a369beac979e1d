#include "tokenizer/unicode_text.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <stdexcept>

namespace rgbaq::tokenizer {
namespace {

CharClass classify_slow(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0d) || cp == 0x85) return CharClass::kWhitespace;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return CharClass::kLetter;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return CharClass::kNumber;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return CharClass::kWhitespace;
    default:
      return CharClass::kOther;
  }
}

// Latin-1 covers most prompts; everything else asks utf8proc.
const std::array<CharClass, 256>& latin1_classes() {
  static const auto table = [] {
    std::array<CharClass, 256> t{};
    for (char32_t c = 0; c < 256; ++c) t[c] = classify_slow(c);
    return t;
  }();
  return table;
}

[[noreturn]] void invalid_at(size_t pos) {
  throw std::invalid_argument("invalid UTF-8 at byte " + std::to_string(pos));
}

}  // namespace

char32_t decode_utf8(std::string_view text, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                                  static_cast<utf8proc_ssize_t>(text.size() - pos), &cp);
  if (n <= 0) invalid_at(pos);
  pos += static_cast<size_t>(n);
  return static_cast<char32_t>(cp);
}

void validate_utf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) decode_utf8(text, pos);
}

CharClass char_class(char32_t cp) { return cp < 256 ? latin1_classes()[cp] : classify_slow(cp); }

char32_t simple_case_fold(char32_t cp) {
  if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
  utf8proc_int32_t out[4];
  int last_boundclass = 0;
  const auto n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), out, 4, UTF8PROC_CASEFOLD,
                                         &last_boundclass);
  return n == 1 ? static_cast<char32_t>(out[0]) : cp;
}

std::string nfc(std::string_view text) {
  bool trivial = true;
  for (size_t pos = 0; pos < text.size() && trivial;) {
    // Below U+0300 every code point is its own NFC and composes with nothing before it.
    if (decode_utf8(text, pos) >= 0x300) trivial = false;
  }
  if (trivial) return std::string(text);
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                              static_cast<utf8proc_ssize_t>(text.size()), &out,
                              static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) throw std::invalid_argument(std::string("NFC failed: ") + utf8proc_errmsg(n));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
}

}  // namespace rgbaq::tokenizer
