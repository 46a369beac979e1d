#pragma once
// The Qwen2 pre-tokenizer split, hand-compiled from its regex (Isolated: every match is a piece):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// with Oniguruma's semantics (the first alternative that matches wins, greedy with backtracking), as the
// HF tokenizers library runs it. Every code point is covered by some alternative, so the pieces tile
// the text.
#include <functional>
#include <string_view>

namespace rgbaq::tokenizer {

// The pattern as tokenizer.json spells it; a file with any other Split pattern is refused.
inline constexpr std::string_view kQwen2SplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Calls `piece` for each piece, in order. `text` must be valid UTF-8.
void qwen2_split(std::string_view text, const std::function<void(std::string_view)>& piece);

}  // namespace rgbaq::tokenizer
