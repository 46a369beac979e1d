#include "tokenizer/added_tokens.h"

#include <algorithm>

namespace rgbaq::tokenizer {

AddedTokens::AddedTokens(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (const auto& t : tokens_) {
    if (!t.content.empty()) first_byte_[static_cast<unsigned char>(t.content[0])] = true;
  }
}

void AddedTokens::split(std::string_view text, const std::function<void(std::string_view)>& text_segment,
                        const std::function<void(const AddedToken&)>& token) const {
  size_t segment_start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const AddedToken* hit = nullptr;
    if (first_byte_[static_cast<unsigned char>(text[pos])]) {
      for (const auto& t : tokens_) {
        if (!t.content.empty() && text.substr(pos, t.content.size()) == t.content) {
          hit = &t;
          break;
        }
      }
    }
    if (!hit) {
      ++pos;
      continue;
    }
    if (pos > segment_start) text_segment(text.substr(segment_start, pos - segment_start));
    token(*hit);
    pos += hit->content.size();
    segment_start = pos;
  }
  if (segment_start < text.size()) text_segment(text.substr(segment_start));
}

const AddedToken* AddedTokens::find_by_id(int32_t id) const {
  for (const auto& t : tokens_) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

const AddedToken* AddedTokens::find_by_content(std::string_view content) const {
  for (const auto& t : tokens_) {
    if (t.content == content) return &t;
  }
  return nullptr;
}

}  // namespace rgbaq::tokenizer
