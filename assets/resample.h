#pragma once
// Resampling an RGBA image to another size through stb_image_resize (Debian's libstb-dev), in
// premultiplied space: colour weighted by alpha, so a colour under alpha 0 never bleeds into its
// neighbours (no dark or coloured fringe where a sprite's edge fades out).
//
// The arithmetic, which tests/assets reproduces in float64: each 8-bit pixel becomes floats
// A = a/255 and P = (c/255) * A; stb filters P and A separably with the filter below (edges clamped,
// linear colour space, alpha treated as any other channel: STBIR_FLAG_ALPHA_PREMULTIPLIED); each output
// pixel gets a = round(255 * clamp(A, 0, 1)), and, where a > 0, c = round(255 * clamp(P / A, 0, 1)),
// else c = 0.
// Along an axis of scale r = out/in, output pixel o takes input pixel i with weight K(d), normalised so
// that o's weights sum to 1, where d = (o + 0.5) - (i + 0.5) * r when r <= 1 (the kernel in output
// pixels) and d = (o + 0.5) / r - (i + 0.5) when r > 1 (in input pixels); inputs outside the image
// repeat its edge.
#include <utility>

#include "assets/rgba_image.h"

namespace rgbaq::assets {

// The filter K, picked per image by whether it shrinks: Mitchell-Netravali (B = C = 1/3, stb's
// STBIR_FILTER_MITCHELL) when it shrinks or keeps its size, Catmull-Rom (STBIR_FILTER_CATMULLROM) when
// it grows: stb's own defaults, named rather than left to its build.
enum class ResampleFilter { kMitchell, kCatmullRom };
ResampleFilter resample_filter_for(int from_longer, int to_longer);
const char* resample_filter_name(ResampleFilter filter);  // "mitchell", "catmull-rom"

// The size of a `width` x `height` image scaled so that its longer side is `longer` (aspect kept; the
// shorter side rounded, at least 1).
std::pair<int, int> fitted_size(int width, int height, int longer);

// `image` (straight alpha) resampled to `width` x `height` as above, straight alpha. The same size gives
// the image unchanged. Throws std::runtime_error if stb fails (out of memory).
RgbaImage resample(const RgbaImage& image, int width, int height);

}  // namespace rgbaq::assets
