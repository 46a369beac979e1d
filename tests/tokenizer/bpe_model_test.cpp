// BPE on a hand-made vocabulary, results worked out by hand.
#include "tokenizer/bpe_model.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace rgbaq::tokenizer {
namespace {

// All 256 bytes (ids 0..255 in byte order) plus the given extra tokens.
BpeModel model(const std::vector<std::string>& extra, const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<std::pair<std::string, int32_t>> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(byte_level_encode(std::string(1, static_cast<char>(b))), b);
  for (size_t i = 0; i < extra.size(); ++i) vocab.emplace_back(extra[i], static_cast<int32_t>(256 + i));
  return BpeModel(vocab, merges);
}

std::vector<int32_t> encode(const BpeModel& m, std::string_view word) {
  std::vector<int32_t> ids;
  m.encode_word(word, ids);
  return ids;
}

TEST(BpeModel, LowestRankFirstLeftmostOnTies) {
  const auto m = model({"aa", "ab", "aab"}, {{"a", "a"}, {"a", "b"}, {"aa", "b"}});
  EXPECT_EQ(encode(m, "aaa"), (std::vector<int32_t>{256, 'a'}));       // (aa)(a), not (a)(aa)
  EXPECT_EQ(encode(m, "aab"), (std::vector<int32_t>{258}));            // aa first (rank 0), then aa+b
  EXPECT_EQ(encode(m, "abab"), (std::vector<int32_t>{257, 257}));
  EXPECT_EQ(encode(m, "ba"), (std::vector<int32_t>{'b', 'a'}));
}

TEST(BpeModel, RankDecidesNotPosition) {
  const auto m = model({"bc", "ab"}, {{"b", "c"}, {"a", "b"}});
  EXPECT_EQ(encode(m, "abc"), (std::vector<int32_t>{'a', 256}));  // bc has the lower rank
}

TEST(BpeModel, BytesOutsideAsciiUseTheByteLevelAlphabet) {
  const std::string e_acute = "\xc3\xa9";
  const auto m = model({byte_level_encode(e_acute)}, {{byte_level_encode("\xc3"), byte_level_encode("\xa9")}});
  EXPECT_EQ(encode(m, e_acute), (std::vector<int32_t>{256}));
  EXPECT_EQ(*m.bytes_of(256), e_acute);
  EXPECT_EQ(m.id_of(e_acute), 256);
  EXPECT_EQ(encode(m, " "), (std::vector<int32_t>{' '}));
}

TEST(BpeModel, MergeOutsideTheVocabularyIsALoadError) {
  try {
    model({"ab"}, {{"a", "b"}, {"a", "c"}});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("merge 1 (\"a\" \"c\")"), std::string::npos) << e.what();
  }
}

TEST(ByteLevel, AlphabetMatchesGpt2) {
  EXPECT_EQ(byte_to_char(' '), U'Ġ');
  EXPECT_EQ(byte_to_char('\n'), U'Ċ');
  EXPECT_EQ(byte_to_char('A'), U'A');
  EXPECT_EQ(byte_to_char(0xad), char32_t(0x143));
  EXPECT_EQ(byte_level_decode("ĠHello").value(), " Hello");
  EXPECT_FALSE(byte_level_decode("Ā€").has_value());
}

}  // namespace
}  // namespace rgbaq::tokenizer
