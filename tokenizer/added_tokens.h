#pragma once
// Added tokens (<|im_start|>, <|im_end|>, ...): matched in the raw text before anything else, leftmost
// first and longest at a position, as HF's AddedVocabulary does for tokens with normalized = false.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::tokenizer {

struct AddedToken {
  std::string content;
  int32_t id;
  bool special;
};

class AddedTokens {
 public:
  explicit AddedTokens(std::vector<AddedToken> tokens);

  // Calls `text_segment` for each stretch of ordinary text and `token` for each added token, in order.
  void split(std::string_view text, const std::function<void(std::string_view)>& text_segment,
             const std::function<void(const AddedToken&)>& token) const;

  const AddedToken* find_by_id(int32_t id) const;
  const AddedToken* find_by_content(std::string_view content) const;
  const std::vector<AddedToken>& all() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;  // longest first, so the first hit at a position is the longest
  bool first_byte_[256] = {};
};

}  // namespace rgbaq::tokenizer
