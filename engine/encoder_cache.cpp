#include "engine/encoder_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/hash.h"

namespace rgbaq::engine {
namespace {

constexpr char kMagic[8] = {'R', 'G', 'B', 'A', 'Q', 'E', 'M', '1'};

// File layout (little-endian): magic[8], identity length u32, identity, id count u32, ids i32[],
// rows u32, cols u32, payload f32[rows * cols], checksum u64 over everything before it.
struct Writer {
  std::string bytes;
  template <typename T>
  void put(const T& v) {
    bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_raw(const void* p, size_t n) { bytes.append(static_cast<const char*>(p), n); }
};

struct Reader {
  const std::string& bytes;
  size_t pos = 0;
  template <typename T>
  bool get(T& v) {
    if (pos + sizeof v > bytes.size()) return false;
    std::memcpy(&v, bytes.data() + pos, sizeof v);
    pos += sizeof v;
    return true;
  }
  bool get_raw(void* p, size_t n) {
    if (n > bytes.size() - pos) return false;
    std::memcpy(p, bytes.data() + pos, n);
    pos += n;
    return true;
  }
};

}  // namespace

EncoderCache::EncoderCache(std::string encoder_identity, size_t memory_budget_bytes, std::filesystem::path disk_dir,
                           uint64_t disk_budget_bytes)
    : identity_(std::move(encoder_identity)), budget_(memory_budget_bytes), dir_(std::move(disk_dir)), disk_budget_(disk_budget_bytes) {
  char prefix[24];
  std::snprintf(prefix, sizeof prefix, "%016llx-", static_cast<unsigned long long>(common::fnv1a(identity_.data(), identity_.size())));
  name_prefix_ = prefix;
  if (!dir_.empty()) scan_disk();
}

uint64_t EncoderCache::key_of(const std::vector<int32_t>& ids) const {
  return common::fnv1a(ids.data(), ids.size() * sizeof(int32_t), common::fnv1a(identity_.data(), identity_.size()));
}

std::filesystem::path EncoderCache::disk_path(const std::vector<int32_t>& ids) const {
  char name[40];
  std::snprintf(name, sizeof name, "%016llx.emb", static_cast<unsigned long long>(key_of(ids)));
  return dir_ / (name_prefix_ + name);
}

void EncoderCache::scan_disk() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    std::error_code fe;
    if (!e.is_regular_file(fe)) continue;
    const auto name = e.path().filename().string();
    // Another identity's entry, one named before names carried the identity, or a killed writer's
    // temporary: none of them is ever read again, so they go first.
    const bool ours = name.starts_with(name_prefix_) && name.ends_with(".emb");
    const uint64_t bytes = e.file_size(fe);
    const auto used = e.last_write_time(fe);
    if (!fe) index_disk(name, {bytes, used, ours});
  }
  evict_disk_over_budget();
}

void EncoderCache::index_disk(const std::string& name, DiskEntry entry) {
  forget_disk(name);
  disk_bytes_ += entry.bytes;
  disk_order_.emplace(entry.ours, entry.used, name);
  disk_.emplace(name, entry);
}

void EncoderCache::forget_disk(const std::string& name) {
  const auto it = disk_.find(name);
  if (it == disk_.end()) return;
  disk_bytes_ -= it->second.bytes;
  disk_order_.erase({it->second.ours, it->second.used, name});
  disk_.erase(it);
}

void EncoderCache::touch_disk(const std::filesystem::path& path) {
  const auto it = disk_.find(path.filename().string());
  if (it == disk_.end()) return;
  const std::string name = it->first;
  DiskEntry entry = it->second;
  entry.used = std::filesystem::file_time_type::clock::now();
  std::error_code ec;
  std::filesystem::last_write_time(path, entry.used, ec);  // the order for the next start; best effort
  index_disk(name, entry);
}

void EncoderCache::evict_disk_over_budget() {
  while (disk_bytes_ > disk_budget_ && !disk_order_.empty()) {
    const std::string victim = std::get<2>(*disk_order_.begin());
    std::error_code ec;
    std::filesystem::remove(dir_ / victim, ec);
    forget_disk(victim);
  }
}

bool EncoderCache::in_memory(const std::vector<int32_t>& ids) const {
  const auto it = entries_.find(key_of(ids));
  return it != entries_.end() && it->second.ids == ids;
}

void EncoderCache::remember(uint64_t key, const std::vector<int32_t>& ids, const Tensor& embeds) {
  if (const auto it = entries_.find(key); it != entries_.end()) {
    memory_bytes_ -= it->second.embeds.nbytes();
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }
  if (embeds.nbytes() > budget_) return;
  lru_.push_front(key);
  entries_[key] = {ids, embeds, lru_.begin()};
  memory_bytes_ += embeds.nbytes();
  while (memory_bytes_ > budget_ && !lru_.empty()) {
    const uint64_t victim = lru_.back();
    lru_.pop_back();
    memory_bytes_ -= entries_.at(victim).embeds.nbytes();
    entries_.erase(victim);
  }
}

std::optional<Tensor> EncoderCache::read_disk(const std::vector<int32_t>& ids) {
  const auto path = disk_path(ids);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  Reader r{bytes};
  char magic[8];
  uint32_t identity_len = 0, id_count = 0, rows = 0, cols = 0;
  uint64_t checksum = 0;
  std::string identity;
  std::vector<int32_t> stored_ids;
  std::vector<float> values;
  bool ok = r.get_raw(magic, 8) && std::memcmp(magic, kMagic, 8) == 0 && r.get(identity_len) && identity_len < 4096;
  if (ok) {
    identity.resize(identity_len);
    ok = r.get_raw(identity.data(), identity_len) && r.get(id_count) && id_count <= 1u << 20;
  }
  if (ok) {
    stored_ids.resize(id_count);
    ok = r.get_raw(stored_ids.data(), id_count * sizeof(int32_t)) && r.get(rows) && r.get(cols) &&
         uint64_t{rows} * cols <= (1ull << 28);
  }
  if (ok) {
    values.resize(size_t{rows} * cols);
    const size_t body = r.pos + values.size() * sizeof(float);
    ok = r.get_raw(values.data(), values.size() * sizeof(float)) && r.get(checksum) && r.pos == bytes.size() &&
         checksum == common::fnv1a(bytes.data(), body);
  }
  if (!ok || identity != identity_ || stored_ids != ids) {
    // Damaged, truncated, or another key's file under a colliding name: drop it and recompute.
    ++corrupt_;
    std::error_code ec;
    std::filesystem::remove(path, ec);
    forget_disk(path.filename().string());
    return std::nullopt;
  }
  touch_disk(path);
  return Tensor::from_f32({rows, cols}, std::move(values));
}

std::optional<Tensor> EncoderCache::find(const std::vector<int32_t>& ids, CacheSource* source) {
  const uint64_t key = key_of(ids);
  if (const auto it = entries_.find(key); it != entries_.end() && it->second.ids == ids) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    if (!dir_.empty()) touch_disk(disk_path(ids));  // a use of the disk copy too: it stays while the prompt is in use
    if (source) *source = CacheSource::kMemory;
    return it->second.embeds;
  }
  if (dir_.empty()) return std::nullopt;
  auto t = read_disk(ids);
  if (!t) return std::nullopt;
  remember(key, ids, *t);
  if (source) *source = CacheSource::kDisk;
  return t;
}

void EncoderCache::put(const std::vector<int32_t>& ids, const Tensor& embeds) {
  const Tensor owned = Tensor::from_f32(embeds.shape(), embeds.to_f32_vector());
  remember(key_of(ids), ids, owned);
  if (dir_.empty()) return;
  Writer w;
  w.put_raw(kMagic, 8);
  w.put(static_cast<uint32_t>(identity_.size()));
  w.put_raw(identity_.data(), identity_.size());
  w.put(static_cast<uint32_t>(ids.size()));
  w.put_raw(ids.data(), ids.size() * sizeof(int32_t));
  w.put(static_cast<uint32_t>(owned.dim(0)));
  w.put(static_cast<uint32_t>(owned.dim(1)));
  w.put_raw(owned.data(), owned.nbytes());
  w.put(common::fnv1a(w.bytes.data(), w.bytes.size()));
  if (w.bytes.size() > disk_budget_) return;  // it would evict everything, itself too
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto path = disk_path(ids);
  const auto tmp = path.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(w.bytes.data(), static_cast<std::streamsize>(w.bytes.size()));
    if (!out.flush()) {
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return;
  }
  // The use time set here, not the kernel's coarser write time, so that it orders with the hits' times.
  const auto now = std::filesystem::file_time_type::clock::now();
  std::filesystem::last_write_time(path, now, ec);
  index_disk(path.filename().string(), {w.bytes.size(), now, true});
  evict_disk_over_budget();
}

}  // namespace rgbaq::engine
