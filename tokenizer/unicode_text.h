#pragma once
// The Unicode facts the Qwen2 pre-tokenizer needs, from utf8proc (Unicode 15): UTF-8 decoding with
// validation, the classes of the split regex (\p{L}, \p{N}, \s), simple case folding, and NFC.
#include <cstdint>
#include <string>
#include <string_view>

namespace rgbaq::tokenizer {

enum class CharClass : uint8_t { kLetter, kNumber, kWhitespace, kOther };

// Decodes the code point at text[pos] and advances pos. Throws std::invalid_argument naming the byte
// offset when the bytes are not valid UTF-8 (overlong forms, surrogates and truncation included).
char32_t decode_utf8(std::string_view text, size_t& pos);

// Throws like decode_utf8 on the first invalid sequence.
void validate_utf8(std::string_view text);

// \p{L} = Lu Ll Lt Lm Lo; \p{N} = Nd Nl No; \s = White_Space (Zs, Zl, Zp, U+0009..U+000D, U+0085).
CharClass char_class(char32_t cp);

// The one code point `cp` case-folds to, or cp itself when its folding is not a single code point.
char32_t simple_case_fold(char32_t cp);

// NFC of valid UTF-8; returns the input unchanged when it is trivially normalized (all below U+0300).
std::string nfc(std::string_view text);

}  // namespace rgbaq::tokenizer
