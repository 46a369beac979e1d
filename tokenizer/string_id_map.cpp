#include "tokenizer/string_id_map.h"

#include <cstring>

namespace rgbaq::tokenizer {

uint64_t StringIdMap::hash_of(std::string_view key) {
  // FNV-1a over 8-byte words, then a splitmix finaliser: fast for short keys, well mixed.
  uint64_t h = 0xcbf29ce484222325ull ^ key.size();
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, key.data() + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, key.data() + i, key.size() - i);
  h = (h ^ tail) * 0x100000001b3ull;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

void StringIdMap::reserve(size_t entries) {
  size_t capacity = 16;
  while (capacity < entries * 2) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{});
  const size_t mask = capacity - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].id >= 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void StringIdMap::put(std::string_view key, int32_t id) {
  if ((size_ + 1) * 2 > slots_.size()) reserve(size_ + 1 > 8 ? size_ * 2 : 16);
  const uint64_t h = hash_of(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.id < 0) {
      s = {h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), id};
      arena_.append(key);
      ++size_;
      return;
    }
    if (s.hash == h && std::string_view(arena_).substr(s.offset, s.length) == key) {
      s.id = id;
      return;
    }
  }
}

int32_t StringIdMap::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_of(key);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && std::string_view(arena_).substr(s.offset, s.length) == key) return s.id;
  }
}

}  // namespace rgbaq::tokenizer
