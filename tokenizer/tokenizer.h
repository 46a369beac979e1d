#pragma once
// A Qwen2-style byte-level BPE tokenizer loaded from an HF tokenizer.json, giving the ids the HF
// tokenizers library gives (encode with add_special_tokens = false). Features the file uses that this
// implementation does not have are a load error that names them, never a silent difference.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"

namespace rgbaq::tokenizer {

class Tokenizer {
 public:
  // Throws std::runtime_error naming the file and the unsupported or malformed part, or the limit it
  // is over (32 MiB, 64 levels of nesting, 2 Mi values: checked before parsing).
  static Tokenizer from_file(const std::filesystem::path& path);
  static Tokenizer from_json(std::string_view json_text, const std::string& source_name);

  // Added tokens are matched in the raw text; the rest is NFC-normalized, split, and BPE-encoded.
  // Throws std::invalid_argument naming the byte offset when `text` is not valid UTF-8.
  std::vector<int32_t> encode(std::string_view text) const;

  // The bytes the ids stand for (added tokens as their text). Throws on an id outside the vocabulary.
  std::string decode(std::span<const int32_t> ids) const;

  // The id of an added token or a vocabulary entry (raw bytes), if any.
  std::optional<int32_t> token_id(std::string_view content) const;
  // One past the largest id (the embedding table needs at least this many rows).
  int32_t id_limit() const;
  const std::string& source() const { return source_; }

 private:
  Tokenizer(std::string source, std::unique_ptr<BpeModel> model, AddedTokens added);

  std::string source_;
  std::unique_ptr<BpeModel> model_;
  AddedTokens added_;
};

}  // namespace rgbaq::tokenizer
