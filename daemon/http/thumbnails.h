#pragma once
// WebP thumbnails of finished outputs, with their alpha, made on first request and kept on disk
// (DATA_DIR/cache/thumbnails) within a byte budget: the least recently made go first. A thumbnail is
// keyed by the job, the size and the PNG's own size and time, so a re-rendered image gets a new one.
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/base/served_output.h"

namespace rgbaq::daemon::http {

inline constexpr int kMinThumbnail = 16, kMaxThumbnail = 1024;

// `rgba` (width x height) scaled so its longer side is `size` (never up), by area averaging over
// premultiplied alpha (a transparent pixel's colour does not bleed into its neighbours).
std::vector<uint8_t> scale_rgba(const std::vector<uint8_t>& rgba, int width, int height, int size, int& out_width, int& out_height);

// Lossless WebP with alpha (libwebp). Throws std::runtime_error when libwebp refuses.
std::string encode_webp(const std::vector<uint8_t>& rgba, int width, int height);

class ThumbnailCache {
 public:
  ThumbnailCache(std::filesystem::path dir, uint64_t budget_bytes);
  // The WebP bytes for `png` (the job's output, checked); throws std::runtime_error for a file that
  // cannot be read as a PNG.
  std::string get(int64_t job, const ServedOutput& png, int size);

 private:
  void evict_over_budget();

  static constexpr uint64_t kUnknown = ~uint64_t{0};
  std::filesystem::path dir_;
  uint64_t budget_;
  uint64_t known_bytes_ = kUnknown;  // what the folder holds, once scanned
  std::mutex mutex_;
};

}  // namespace rgbaq::daemon::http
