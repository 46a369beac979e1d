#pragma once
// Packing rectangles into as few atlas pages as it can, each at most max_side pixels a side: a skyline
// packer (bottom-left: each rectangle goes where its top is lowest, then leftmost) over the rectangles
// sorted tallest first. Pages are filled one after the other at full size; the last (often the only)
// page is the smallest square that takes what is left, cut down to the area its rectangles use.
#include <vector>

#include "assets/rgba_image.h"

namespace rgbaq::assets {

struct PackSize {
  int w = 0, h = 0;
};

struct PackedPage {
  int width = 0, height = 0;      // the area used: no column or row of it is empty on the right or bottom
  std::vector<int> items;         // indices into the sizes packed, in the order they were placed
  std::vector<PixelRect> places;  // where each of `items` went (w, h its size)
};

// Every one of `sizes` (each 1..max_side a side) on some page, none overlapping. Throws
// std::invalid_argument naming the first size that is larger than a page.
std::vector<PackedPage> pack_atlas(const std::vector<PackSize>& sizes, int max_side);

}  // namespace rgbaq::assets
