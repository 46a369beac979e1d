#pragma once
// A compact byte-string -> id map for vocabularies (open addressing, keys packed in one arena): one
// allocation instead of one per entry, which makes loading a 150k-entry vocabulary fast.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::tokenizer {

class StringIdMap {
 public:
  void reserve(size_t entries);
  // Inserts or overwrites.
  void put(std::string_view key, int32_t id);
  // The id, or -1.
  int32_t find(std::string_view key) const;

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t offset = 0, length = 0;
    int32_t id = -1;  // -1: empty
  };
  static uint64_t hash_of(std::string_view key);
  void grow();

  std::vector<Slot> slots_;
  std::string arena_;
  size_t size_ = 0;
};

}  // namespace rgbaq::tokenizer
