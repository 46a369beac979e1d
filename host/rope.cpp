#include "host/rope.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "host/contract_limits.h"

namespace rgbaq::host {
namespace {

constexpr const char* kCos = "cos";
constexpr const char* kSin = "sin";

std::filesystem::path table_path(const std::filesystem::path& host_dir, int axis, const char* kind) {
  return host_dir / ("rope_axis" + std::to_string(axis) + "_" + kind + ".f32");
}

std::vector<float> read_table(const std::filesystem::path& path, int width) {
  const auto expected = static_cast<std::uintmax_t>(RopeTables::kRows) * width * sizeof(float);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error("RoPE table " + path.string() + ": " + ec.message());
  if (size != expected) {
    throw std::runtime_error("RoPE table " + path.string() + " is " + std::to_string(size) + " bytes; expected " +
                             std::to_string(expected) + " ([9216, " + std::to_string(width) + "] fp32)");
  }
  std::vector<float> table(static_cast<size_t>(RopeTables::kRows) * width);
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char*>(table.data()), static_cast<std::streamsize>(expected))) {
    throw std::runtime_error("RoPE table " + path.string() + ": read failed");
  }
  static_assert(std::endian::native == std::endian::little, "table files are little-endian");
  return table;
}

}  // namespace

RopeTables RopeTables::from_formula() {
  RopeTables t;
  for (int axis = 0; axis < 3; ++axis) {
    const int pairs = kAxisWidths[axis];
    const int d = 2 * pairs;
    std::vector<float> inv_freq(pairs);
    for (int j = 0; j < pairs; ++j) {
      const float exponent = static_cast<float>(2 * j) / static_cast<float>(d);
      const float base_pow = static_cast<float>(std::pow(10000.0, static_cast<double>(exponent)));
      inv_freq[j] = 1.0f / base_pow;
    }
    t.cos_[axis].resize(static_cast<size_t>(kRows) * pairs);
    t.sin_[axis].resize(static_cast<size_t>(kRows) * pairs);
    for (int row = 0; row < kRows; ++row) {
      const float pos = static_cast<float>(row + kMinPosition);
      for (int j = 0; j < pairs; ++j) {
        const float angle = pos * inv_freq[j];
        t.cos_[axis][static_cast<size_t>(row) * pairs + j] = static_cast<float>(std::cos(static_cast<double>(angle)));
        t.sin_[axis][static_cast<size_t>(row) * pairs + j] = static_cast<float>(std::sin(static_cast<double>(angle)));
      }
    }
  }
  return t;
}

RopeTables RopeTables::from_files(const std::filesystem::path& host_dir) {
  RopeTables t;
  for (int axis = 0; axis < 3; ++axis) {
    t.cos_[axis] = read_table(table_path(host_dir, axis, kCos), kAxisWidths[axis]);
    t.sin_[axis] = read_table(table_path(host_dir, axis, kSin), kAxisWidths[axis]);
  }
  t.from_files_ = true;
  return t;
}

RopeTables RopeTables::for_model(const std::filesystem::path& model_dir) {
  const auto host_dir = model_dir / "host";
  for (int axis = 0; axis < 3; ++axis) {
    for (const char* kind : {kCos, kSin}) {
      // One file present means the directory ships tables: all six must then load.
      if (std::filesystem::exists(table_path(host_dir, axis, kind))) return from_files(host_dir);
    }
  }
  return from_formula();
}

const float* RopeTables::cos_row(int axis, int position) const {
  return cos_[axis].data() + static_cast<size_t>(position - kMinPosition) * kAxisWidths[axis];
}

const float* RopeTables::sin_row(int axis, int position) const {
  return sin_[axis].data() + static_cast<size_t>(position - kMinPosition) * kAxisWidths[axis];
}

void check_rope_positions(const ImageSize& size) {
  // Image token (y, x) sits at (L, y - (h - h/2), x - (w - w/2)); L <= kMaxTextTokens has rows.
  const int h = size.grid_height(), w = size.grid_width();
  for (const auto& [axis, n] : {std::pair{1, h}, std::pair{2, w}}) {
    const int first = -(n - n / 2), last = n / 2 - 1;
    for (const int pos : {first, last}) {
      if (pos < RopeTables::kMinPosition || pos > RopeTables::kMaxPosition) {
        throw std::invalid_argument("RoPE position " + std::to_string(pos) + " on axis " + std::to_string(axis) +
                                    " is outside the tables' rows -1024..8191 (size " + size.to_string() + ")");
      }
    }
  }
}

RopeTensors build_rope(const RopeTables& tables, int text_len, const ImageSize& size) {
  check_text_tokens(text_len);
  check_image_size(size);
  check_rope_positions(size);
  const int h = size.grid_height(), w = size.grid_width();
  RopeTensors r;
  r.text_len = text_len;
  r.image_tokens = h * w;
  r.txt_cos.resize(static_cast<size_t>(text_len) * 64);
  r.txt_sin.resize(r.txt_cos.size());
  r.img_cos.resize(static_cast<size_t>(r.image_tokens) * 64);
  r.img_sin.resize(r.img_cos.size());

  auto put = [&](float* cos_out, float* sin_out, const std::array<int, 3>& pos) {
    for (int axis = 0; axis < 3; ++axis) {
      if (pos[axis] < RopeTables::kMinPosition || pos[axis] > RopeTables::kMaxPosition) {
        throw std::invalid_argument("RoPE position " + std::to_string(pos[axis]) + " on axis " + std::to_string(axis) +
                                    " is outside the tables' rows -1024..8191 (L " + std::to_string(text_len) +
                                    ", size " + size.to_string() + ")");
      }
      const int width = RopeTables::kAxisWidths[axis];
      std::memcpy(cos_out, tables.cos_row(axis, pos[axis]), width * sizeof(float));
      std::memcpy(sin_out, tables.sin_row(axis, pos[axis]), width * sizeof(float));
      cos_out += width;
      sin_out += width;
    }
  };
  for (int i = 0; i < text_len; ++i) put(&r.txt_cos[i * 64], &r.txt_sin[i * 64], {i, i, i});
  const int y0 = h - h / 2, x0 = w - w / 2;  // the grid is centred on zero
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const size_t n = static_cast<size_t>(y) * w + x;
      put(&r.img_cos[n * 64], &r.img_sin[n * 64], {text_len, y - y0, x - x0});
    }
  }
  return r;
}

}  // namespace rgbaq::host
