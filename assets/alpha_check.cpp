#include "assets/alpha_check.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rgbaq::assets {
namespace {

constexpr int kOpaqueMin = 247;     // a >= 247: opaque
constexpr int kSolidMin = 128;      // a >= 128: part of a component, and a solid border pixel

// The checker rule's constants (see checker_cells).
constexpr int kGreyChroma = 12;     // a grey pixel's channels lie within this of each other
constexpr int kToneTolerance = 6;   // a grey pixel has a tone when its green is within this of it
constexpr int kMinContrast = 16;    // the two tones differ by at least this
constexpr int kMinDarkTone = 64;    // editors draw light or mid greys: the darker tone is at least #404040

const uint8_t* pixel(const uint8_t* rgba, int width, int x, int y) {
  return rgba + (static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
}

// A pixel read as one little-endian word (R in the low byte, alpha in the high one): loops over words
// vectorize where loops over bytes four apart do not.
static_assert(std::endian::native == std::endian::little, "the pixel words below assume little-endian");
uint32_t word(const uint8_t* row, int x) {
  uint32_t v;
  std::memcpy(&v, row + 4 * static_cast<size_t>(x), 4);
  return v;
}
uint32_t alpha(const uint8_t* row, int x) { return word(row, x) >> 24; }

// The green of a grey pixel (its channels within kGreyChroma of each other), else -1.
[[gnu::always_inline]] inline int grey_level(const uint8_t* p) {
  const int r = p[0], g = p[1], b = p[2];
  return std::max({r, g, b}) - std::min({r, g, b}) <= kGreyChroma ? g : -1;
}

// A checker's tone: the grey level of the pixel that showed it, and that pixel's RGB. A pixel of the
// same RGB has the tone at once (a drawn checker is flat); any other is measured.
struct Tone {
  int level;
  uint32_t rgb;
  static Tone of(const uint8_t* p) { return {grey_level(p), word(p, 0) & 0xffffffu}; }
  bool in(const uint8_t* p) const {
    if ((word(p, 0) & 0xffffffu) == rgb) return true;
    const int l = grey_level(p);
    return l >= 0 && std::abs(l - level) <= kToneTolerance;
  }
};

// The cell whose upper-left pixel is (x, y), of tone `t1`, beside cells of tone `t2` to its left and
// above: its area when it is one, else 0. Its sides are the runs of t1 along its top row and left
// column, each of which must end on t2 inside the image; it must be square (within a pixel, for a
// checker drawn at a fractional scale), at least kMinCheckerCell and at most a quarter of the shorter
// side of the image, every pixel in it of tone t1, and the pixels along its top and left sides of t2.
uint64_t cell_at(const uint8_t* rgba, int width, int height, int x, int y, const Tone& t1, const Tone& t2) {
  int w = 0;
  while (x + w < width && t1.in(pixel(rgba, width, x + w, y))) ++w;
  if (x + w == width || !t2.in(pixel(rgba, width, x + w, y))) return 0;
  int h = 0;
  while (y + h < height && t1.in(pixel(rgba, width, x, y + h))) ++h;
  if (y + h == height || !t2.in(pixel(rgba, width, x, y + h))) return 0;
  const int largest = std::min(width, height) / 4;
  if (std::min(w, h) < kMinCheckerCell || std::max(w, h) > largest || std::abs(w - h) > 1) return 0;
  for (int i = 0; i < w; ++i) {
    if (!t2.in(pixel(rgba, width, x + i, y - 1))) return 0;
  }
  for (int j = 0; j < h; ++j) {
    if (!t2.in(pixel(rgba, width, x - 1, y + j))) return 0;
  }
  for (int j = 1; j < h; ++j) {  // row 0 and column 0 were walked already
    const uint8_t* row = pixel(rgba, width, x, y + j);
    // Eight pixels at a time without a branch (vectorized): a row of the cell's own RGB passes at once.
    uint32_t other = 0;
    int i = 1;
    for (; i + 8 <= w; i += 8) {
      for (int k = 0; k < 8; ++k) other |= (word(row, i + k) ^ t1.rgb) & 0xffffffu;
    }
    for (; i < w; ++i) other |= (word(row, i) ^ t1.rgb) & 0xffffffu;
    if (other == 0) continue;
    for (i = 1; i < w; ++i) {
      if (!t1.in(row + 4 * i)) return 0;
    }
  }
  return static_cast<uint64_t>(w) * static_cast<uint64_t>(h);
}

constexpr int kBlock = 64;  // pixels a vectorized loop takes at a time

void green_of_row(const uint8_t* __restrict row, int width, uint8_t* __restrict green) {
  int x = 0;
  for (; x + kBlock <= width; x += kBlock) {
    for (int i = 0; i < kBlock; ++i) green[x + i] = uint8_t(word(row, x + i) >> 8);
  }
  for (; x < width; ++x) green[x] = row[4 * x + 1];
}

void solid_of_row(const uint8_t* __restrict row, int width, uint8_t* __restrict solid) {
  int x = 0;
  for (; x + kBlock <= width; x += kBlock) {
    for (int i = 0; i < kBlock; ++i) solid[x + i] = alpha(row, x + i) >= kSolidMin;
  }
  for (; x < width; ++x) solid[x] = alpha(row, x) >= kSolidMin;
}

uint8_t distance(uint8_t p, uint8_t q) { return uint8_t(std::max(p, q) - std::min(p, q)); }

// Whether (x, y) may be a checker's corner, on the green channel alone: the pixel d, c left of it, b
// above it and a above-left, with d and c kMinContrast apart, a like d and b like c.
[[gnu::always_inline]] inline uint8_t corner_on_green(const uint8_t* above, const uint8_t* row, int x) {
  const uint8_t d = row[x], c = row[x - 1], b = above[x], a = above[x - 1];
  return uint8_t((distance(d, c) >= kMinContrast) & (distance(a, d) <= kToneTolerance) & (distance(b, c) <= kToneTolerance));
}

// The fake_transparency rule. A checker's cells meet four at a corner: 2x2 pixels, all grey, whose
// diagonal pairs have one tone each (within kToneTolerance), the two tones at least kMinContrast apart
// and the darker at least kMinDarkTone. From each such corner the cell to its lower right is measured
// and verified (cell_at); each cell has one upper-left corner, so none counts twice. Noise has no flat
// cells, a flat image no second tone, and stripes (straight or diagonal, 2 px wide or more) no corner
// whose diagonal pairs match. Cells along the image's right and bottom sides, or cut by an object in
// front, are not counted: the figure is a lower bound of the checker's extent.
void checker_cells(const uint8_t* rgba, int width, int height, AlphaCheck& check) {
  // The green channel of two rows, each row's taken out once: the first test runs on bytes side by side,
  // 16 or 32 to an instruction once vectorized.
  std::vector<uint8_t> above_green(static_cast<size_t>(width)), row_green(static_cast<size_t>(width));
  green_of_row(pixel(rgba, width, 0, 0), width, above_green.data());
  uint8_t candidate[kBlock];
  for (int y = 1; y < height; ++y) {
    const uint8_t* above = pixel(rgba, width, 0, y - 1);
    const uint8_t* row = pixel(rgba, width, 0, y);
    green_of_row(row, width, row_green.data());
    for (int x0 = 1; x0 < width; x0 += kBlock) {
      const int n = std::min(kBlock, width - x0);
      uint8_t any = 0;
      if (n == kBlock) {  // a fixed length, which compilers vectorize at -O2
        for (int i = 0; i < kBlock; ++i) any |= candidate[i] = corner_on_green(above_green.data(), row_green.data(), x0 + i);
      } else {
        for (int i = 0; i < n; ++i) any |= candidate[i] = corner_on_green(above_green.data(), row_green.data(), x0 + i);
      }
      if (!any) continue;
      for (int i = 0; i < n; ++i) {
        if (!candidate[i]) continue;
        const int x = x0 + i;
        const Tone t1 = Tone::of(row + 4 * x), t2 = Tone::of(row + 4 * x - 4);
        if (t1.level < 0 || t2.level < 0 || std::abs(t1.level - t2.level) < kMinContrast ||
            std::min(t1.level, t2.level) < kMinDarkTone) {
          continue;
        }
        if (!t1.in(above + 4 * x - 4) || !t2.in(above + 4 * x)) continue;
        if (const uint64_t area = cell_at(rgba, width, height, x, y, t1, t2)) {
          ++check.checker_cells;
          check.checker_pixels += area;
        }
      }
    }
    above_green.swap(row_green);
  }
}

// Union-find over the runs of solid pixels (a >= 128) of each row: two runs in adjacent rows are one
// region when they overlap or touch diagonally (8-connectivity).
struct Runs {
  std::vector<int> x0, x1, parent;  // [x0, x1) in a row

  int root(int i) {
    while (parent[i] != i) {
      parent[i] = parent[parent[i]];
      i = parent[i];
    }
    return i;
  }
  void join(int i, int j) {
    i = root(i);
    j = root(j);
    if (i != j) parent[std::max(i, j)] = std::min(i, j);
  }
};

int count_components(const uint8_t* rgba, int width, int height, uint64_t min_pixels) {
  Runs runs;
  size_t prev_begin = 0, prev_end = 0;
  // Each row as bytes, 1 where solid: its runs' ends are then found by memchr (vectorized in libc).
  std::vector<uint8_t> solid(static_cast<size_t>(width));
  for (int y = 0; y < height; ++y) {
    solid_of_row(pixel(rgba, width, 0, y), width, solid.data());
    const size_t begin = runs.x0.size();
    const uint8_t* const row = solid.data();
    for (const uint8_t* at = row; at < row + width;) {
      const auto* start = static_cast<const uint8_t*>(std::memchr(at, 1, size_t(row + width - at)));
      if (!start) break;
      const auto* stop = static_cast<const uint8_t*>(std::memchr(start, 0, size_t(row + width - start)));
      if (!stop) stop = row + width;
      runs.x0.push_back(int(start - row));
      runs.x1.push_back(int(stop - row));
      runs.parent.push_back(static_cast<int>(runs.parent.size()));
      at = stop;
    }
    const size_t end = runs.x0.size();
    // Both rows' runs are in x order: a run of the row above touches [x0, x1) when its x1 >= x0 (its last
    // pixel at x0 - 1 or later) and its x0 <= x1 (its first pixel at x1 or earlier).
    size_t q = prev_begin;
    for (size_t r = begin; r < end; ++r) {
      while (q < prev_end && runs.x1[q] < runs.x0[r]) ++q;
      for (size_t k = q; k < prev_end && runs.x0[k] <= runs.x1[r]; ++k) runs.join(static_cast<int>(k), static_cast<int>(r));
    }
    prev_begin = begin;
    prev_end = end;
  }
  std::vector<uint64_t> sizes(runs.x0.size(), 0);
  for (size_t i = 0; i < runs.x0.size(); ++i) sizes[runs.root(static_cast<int>(i))] += uint64_t(runs.x1[i] - runs.x0[i]);
  return static_cast<int>(std::count_if(sizes.begin(), sizes.end(), [&](uint64_t s) { return s >= min_pixels; }));
}

double fraction(uint64_t part, uint64_t whole) { return whole == 0 ? 0.0 : double(part) / double(whole); }

}  // namespace

double AlphaCheck::transparent() const { return fraction(transparent_pixels, pixels()); }
double AlphaCheck::opaque() const { return fraction(opaque_pixels, pixels()); }
double AlphaCheck::partial() const { return fraction(partial_pixels, pixels()); }
double AlphaCheck::edge() const { return fraction(solid_border_pixels, border_pixels); }
double AlphaCheck::checker() const { return fraction(checker_pixels, pixels()); }

AlphaCheck check_alpha(const uint8_t* rgba, int width, int height) {
  if (width <= 0 || height <= 0) {
    throw std::invalid_argument("alpha check: the image is " + std::to_string(width) + "x" + std::to_string(height));
  }
  AlphaCheck check;
  check.width = width;
  check.height = height;
  int left = width, right = -1, top = height, bottom = -1;
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = pixel(rgba, width, 0, y);
    // In blocks of a fixed length, which compilers vectorize at -O2 (a loop of unknown length they may not).
    uint32_t transparent = 0, opaque = 0;
    int x = 0;
    for (; x + 64 <= width; x += 64) {
      for (int i = 0; i < 64; ++i) {
        const uint32_t a = alpha(row, x + i);
        transparent += a <= kTransparentAlphaMax;
        opaque += a >= kOpaqueMin;
      }
    }
    for (; x < width; ++x) {
      const uint32_t a = alpha(row, x);
      transparent += a <= kTransparentAlphaMax;
      opaque += a >= kOpaqueMin;
    }
    check.transparent_pixels += transparent;
    check.opaque_pixels += opaque;
    if (transparent < uint32_t(width)) {
      // A visible pixel in this row: the box widens only to one left of `left` or right of `right`, so
      // only those pixels are looked at (an image's rows cost little once the box is wide).
      for (int x = 0; x < left; ++x) {
        if (alpha(row, x) > kTransparentAlphaMax) left = x;
      }
      for (int x = width - 1; x > right; --x) {
        if (alpha(row, x) > kTransparentAlphaMax) right = x;
      }
      top = std::min(top, y);
      bottom = y;
    }
    // The border: the first and last rows whole, the first and last pixels of the others.
    if (y == 0 || y == height - 1) {
      check.border_pixels += uint64_t(width);
      for (int x = 0; x < width; ++x) check.solid_border_pixels += row[4 * x + 3] >= kSolidMin;
    } else {
      check.border_pixels += width == 1 ? 1 : 2;
      check.solid_border_pixels += row[3] >= kSolidMin;
      if (width > 1) check.solid_border_pixels += row[4 * (width - 1) + 3] >= kSolidMin;
    }
  }
  check.partial_pixels = check.pixels() - check.transparent_pixels - check.opaque_pixels;
  if (right >= 0) check.bbox = std::array<int, 4>{left, top, right - left + 1, bottom - top + 1};

  // At least 0.05% of the pixels (size * 2000 >= pixels) and at least 4.
  const uint64_t min_pixels = std::max<uint64_t>(4, (check.pixels() + 1999) / 2000);
  check.components = count_components(rgba, width, height, min_pixels);
  checker_cells(rgba, width, height, check);

  using jobs::QaFlag;
  using jobs::qa_bit;
  const uint64_t n = check.pixels();
  if (check.transparent_pixels * 1000 >= n * 995) check.flags |= qa_bit(QaFlag::kEmpty);
  if (check.opaque_pixels * 1000 >= n * 995) check.flags |= qa_bit(QaFlag::kNoAlpha);
  if (check.solid_border_pixels * 50 >= check.border_pixels) check.flags |= qa_bit(QaFlag::kCutOff);
  if (check.components > 8) check.flags |= qa_bit(QaFlag::kFragmented);
  if (check.checker_cells >= kMinCheckerCells && check.checker_pixels * 5 >= n) check.flags |= qa_bit(QaFlag::kFakeTransparency);
  return check;
}

nlohmann::json alpha_check_json(const AlphaCheck& check) {
  nlohmann::json flags = nlohmann::json::array();
  for (int i = 0; i < jobs::kQaFlagCount; ++i) {
    const auto flag = static_cast<jobs::QaFlag>(i);
    if (check.flags & jobs::qa_bit(flag)) flags.push_back(std::string(jobs::qa_flag_name(flag)));
  }
  return {{"transparent", check.transparent()},
          {"opaque", check.opaque()},
          {"partial", check.partial()},
          {"bbox", check.bbox ? nlohmann::json(*check.bbox) : nlohmann::json(nullptr)},
          {"components", check.components},
          {"edge", check.edge()},
          {"checker", check.checker()},
          {"flags", flags}};
}

std::string qa_flags_of(const nlohmann::json& qa) {
  const auto it = qa.is_object() ? qa.find("flags") : qa.end();
  if (it == qa.end() || !it->is_array()) throw std::invalid_argument("the alpha check has no \"flags\" array");
  jobs::QaFlags flags = 0;
  for (const auto& name : *it) {
    const auto flag = name.is_string() ? jobs::parse_qa_flag(name.get<std::string>()) : std::nullopt;
    if (!flag) throw std::invalid_argument("the alpha check names an unknown flag " + name.dump());
    flags |= jobs::qa_bit(*flag);
  }
  return jobs::qa_flags_text(flags);
}

}  // namespace rgbaq::assets
