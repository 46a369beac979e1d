#include "assets/atlas_packer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace rgbaq::assets {
namespace {

// The skyline: the top edge of what is placed, as segments left to right covering [0, width).
class Skyline {
 public:
  Skyline(int width, int height) : width_(width), height_(height), segments_{{0, 0, width}} {}

  // Places a w x h rectangle where its top is lowest (then leftmost); false when it fits nowhere.
  bool place(int w, int h, PixelRect& at) {
    int best_top = std::numeric_limits<int>::max(), best_x = 0, best_y = 0;
    for (size_t i = 0; i < segments_.size(); ++i) {
      const int x = segments_[i].x;
      if (x + w > width_) break;
      int y = 0;  // the highest segment under [x, x + w)
      for (size_t j = i; j < segments_.size() && segments_[j].x < x + w; ++j) y = std::max(y, segments_[j].y);
      if (y + h > height_ || y + h >= best_top) continue;
      best_top = y + h;
      best_x = x;
      best_y = y;
    }
    if (best_top == std::numeric_limits<int>::max()) return false;
    at = {best_x, best_y, w, h};
    raise(best_x, w, best_top);
    return true;
  }

 private:
  struct Segment {
    int x, y, w;
  };

  // [x, x + w) now stands at `top`: the segments under it are cut away, neighbours of one height merged.
  void raise(int x, int w, int top) {
    std::vector<Segment> next;
    next.reserve(segments_.size() + 2);
    const auto add = [&](Segment s) {
      if (s.w <= 0) return;
      if (!next.empty() && next.back().y == s.y) {
        next.back().w += s.w;
      } else {
        next.push_back(s);
      }
    };
    bool added = false;
    for (const Segment& s : segments_) {
      const int end = s.x + s.w;
      if (end <= x || s.x >= x + w) {
        if (s.x >= x + w && !added) {
          add({x, top, w});
          added = true;
        }
        add(s);
        continue;
      }
      if (s.x < x) add({s.x, s.y, x - s.x});  // its part left of the new one
      if (!added) {
        add({x, top, w});
        added = true;
      }
      if (end > x + w) add({x + w, s.y, end - (x + w)});  // its part right of it
    }
    if (!added) add({x, top, w});
    segments_ = std::move(next);
  }

  int width_, height_;
  std::vector<Segment> segments_;
};

// `order`'s sizes placed on one width x height page, in order; those that do not fit are left in
// `rest` (when it is given) or make the whole packing fail (when it is not).
bool fill_page(const std::vector<PackSize>& sizes, const std::vector<int>& order, int width, int height, PackedPage& page,
               std::vector<int>* rest) {
  Skyline sky(width, height);
  page = {};
  for (const int i : order) {
    PixelRect at;
    if (sky.place(sizes[size_t(i)].w, sizes[size_t(i)].h, at)) {
      page.items.push_back(i);
      page.places.push_back(at);
      page.width = std::max(page.width, at.x + at.w);
      page.height = std::max(page.height, at.y + at.h);
    } else if (rest) {
      rest->push_back(i);
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<PackedPage> pack_atlas(const std::vector<PackSize>& sizes, int max_side) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i].w < 1 || sizes[i].h < 1 || sizes[i].w > max_side || sizes[i].h > max_side) {
      throw std::invalid_argument("a " + std::to_string(sizes[i].w) + "x" + std::to_string(sizes[i].h) + " image does not fit on a " +
                                  std::to_string(max_side) + "x" + std::to_string(max_side) + " atlas page");
    }
  }
  std::vector<int> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const PackSize &x = sizes[size_t(a)], &y = sizes[size_t(b)];
    return x.h != y.h ? x.h > y.h : x.w > y.w;
  });
  std::vector<PackedPage> pages;
  while (!order.empty()) {
    PackedPage page;
    if (!fill_page(sizes, order, max_side, max_side, page, nullptr)) {
      std::vector<int> rest;  // a full page, and what did not fit on it for the next
      fill_page(sizes, order, max_side, max_side, page, &rest);
      pages.push_back(std::move(page));
      order = std::move(rest);
      continue;
    }
    // Everything left fits on one page: the smallest square side that still takes it all (`page`
    // holds the packing at the smallest side that fitted so far). The packer is a heuristic, so a side
    // that fails may lie below one that fits; the search only needs one that fits.
    int64_t area = 0;
    int widest = 0, tallest = 0;
    for (const int i : order) {
      area += int64_t(sizes[size_t(i)].w) * sizes[size_t(i)].h;
      widest = std::max(widest, sizes[size_t(i)].w);
      tallest = std::max(tallest, sizes[size_t(i)].h);
    }
    int lo = std::max({widest, tallest, int(std::ceil(std::sqrt(double(area))))}), hi = max_side;
    lo = std::min(lo, hi);
    while (lo < hi) {
      const int mid = lo + (hi - lo) / 2;
      PackedPage trial;
      if (fill_page(sizes, order, mid, mid, trial, nullptr)) {
        hi = mid;
        page = std::move(trial);
      } else {
        lo = mid + 1;
      }
    }
    pages.push_back(std::move(page));
    break;
  }
  return pages;
}

}  // namespace rgbaq::assets
