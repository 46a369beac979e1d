#pragma once
// The daemon's one encoder cache (engine/encoder_cache.h), shared by its render workers: an embedding
// one worker computed serves every other, and while one worker encodes a prompt, another that needs
// the same prompt waits for that encode instead of running its own, so a run's encoder runs are its
// distinct prompts however many workers render it.
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "daemon/base/daemon_state.h"
#include "engine/encoder_cache.h"

namespace rgbaq::daemon {

class SharedEncoderCache {
 public:
  // Counts its hits, misses (encoder runs) and corrupt disk entries in `counters`, and keeps its disk
  // folder's size there.
  SharedEncoderCache(std::string encoder_identity, size_t memory_budget_bytes, std::filesystem::path disk_dir,
                     uint64_t disk_budget_bytes, DaemonCounters& counters);

  struct Lookup {
    engine::Tensor embeds;
    bool cache_hit = false;  // from memory, disk, or another worker's encode
  };
  // The embeddings of `ids`: from the cache, or from another worker's encode of them in flight (waited
  // for), else from `encode()` on this thread, then kept for all. What `encode` throws passes through,
  // and a worker waiting for it encodes the prompt itself.
  Lookup get(const std::vector<int32_t>& ids, const std::function<engine::Tensor()>& encode);

 private:
  void publish_disk_usage();  // under mutex_
  std::mutex mutex_;
  std::condition_variable encoded_;
  engine::EncoderCache cache_;              // used under mutex_ only
  std::set<std::vector<int32_t>> encoding_;  // prompts being encoded by some worker now
  DaemonCounters& counters_;
};

}  // namespace rgbaq::daemon
