#include "tokenizer/string_id_map.h"

#include <cstring>

#include "common/hash.h"

namespace rgbaq::tokenizer {

uint64_t StringIdMap::hash_of(std::string_view key) { return common::mix(common::fnv1a(key)); }

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
