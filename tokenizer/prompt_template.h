#pragma once
// The contract's text-to-image template (§2): the prompt wrapped in the chat turns, drop_idx (the
// system part's token count, 14), and the encoder's and DiT's axis checks.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace rgbaq::tokenizer {

inline constexpr std::string_view kSystemPart =
    "<|im_start|>system\nComprehend and analyze the provided prompt.<|im_end|>\n";
inline constexpr std::string_view kUserPrefix = "<|im_start|>user\n";
inline constexpr std::string_view kUserTurnOpen = "<|im_start|>";  // kUserPrefix = kUserTurnOpen + kUserSegmentHead
inline constexpr std::string_view kUserSegmentHead = "user\n";
inline constexpr std::string_view kUserSuffix = "<|im_end|>\n<|im_start|>assistant\n";

struct TemplatedPrompt {
  std::vector<int32_t> ids;  // all Lfull tokens, as the encoder receives them
  int drop_idx = 0;          // the first drop_idx outputs of the encoder are dropped
  int full_len() const { return static_cast<int>(ids.size()); }
  int text_len() const { return full_len() - drop_idx; }  // L, the DiT's text axis
};

class PromptTemplate {
 public:
  // Encodes the system part and checks it against the contract's 14 ids; throws std::runtime_error
  // when the tokenizer disagrees (it is not this model's tokenizer).
  explicit PromptTemplate(const Tokenizer& tokenizer);

  // The ids for a prompt (empty becomes " "). Throws std::invalid_argument with the prompt's token
  // count when Lfull is outside 16..512 or L outside 8..512, and on invalid UTF-8; a prompt with more
  // bytes than 512 tokens could ever stand for is refused by its byte count, without tokenising it.
  TemplatedPrompt apply(std::string_view prompt) const;

  int drop_idx() const { return drop_idx_; }

 private:
  const Tokenizer& tokenizer_;
  int drop_idx_ = 0;
  size_t max_token_bytes_ = 1;  // the longest byte string one id decodes to
  std::vector<int32_t> prefix_ids_, suffix_ids_;  // the template's fixed parts around "user\n{prompt}"
};

// The contract's system-part ids (§2).
const std::vector<int32_t>& contract_system_ids();

}  // namespace rgbaq::tokenizer
