#include "tokenizer/bpe_model.h"

#include <algorithm>
#include <stdexcept>

#include "tokenizer/byte_level.h"

namespace rgbaq::tokenizer {
namespace {

constexpr uint64_t kEmpty = ~0ull;

uint64_t mix(uint64_t k) {  // splitmix64 finaliser
  k ^= k >> 30;
  k *= 0xbf58476d1ce4e5b9ull;
  k ^= k >> 27;
  k *= 0x94d049bb133111ebull;
  return k ^ (k >> 31);
}

}  // namespace

BpeModel::BpeModel(const std::vector<std::pair<std::string, int32_t>>& vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges) {
  int32_t max_id = -1;
  for (const auto& entry : vocab) {
    if (entry.second < 0) throw std::runtime_error("vocabulary entry \"" + entry.first + "\" has a negative id");
    max_id = std::max(max_id, entry.second);
  }
  id_bytes_.assign(static_cast<size_t>(max_id + 1), std::string());
  bytes_id_.reserve(vocab.size());
  for (const auto& [spelled, id] : vocab) {
    auto bytes = byte_level_decode(spelled);
    if (!bytes || bytes->empty()) {
      throw std::runtime_error("vocabulary entry \"" + spelled + "\" (id " + std::to_string(id) +
                               ") is not a byte-level token");
    }
    bytes_id_.put(*bytes, id);
    id_bytes_[id] = std::move(*bytes);
  }
  for (int b = 0; b < 256; ++b) {
    const char byte = static_cast<char>(b);
    byte_id_[b] = bytes_id_.find(std::string_view(&byte, 1));
    if (byte_id_[b] < 0) throw std::runtime_error("the vocabulary has no token for byte " + std::to_string(b));
  }

  size_t capacity = 16;
  while (capacity < merges.size() * 2 + 16) capacity *= 2;
  merge_keys_.assign(capacity, kEmpty);
  merge_values_.assign(capacity, 0);
  merge_mask_ = capacity - 1;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    auto fail = [&](const std::string& what) {
      return std::runtime_error("merge " + std::to_string(rank) + " (\"" + left + "\" \"" + right + "\"): " + what);
    };
    const auto left_bytes = byte_level_decode(left), right_bytes = byte_level_decode(right);
    if (!left_bytes || !right_bytes) throw fail("not byte-level tokens");
    const int32_t a = bytes_id_.find(*left_bytes), b = bytes_id_.find(*right_bytes);
    const int32_t merged = bytes_id_.find(*left_bytes + *right_bytes);
    if (a < 0 || b < 0 || merged < 0) throw fail("a part or the merged token is not in the vocabulary");
    const uint64_t key = pair_key(a, b);
    for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
      // A repeated pair takes its last rank, as HF's collect() into a map does.
      if (merge_keys_[slot] == key || merge_keys_[slot] == kEmpty) {
        merge_keys_[slot] = key;
        merge_values_[slot] = (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(merged);
        break;
      }
    }
  }
}

bool BpeModel::find_merge(int32_t a, int32_t b, uint32_t& rank, int32_t& new_id) const {
  const uint64_t key = pair_key(a, b);
  for (uint64_t slot = mix(key) & merge_mask_;; slot = (slot + 1) & merge_mask_) {
    const uint64_t k = merge_keys_[slot];
    if (k == key) {
      rank = static_cast<uint32_t>(merge_values_[slot] >> 32);
      new_id = static_cast<int32_t>(merge_values_[slot] & 0xffffffffu);
      return true;
    }
    if (k == kEmpty) return false;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.size() == 1) {
    ids.push_back(byte_id_[static_cast<unsigned char>(word[0])]);
    return;
  }
  struct Symbol {
    int32_t id;
    int32_t prev, next;  // -1 at the ends
    bool removed;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<Candidate> queue;  // a min-heap on (rank, pos), reused across words
  symbols.clear();
  queue.clear();
  const int32_t n = static_cast<int32_t>(word.size());
  for (int32_t i = 0; i < n; ++i) {
    symbols.push_back({byte_id_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1, false});
  }
  auto consider = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    uint32_t rank;
    int32_t new_id;
    if (find_merge(symbols[pos].id, symbols[next].id, rank, new_id)) {
      queue.push_back({rank, pos, new_id});
      std::push_heap(queue.begin(), queue.end(), std::greater<>{});
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end(), std::greater<>{});
    const Candidate top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    const int32_t right_pos = left.next;
    Symbol& right = symbols[right_pos];
    uint32_t rank;
    int32_t new_id;
    // A stale entry: the pair at this position changed since it was queued.
    if (!find_merge(left.id, right.id, rank, new_id) || new_id != top.new_id) continue;
    left.id = top.new_id;
    left.next = right.next;
    right.removed = true;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

const std::string* BpeModel::bytes_of(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_bytes_.size() || id_bytes_[id].empty()) return nullptr;
  return &id_bytes_[id];
}

int32_t BpeModel::id_of(std::string_view bytes) const { return bytes_id_.find(bytes); }

}  // namespace rgbaq::tokenizer
