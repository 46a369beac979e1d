// Id parity with the HF tokenizers library (the Rust implementation, through its Node addon) on a
// generated corpus: every id of every prompt, templated and raw. No tolerance.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/run_process.h"
#include "tests/tokenizer/prompt_corpus.h"
#include "tokenizer/prompt_template.h"
#include "tokenizer/tokenizer.h"

namespace rgbaq::tokenizer {
namespace {

const std::filesystem::path kSource = RGBAQ_SOURCE_DIR_PATH;
const std::filesystem::path kTokenizerFile = kSource / "tokenizer/data/qwen3/tokenizer.json";

std::vector<std::vector<int32_t>> oracle_ids(const std::vector<std::string>& texts) {
  const auto oracle_dir = kSource / "tests/oracle";
  if (!std::filesystem::exists(oracle_dir / "node_modules/@anush008/tokenizers")) {
    ADD_FAILURE() << "the HF tokenizers oracle is not installed: run scripts/setup";
    return {};
  }
  std::string input;
  for (const auto& t : texts) input += testing::json_string(t) + "\n";
  const auto r = run_process({"/usr/bin/env", "node", (oracle_dir / "hf_encode.js").string(), kTokenizerFile.string()},
                             input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::vector<int32_t>> out;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) out.push_back(nlohmann::json::parse(line).get<std::vector<int32_t>>());
  return out;
}

// `ours` encodes text i; the oracle always encodes the whole text.
void expect_parity(const std::vector<std::string>& texts, const std::function<std::vector<int32_t>(size_t)>& ours,
                   const char* form) {
  const auto want = oracle_ids(texts);
  ASSERT_EQ(want.size(), texts.size());
  size_t mismatches = 0, skipped = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> got;
    try {
      got = ours(i);
    } catch (const std::invalid_argument&) {
      ++skipped;  // over the encoder's limit: the template refuses it, nothing to compare
      continue;
    }
    if (got != want[i]) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << form << " prompt " << i << " " << testing::json_string(texts[i]) << "\n  ours "
                      << nlohmann::json(got).dump() << "\n  HF   " << nlohmann::json(want[i]).dump();
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << texts.size() << " " << form << " prompts";
  EXPECT_EQ(skipped, 0u) << "the corpus should fit the encoder";
}

TEST(HfParity, TemplatedCorpusIdsAreIdentical) {
  // Ours through PromptTemplate::apply (which encodes only the prompt's segment); HF the whole string.
  const auto tk = Tokenizer::from_file(kTokenizerFile);
  const PromptTemplate tmpl(tk);
  const auto prompts = testing::make_prompt_corpus(2400, 20261130);
  std::vector<std::string> templated;
  for (const auto& p : prompts) {
    templated.push_back(std::string(kSystemPart) + std::string(kUserPrefix) + (p.empty() ? " " : p) +
                        std::string(kUserSuffix));
  }
  expect_parity(templated, [&](size_t i) { return tmpl.apply(prompts[i]).ids; }, "templated");
}

TEST(HfParity, RawCorpusIdsAreIdentical) {
  const auto tk = Tokenizer::from_file(kTokenizerFile);
  const auto prompts = testing::make_prompt_corpus(2400, 7);
  expect_parity(prompts, [&](size_t i) { return tk.encode(prompts[i]); }, "raw");
}

}  // namespace
}  // namespace rgbaq::tokenizer
