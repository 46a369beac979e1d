#pragma once
// A generated corpus of prompts that stresses a tokenizer: English asset prompts, many scripts, emoji
// sequences, combining marks NFC composes, ligatures, numbers, upper-case contractions, every kind of
// whitespace, special-token literals, and random code points from many blocks. Deterministic per seed.
#include <cstdint>
#include <string>
#include <vector>

namespace rgbaq::testing {

std::vector<std::string> make_prompt_corpus(size_t count, uint32_t seed);

// One JSON string literal (for the oracle's stdin), escaping what JSON requires.
std::string json_string(const std::string& utf8);

}  // namespace rgbaq::testing
