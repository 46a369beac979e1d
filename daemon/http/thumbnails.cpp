#include "daemon/http/thumbnails.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <spdlog/spdlog.h>
#include <webp/encode.h>

#include "storage/png_file.h"

namespace rgbaq::daemon::http {

std::vector<uint8_t> scale_rgba(const std::vector<uint8_t>& rgba, int width, int height, int size, int& ow, int& oh) {
  const double scale = std::min(1.0, static_cast<double>(size) / std::max(width, height));
  ow = std::max(1, static_cast<int>(width * scale + 0.5));
  oh = std::max(1, static_cast<int>(height * scale + 0.5));
  std::vector<uint8_t> out(static_cast<size_t>(ow) * oh * 4);
  const double sx = static_cast<double>(width) / ow, sy = static_cast<double>(height) / oh;
  for (int y = 0; y < oh; ++y) {
    const double y0 = y * sy, y1 = (y + 1) * sy;
    for (int x = 0; x < ow; ++x) {
      const double x0 = x * sx, x1 = (x + 1) * sx;
      double acc[4] = {0, 0, 0, 0}, area = 0;
      for (int iy = static_cast<int>(y0); iy < std::min(height, static_cast<int>(std::ceil(y1))); ++iy) {
        const double wy = std::min<double>(y1, iy + 1) - std::max<double>(y0, iy);
        for (int ix = static_cast<int>(x0); ix < std::min(width, static_cast<int>(std::ceil(x1))); ++ix) {
          const double w = wy * (std::min<double>(x1, ix + 1) - std::max<double>(x0, ix));
          const uint8_t* p = &rgba[(static_cast<size_t>(iy) * width + ix) * 4];
          const double a = p[3] / 255.0;
          for (int c = 0; c < 3; ++c) acc[c] += w * p[c] * a;
          acc[3] += w * a;
          area += w;
        }
      }
      uint8_t* q = &out[(static_cast<size_t>(y) * ow + x) * 4];
      const double alpha = area > 0 ? acc[3] / area : 0;
      for (int c = 0; c < 3; ++c) {
        const double v = acc[3] > 0 ? acc[c] / acc[3] : 0.0;  // un-premultiplied
        q[c] = static_cast<uint8_t>(std::clamp(v + 0.5, 0.0, 255.0));
      }
      q[3] = static_cast<uint8_t>(std::clamp(alpha * 255.0 + 0.5, 0.0, 255.0));
    }
  }
  return out;
}

std::string encode_webp(const std::vector<uint8_t>& rgba, int width, int height) {
  uint8_t* data = nullptr;
  const size_t n = WebPEncodeLosslessRGBA(rgba.data(), width, height, width * 4, &data);
  if (n == 0 || !data) throw std::runtime_error("libwebp could not encode a " + std::to_string(width) + "x" + std::to_string(height) + " thumbnail");
  std::string out(reinterpret_cast<const char*>(data), n);
  WebPFree(data);
  return out;
}

ThumbnailCache::ThumbnailCache(std::filesystem::path dir, uint64_t budget) : dir_(std::move(dir)), budget_(budget) {}

std::string ThumbnailCache::get(int64_t job, const ServedOutput& png, int size) {
  std::ostringstream name;
  name << job << "-" << size << "-" << png.size() << "-" << png.modified_ns() / 1000000000 << "." << png.modified_ns() % 1000000000 << ".webp";
  const auto path = dir_ / name.str();
  std::lock_guard lock(mutex_);
  if (std::ifstream in(path, std::ios::binary); in) {
    std::ostringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }
  const auto image = storage::read_png_bytes(png.read(), png.path());
  int w = 0, h = 0;
  const auto scaled = scale_rgba(image.rgba, image.width, image.height, size, w, h);
  std::string webp = encode_webp(scaled, w, h);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(webp.data(), static_cast<std::streamsize>(webp.size()));
    if (!out) {
      spdlog::warn("cannot keep a thumbnail in {} (served without keeping it)", dir_.string());
      std::filesystem::remove(temporary, ec);
      return webp;
    }
  }
  std::filesystem::rename(temporary, path, ec);
  if (known_bytes_ != kUnknown) known_bytes_ += webp.size();
  if (known_bytes_ == kUnknown || known_bytes_ > budget_) evict_over_budget();  // the first also learns what the folder holds
  return webp;
}

void ThumbnailCache::evict_over_budget() {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    if (!e.is_regular_file(ec) || e.path().extension() != ".webp") continue;
    total += e.file_size(ec);
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  known_bytes_ = total;
  if (total <= budget_) return;
  std::sort(files.begin(), files.end());
  for (const auto& [time, file] : files) {
    if (total <= budget_) break;
    const auto bytes = std::filesystem::file_size(file, ec);
    if (std::filesystem::remove(file, ec)) total -= bytes;
  }
  known_bytes_ = total;
}

}  // namespace rgbaq::daemon::http
