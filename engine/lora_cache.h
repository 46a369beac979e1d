#pragma once
// LoRA adapters loaded once and kept, least recently used first out, within a byte budget: a job that
// names a LoRA the last jobs used costs no file read. An adapter in use by a render stays alive (a
// shared pointer) even when the cache lets it go. A file changed on disk (size or time) is read again.
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "engine/lora.h"

namespace rgbaq::engine {

// What a job names: a LoRA file and its weight.
struct LoraRequest {
  std::string name;
  std::filesystem::path path;
  float weight = 1.0f;
};

class LoraCache {
 public:
  explicit LoraCache(size_t max_bytes = size_t{1} << 30) : max_bytes_(max_bytes) {}

  // The adapter, from the cache or read now (load_lora's errors pass through).
  std::shared_ptr<const LoraAdapter> get(const std::string& name, const std::filesystem::path& path,
                                         const DitConfig& config);
  LoraSet resolve(const std::vector<LoraRequest>& requests, const DitConfig& config);
  // Whether every file is held and unchanged: a job naming them starts without a read.
  bool holds_all(const std::vector<LoraRequest>& requests) const;

  void set_max_bytes(size_t max_bytes);
  size_t bytes() const;
  uint64_t loads() const;  // files read so far

 private:
  struct Entry {
    std::filesystem::path path;
    uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    std::shared_ptr<const LoraAdapter> adapter;
  };
  // The entry for `path` if held and unchanged, moved to the front; end() otherwise.
  std::list<Entry>::iterator find_fresh(const std::filesystem::path& path) const;

  size_t max_bytes_;
  mutable std::mutex mutex_;
  mutable std::list<Entry> entries_;  // most recently used first
  size_t bytes_ = 0;
  uint64_t loads_ = 0;
};

}  // namespace rgbaq::engine
