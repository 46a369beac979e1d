#pragma once
// GPT-2's byte-level alphabet: each of the 256 bytes is shown as one printable code point, so a BPE
// vocabulary of byte strings can be stored as text. tokenizer.json spells its vocabulary this way.
#include <optional>
#include <string>
#include <string_view>

namespace rgbaq::tokenizer {

// The code point that stands for byte b.
char32_t byte_to_char(unsigned char b);

// The UTF-8 spelling of a vocabulary entry back to the raw bytes it stands for; nullopt when it holds
// a code point outside the alphabet.
std::optional<std::string> byte_level_decode(std::string_view spelled);

// Raw bytes to their byte-level spelling (UTF-8).
std::string byte_level_encode(std::string_view bytes);

}  // namespace rgbaq::tokenizer
