#pragma once
// Prompt embeddings, kept so that a seed sweep encodes each prompt once, also across daemon restarts.
// Keyed by (text encoder identity, token ids): in memory under a byte budget (least recently used go
// first), and on disk as one file per entry that records its full key and a checksum, so a damaged or
// foreign file is detected, removed and recomputed rather than used. One thread uses a cache.
#include <cstdint>
#include <filesystem>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/tensor.h"

namespace rgbaq::engine {

enum class CacheSource { kMemory, kDisk };

class EncoderCache {
 public:
  // disk_dir empty: memory only. The directory is created when needed.
  EncoderCache(std::string encoder_identity, size_t memory_budget_bytes, std::filesystem::path disk_dir);

  // The embeddings for `ids`, and where they came from; nullopt on a miss.
  std::optional<Tensor> find(const std::vector<int32_t>& ids, CacheSource* source = nullptr);
  // Stores in memory and (best effort: a full disk only costs the disk copy) on disk.
  void put(const std::vector<int32_t>& ids, const Tensor& embeds);
  bool in_memory(const std::vector<int32_t>& ids) const;

  size_t memory_bytes() const { return memory_bytes_; }
  uint64_t corrupt_entries() const { return corrupt_; }
  std::filesystem::path disk_path(const std::vector<int32_t>& ids) const;

 private:
  struct Entry {
    std::vector<int32_t> ids;
    Tensor embeds;
    std::list<uint64_t>::iterator lru;
  };
  uint64_t key_of(const std::vector<int32_t>& ids) const;
  void remember(uint64_t key, const std::vector<int32_t>& ids, const Tensor& embeds);
  std::optional<Tensor> read_disk(const std::vector<int32_t>& ids);

  std::string identity_;
  size_t budget_;
  std::filesystem::path dir_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // most recent first
  size_t memory_bytes_ = 0;
  uint64_t corrupt_ = 0;
};

}  // namespace rgbaq::engine
