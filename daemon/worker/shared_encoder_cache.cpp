#include "daemon/worker/shared_encoder_cache.h"

namespace rgbaq::daemon {

SharedEncoderCache::SharedEncoderCache(std::string encoder_identity, size_t memory_budget_bytes,
                                       std::filesystem::path disk_dir, uint64_t disk_budget_bytes, DaemonCounters& counters)
    : cache_(std::move(encoder_identity), memory_budget_bytes, std::move(disk_dir), disk_budget_bytes), counters_(counters) {
  publish_disk_usage();
}

void SharedEncoderCache::publish_disk_usage() {
  const auto usage = cache_.disk_usage();
  counters_.cache_disk_bytes = usage.bytes;
  counters_.cache_disk_entries = usage.entries;
  counters_.cache_disk_budget = usage.budget;
}

SharedEncoderCache::Lookup SharedEncoderCache::get(const std::vector<int32_t>& ids,
                                                   const std::function<engine::Tensor()>& encode) {
  std::unique_lock lock(mutex_);
  // Another worker encoding these ids: its result lands in the cache (or its failure leaves them to us).
  encoded_.wait(lock, [&] { return encoding_.count(ids) == 0; });
  engine::CacheSource source{};
  const uint64_t corrupt_before = cache_.corrupt_entries();
  auto cached = cache_.find(ids, &source);
  counters_.cache_corrupt += cache_.corrupt_entries() - corrupt_before;
  publish_disk_usage();
  if (cached) {
    ++(source == engine::CacheSource::kMemory ? counters_.cache_memory_hits : counters_.cache_disk_hits);
    return {std::move(*cached), true};
  }
  encoding_.insert(ids);
  lock.unlock();
  struct Done {  // however encode ends, the waiters are let go
    SharedEncoderCache& c;
    const std::vector<int32_t>& ids;
    ~Done() {
      {
        std::lock_guard l(c.mutex_);
        c.encoding_.erase(ids);
      }
      c.encoded_.notify_all();
    }
  };
  engine::Tensor embeds;
  {
    Done done{*this, ids};
    ++counters_.encoder_runs;
    embeds = encode();
    std::lock_guard l(mutex_);
    cache_.put(ids, embeds);
    publish_disk_usage();
  }
  return {std::move(embeds), false};
}

}  // namespace rgbaq::daemon
