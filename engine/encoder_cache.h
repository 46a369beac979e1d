#pragma once
// Prompt embeddings, kept so that a seed sweep encodes each prompt once, also across daemon restarts.
// Keyed by (text encoder identity, token ids): in memory under a byte budget (least recently used go
// first), and on disk as one file per entry that records its full key and a checksum, so a damaged or
// foreign file is detected, removed and recomputed rather than used. The disk copy has its own byte
// budget: a file's name starts with its encoder identity's hash, and when the folder outgrows the
// budget the entries of other identities (stranded by a model change) go first, then this identity's
// least recently used. Use is recorded by the cache itself, in the file's modification time at each
// hit, so the order survives restarts (atime is often off, or relatime). One thread uses a cache.
#include <cstdint>
#include <filesystem>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "engine/model/tensor.h"

namespace rgbaq::engine {

enum class CacheSource { kMemory, kDisk };

class EncoderCache {
 public:
  // disk_dir empty: memory only. The directory is created when needed; one already there is listed
  // (names, sizes and times, no contents) and brought within disk_budget_bytes.
  EncoderCache(std::string encoder_identity, size_t memory_budget_bytes, std::filesystem::path disk_dir,
               uint64_t disk_budget_bytes = UINT64_MAX);

  // The embeddings for `ids`, and where they came from; nullopt on a miss.
  std::optional<Tensor> find(const std::vector<int32_t>& ids, CacheSource* source = nullptr);
  // Stores in memory and (best effort: a full disk only costs the disk copy) on disk.
  void put(const std::vector<int32_t>& ids, const Tensor& embeds);
  bool in_memory(const std::vector<int32_t>& ids) const;

  size_t memory_bytes() const { return memory_bytes_; }
  struct DiskUsage {
    uint64_t bytes = 0, budget = 0, entries = 0;  // what the folder holds (every identity's), and its budget
  };
  DiskUsage disk_usage() const { return {disk_bytes_, disk_budget_, disk_.size()}; }
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
  // The disk folder's index: what each file costs and when it was last used.
  struct DiskEntry {
    uint64_t bytes = 0;
    std::filesystem::file_time_type used;
    bool ours = false;  // of this encoder identity
  };
  void scan_disk();
  void index_disk(const std::string& name, DiskEntry entry);
  void forget_disk(const std::string& name);
  void touch_disk(const std::filesystem::path& path);  // records a use
  void evict_disk_over_budget();

  std::string identity_;
  size_t budget_;
  std::filesystem::path dir_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // most recent first
  size_t memory_bytes_ = 0;
  uint64_t corrupt_ = 0;
  std::string name_prefix_;  // this identity's files: "<identity hash>-"
  uint64_t disk_budget_;
  std::map<std::string, DiskEntry> disk_;  // by file name
  // Eviction order: other identities' first (ours = false sorts first), then the least recently used.
  std::set<std::tuple<bool, std::filesystem::file_time_type, std::string>> disk_order_;
  uint64_t disk_bytes_ = 0;
};

}  // namespace rgbaq::engine
