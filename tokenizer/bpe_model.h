#pragma once
// A byte-level BPE model (vocabulary + ranked merges), encoding raw-byte words to ids exactly as the
// HF tokenizers library does: the lowest-ranked pair first, the leftmost on ties.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/string_id_map.h"

namespace rgbaq::tokenizer {

class BpeModel {
 public:
  // vocab: byte-level spelling -> id. merges: pairs of spellings, rank = index. Throws
  // std::runtime_error naming the entry when a merge's parts or result are not in the vocabulary, or a
  // byte has no single-byte token.
  BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
           const std::vector<std::pair<std::string, std::string>>& merges);

  // Appends the ids of one pre-tokenized word (raw bytes, non-empty).
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;

  // The raw bytes of an id, or nullptr when the id is not in the vocabulary.
  const std::string* bytes_of(int32_t id) const;
  // The id of raw bytes, or -1.
  int32_t id_of(std::string_view bytes) const;
  size_t vocab_size() const { return id_bytes_.size(); }

 private:
  struct MergeTable;  // open addressing: (left << 32 | right) -> (rank << 32 | new id)
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  bool find_merge(int32_t a, int32_t b, uint32_t& rank, int32_t& new_id) const;

  std::vector<std::string> id_bytes_;  // by id; empty string for a hole
  StringIdMap bytes_id_;
  int32_t byte_id_[256];
  std::vector<uint64_t> merge_keys_, merge_values_;
  uint64_t merge_mask_ = 0;
};

}  // namespace rgbaq::tokenizer
