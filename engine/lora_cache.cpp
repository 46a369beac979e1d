#include "engine/lora_cache.h"

#include <system_error>

namespace rgbaq::engine {
namespace {

bool stat_file(const std::filesystem::path& path, uintmax_t& size, std::filesystem::file_time_type& mtime) {
  std::error_code ec;
  size = std::filesystem::file_size(path, ec);
  if (ec) return false;
  mtime = std::filesystem::last_write_time(path, ec);
  return !ec;
}

}  // namespace

std::list<LoraCache::Entry>::iterator LoraCache::find_fresh(const std::filesystem::path& path) const {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->path != path) continue;
    uintmax_t size = 0;
    std::filesystem::file_time_type mtime;
    if (!stat_file(path, size, mtime) || size != it->size || mtime != it->mtime) return entries_.end();
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.begin();
  }
  return entries_.end();
}

std::shared_ptr<const LoraAdapter> LoraCache::get(const std::string& name, const std::filesystem::path& path,
                                                  const DitConfig& config) {
  std::lock_guard lock(mutex_);
  if (auto it = find_fresh(path); it != entries_.end() && it->adapter->name == name) return it->adapter;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {  // a stale copy of this file goes
    if (it->path == path) {
      bytes_ -= it->adapter->bytes();
      entries_.erase(it);
      break;
    }
  }
  Entry e;
  e.path = path;
  stat_file(path, e.size, e.mtime);  // before the read: a write during it makes the next get read again
  e.adapter = load_lora(path, name, config);
  ++loads_;
  bytes_ += e.adapter->bytes();
  entries_.push_front(std::move(e));
  // The newest stays even when it alone is over the budget: the job that asked needs it.
  while (bytes_ > max_bytes_ && entries_.size() > 1) {
    bytes_ -= entries_.back().adapter->bytes();
    entries_.pop_back();
  }
  return entries_.front().adapter;
}

LoraSet LoraCache::resolve(const std::vector<LoraRequest>& requests, const DitConfig& config) {
  LoraSet set;
  for (const LoraRequest& r : requests) set.push_back({get(r.name, r.path, config), r.weight});
  return set;
}

bool LoraCache::holds_all(const std::vector<LoraRequest>& requests) const {
  std::lock_guard lock(mutex_);
  for (const LoraRequest& r : requests) {
    if (find_fresh(r.path) == entries_.end()) return false;
  }
  return true;
}

void LoraCache::set_max_bytes(size_t max_bytes) {
  std::lock_guard lock(mutex_);
  max_bytes_ = max_bytes;
}

size_t LoraCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

uint64_t LoraCache::loads() const {
  std::lock_guard lock(mutex_);
  return loads_;
}

}  // namespace rgbaq::engine
