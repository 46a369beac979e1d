// The split worked out by hand from the regex's alternatives (Oniguruma order and backtracking).
#include "tokenizer/qwen2_split.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rgbaq::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> pieces;
  qwen2_split(text, [&](std::string_view p) { pieces.emplace_back(p); });
  return pieces;
}

using V = std::vector<std::string>;

TEST(Qwen2Split, WordsTakeOneLeadingNonLetter) {
  EXPECT_EQ(split("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(split("a  b"), (V{"a", " ", " b"}));          // \s+(?!\S) leaves the last space to " b"
  EXPECT_EQ(split("(red)fox"), (V{"(red", ")fox"}));      // punctuation prefixes a letter run
  EXPECT_EQ(split("\tword"), (V{"\tword"}));
  EXPECT_EQ(split("\u3000word"), (V{"\u3000word"}));      // any non-CR/LF, non-L, non-N code point
}

TEST(Qwen2Split, ContractionsAreCaseInsensitiveAndComeFirst) {
  EXPECT_EQ(split("IT'S"), (V{"IT", "'S"}));
  EXPECT_EQ(split("we'Re"), (V{"we", "'Re"}));
  EXPECT_EQ(split("'sa"), (V{"'s", "a"}));  // the contraction alternative wins over "'sa"
  EXPECT_EQ(split("YOU'LL"), (V{"YOU", "'LL"}));
  EXPECT_EQ(split("'x"), (V{"'x"}));
  EXPECT_EQ(split("x'ſ"), (V{"x", "'ſ"}));  // ſ case-folds to s
}

TEST(Qwen2Split, NumbersAreSingleDigits) {
  EXPECT_EQ(split("1024x"), (V{"1", "0", "2", "4", "x"}));
  EXPECT_EQ(split("Ⅻ²"), (V{"Ⅻ", "²"}));  // Nl and No are \p{N}
}

TEST(Qwen2Split, PunctuationRunsTakeOneSpaceAndTrailingNewlines) {
  EXPECT_EQ(split("a !!\n\nb"), (V{"a", " !!\n\n", "b"}));
  EXPECT_EQ(split("...?"), (V{"...?"}));
  EXPECT_EQ(split("  !"), (V{" ", " !"}));
}

TEST(Qwen2Split, WhitespaceAlternatives) {
  EXPECT_EQ(split("a  b\r\n\n c"), (V{"a", " ", " b", "\r\n\n", " c"}));
  EXPECT_EQ(split("x\n  y"), (V{"x", "\n", " ", " y"}));  // \s*[\r\n]+ stops after the last newline
  EXPECT_EQ(split("x   "), (V{"x", "   "}));             // at the end, the whole run
  EXPECT_EQ(split(" \n "), (V{" \n", " "}));
  EXPECT_EQ(split(" 1"), (V{" ", "1"}));
}

TEST(Qwen2Split, PiecesTileTheText) {
  const std::string text = "🏳️‍🌈 cafe\u0301 Ω\u3000\u2028x\r\n";
  std::string joined;
  for (const auto& p : split(text)) joined += p;
  EXPECT_EQ(joined, text);
}

}  // namespace
}  // namespace rgbaq::tokenizer
