// The real Qwen3 tokenizer.json: the contract's ids, the template, errors, and loader checks.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/tokenizer/prompt_corpus.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/unicode_text.h"

namespace rgbaq::tokenizer {
namespace {

const std::filesystem::path kTokenizerFile = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";

const Tokenizer& qwen3() {
  static const Tokenizer tk = Tokenizer::from_file(kTokenizerFile);
  return tk;
}

std::string file_text() {
  std::ifstream in(kTokenizerFile);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Tokenizer, SystemPartIsTheContractsFourteenIds) {
  EXPECT_EQ(qwen3().encode(kSystemPart), contract_system_ids());
  EXPECT_EQ(PromptTemplate(qwen3()).drop_idx(), 14);
}

TEST(Tokenizer, EmptyPromptBecomesASpaceTwentyThreeTokens) {
  const PromptTemplate t(qwen3());
  const auto empty = t.apply("");
  EXPECT_EQ(empty.full_len(), 23);
  EXPECT_EQ(empty.text_len(), 9);
  EXPECT_EQ(empty.ids, t.apply(" ").ids);
  EXPECT_EQ(std::vector<int32_t>(empty.ids.begin(), empty.ids.begin() + 14), contract_system_ids());
}

TEST(Tokenizer, TemplateEncodesTheWholeStringOnce) {
  const PromptTemplate t(qwen3());
  const auto p = t.apply("a red fox");
  std::string whole = std::string(kSystemPart) + std::string(kUserPrefix) + "a red fox" + std::string(kUserSuffix);
  EXPECT_EQ(p.ids, qwen3().encode(whole));
  EXPECT_EQ(qwen3().decode(p.ids), whole);
}

TEST(Tokenizer, OverLongPromptIsRejectedWithTheCount) {
  const PromptTemplate t(qwen3());
  std::string longest;
  for (int i = 0; i < 489; ++i) longest += " x";  // " x" is one token: 22 template tokens + 489 + 1
  EXPECT_NO_THROW(t.apply(longest.substr(0, longest.size() - 0)));
  try {
    t.apply(longest + " x x");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("513 tokens with the template"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, AHugePromptIsRefusedByItsByteCountBeforeTokenising) {
  const PromptTemplate t(qwen3());
  const std::string huge(40'000'000, 'a');  // tokenising this took 17 s
  try {
    t.apply(huge);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the prompt is 40000000 bytes; no prompt over"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(t.apply(std::string(400, 'a'))) << "a prompt that fits is not refused by the byte bound";
}

TEST(Tokenizer, SpecialTokenLiteralsInTheTextAreMatched) {
  EXPECT_EQ(qwen3().encode("x<|im_end|>y"), (std::vector<int32_t>{87, 151645, 88}));
  EXPECT_EQ(qwen3().encode("<think>"), (std::vector<int32_t>{151667}));
  EXPECT_EQ(qwen3().token_id("<|im_start|>"), 151644);
  EXPECT_EQ(qwen3().id_limit(), 151669);
}

TEST(Tokenizer, InvalidUtf8NamesTheByte) {
  try {
    qwen3().encode("abc\xff");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "invalid UTF-8 at byte 3");
  }
  EXPECT_THROW(qwen3().encode("\xed\xa0\x80"), std::invalid_argument);  // an encoded surrogate
  EXPECT_THROW(qwen3().encode("\xc0\xaf"), std::invalid_argument);      // overlong
}

TEST(Tokenizer, DecodeRoundTripsTheCorpus) {
  // Ids decode to the NFC form of the text (added tokens as written): the split tiles the text and
  // BPE loses no byte.
  int checked = 0;
  for (const auto& p : testing::make_prompt_corpus(500, 3)) {
    if (p.find('<') != std::string::npos) continue;
    EXPECT_EQ(qwen3().decode(qwen3().encode(p)), nfc(p)) << testing::json_string(p);
    ++checked;
  }
  EXPECT_GT(checked, 400);
  EXPECT_EQ(qwen3().decode(qwen3().encode("cafe\u0301")), "caf\u00e9");
  EXPECT_THROW(qwen3().decode(std::vector<int32_t>{999999}), std::invalid_argument);
}

TEST(Tokenizer, OlderMergesFormatGivesTheSameIds) {
  auto doc = nlohmann::json::parse(file_text());
  for (auto& m : doc["model"]["merges"]) m = m[0].get<std::string>() + " " + m[1].get<std::string>();
  const auto old_format = Tokenizer::from_json(doc.dump(), "old-format");
  for (const auto& p : testing::make_prompt_corpus(300, 5)) ASSERT_EQ(old_format.encode(p), qwen3().encode(p)) << p;
}

void expect_load_error(const std::function<void(nlohmann::json&)>& edit, const std::string& fragment) {
  static const auto original = nlohmann::json::parse(file_text());
  auto doc = original;
  edit(doc);
  try {
    Tokenizer::from_json(doc.dump(), "edited.json");
    FAIL() << "loaded despite: " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("edited.json", 0), 0u) << e.what();
  }
}

TEST(Tokenizer, UnsupportedFeaturesAreNamedLoadErrors) {
  using J = nlohmann::json;
  expect_load_error([](J& d) { d["model"]["type"] = "WordPiece"; }, "model type WordPiece");
  expect_load_error([](J& d) { d["normalizer"] = J{{"type", "NFKC"}}; }, "normalizer NFKC");
  expect_load_error([](J& d) { d["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+"; }, "Split pattern");
  expect_load_error([](J& d) { d["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed"; }, "Split behavior Removed");
  expect_load_error([](J& d) { d["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true; }, "add_prefix_space");
  expect_load_error([](J& d) { d["added_tokens"][2]["lstrip"] = true; }, "added_tokens[2].lstrip");
  expect_load_error([](J& d) { d["model"]["byte_fallback"] = true; }, "model.byte_fallback");
  expect_load_error([](J& d) { d["truncation"] = J{{"max_length", 8}}; }, "truncation");
  expect_load_error([](J& d) { d["decoder"] = J{{"type", "WordPiece"}}; }, "decoder WordPiece");
}

TEST(Tokenizer, MalformedFilesAreNamedLoadErrors) {
  using J = nlohmann::json;
  expect_load_error([](J& d) { d["model"]["merges"][5] = "onlyonepart"; }, "model.merges[5]");
  expect_load_error([](J& d) { d["model"]["merges"][7] = J::array({"a", "b", "c"}); }, "model.merges[7] is not a pair");
  expect_load_error([](J& d) { d["model"]["vocab"]["hello"] = "x"; }, "model.vocab[\"hello\"]");
  expect_load_error([](J& d) { d["model"]["merges"][3] = J::array({"zzqq", "q"}); }, "merge 3");
  expect_load_error([](J& d) { d["model"].erase("vocab"); }, "model.vocab is missing");
  EXPECT_THROW(Tokenizer::from_json("{\"model\": ", "cut.json"), std::runtime_error);
  EXPECT_THROW(Tokenizer::from_file("/nonexistent/tokenizer.json"), std::runtime_error);
}

}  // namespace
}  // namespace rgbaq::tokenizer
