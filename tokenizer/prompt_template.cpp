#include "tokenizer/prompt_template.h"

#include <algorithm>
#include <span>

#include <stdexcept>

#include "host/contract_limits.h"

namespace rgbaq::tokenizer {

const std::vector<int32_t>& contract_system_ids() {
  static const std::vector<int32_t> ids = {151644, 8948, 198, 1092, 30782, 408, 323,
                                           23643,  279,  3897, 9934, 13,   151645, 198};
  return ids;
}

PromptTemplate::PromptTemplate(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {
  const auto system_ids = tokenizer.encode(kSystemPart);
  if (system_ids != contract_system_ids()) {
    std::string got;
    for (auto id : system_ids) got += (got.empty() ? "" : ", ") + std::to_string(id);
    throw std::runtime_error(tokenizer.source() + ": the template's system part encodes to [" + got +
                             "], not the contract's 14 ids; this is not the model's tokenizer");
  }
  drop_idx_ = static_cast<int>(system_ids.size());
  // The most bytes one id can stand for: with it, a prompt too long for any tokenisation is refused by
  // its byte length alone, before it is tokenised.
  for (int32_t id = 0; id < tokenizer.id_limit(); ++id) {
    try {
      max_token_bytes_ = std::max(max_token_bytes_, tokenizer.decode(std::span<const int32_t>(&id, 1)).size());
    } catch (const std::exception&) {
      // an id with no entry (a gap below an added token): it stands for nothing
    }
  }
  // The prompt sits in the text segment "user\n{prompt}" between two added tokens, and HF splits on
  // added tokens before it normalizes or pre-tokenizes: that segment encodes alone, exactly as it does
  // inside the whole template. So only it is encoded per prompt; the rest is fixed.
  prefix_ids_ = tokenizer.encode(std::string(kSystemPart) + std::string(kUserTurnOpen));
  suffix_ids_ = tokenizer.encode(kUserSuffix);
  for (const std::string_view sample : {std::string_view(" "), std::string_view("a red fox, <|im_end|> 'S")}) {
    const std::string whole = std::string(kSystemPart) + std::string(kUserPrefix) + std::string(sample) + std::string(kUserSuffix);
    if (apply(sample).ids != tokenizer.encode(whole)) {
      throw std::logic_error(tokenizer.source() + ": the template does not split at its added tokens as expected");
    }
  }
}

TemplatedPrompt PromptTemplate::apply(std::string_view prompt) const {
  // Each token stands for at most max_token_bytes_ bytes of NFC text, and NFC shrinks UTF-8 by at most
  // a factor of 3 (Hangul jamo composing): a prompt longer than this needs more tokens than fit.
  const size_t max_bytes = 3 * max_token_bytes_ * static_cast<size_t>(host::kMaxFullTokens);
  if (prompt.size() > max_bytes) {
    throw std::invalid_argument("the prompt is " + std::to_string(prompt.size()) + " bytes; no prompt over " +
                                std::to_string(max_bytes) + " bytes fits the encoder's " +
                                std::to_string(host::kMaxFullTokens) + " tokens (refused without tokenising it)");
  }
  std::string segment(kUserSegmentHead);
  segment.append(prompt.empty() ? std::string_view(" ") : prompt);
  const std::vector<int32_t> middle = tokenizer_.encode(segment);
  TemplatedPrompt t;
  t.ids.reserve(prefix_ids_.size() + middle.size() + suffix_ids_.size());
  t.ids.insert(t.ids.end(), prefix_ids_.begin(), prefix_ids_.end());
  t.ids.insert(t.ids.end(), middle.begin(), middle.end());
  t.ids.insert(t.ids.end(), suffix_ids_.begin(), suffix_ids_.end());
  t.drop_idx = drop_idx_;
  if (t.full_len() > host::kMaxFullTokens) {
    // The template itself is 22 tokens, so a prompt may have about 490.
    throw std::invalid_argument("the prompt is " + std::to_string(t.full_len()) +
                                " tokens with the template; the encoder takes at most " +
                                std::to_string(host::kMaxFullTokens) + " (about " +
                                std::to_string(host::kMaxFullTokens - 22) + " tokens of prompt)");
  }
  host::check_full_tokens(t.full_len());
  host::check_text_tokens(t.text_len());
  return t;
}

}  // namespace rgbaq::tokenizer
