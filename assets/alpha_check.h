#pragma once
// The alpha check of a finished RGBA8 image (issue 40): what its alpha holds and whether it looks like
// a usable asset. Computed once per image as its PNG is written (the daemon) and by `rgbaq qa`.
//
// With a the 8-bit alpha: transparent a <= 8, opaque a >= 247, partial otherwise.
//   transparent, opaque, partial  the fractions of the image's pixels
//   bbox       [x, y, w, h] of the smallest rectangle holding every pixel with a > 8 (none: no such pixel)
//   components the 8-connected regions of pixels with a >= 128 holding at least 0.05% of the image's
//              pixels and at least 4
//   edge       the fraction of the image's border pixels (its outermost rows and columns) with a >= 128
//   checker    the fraction of the image covered by a grey checker's cells found in the RGB (the rule is
//              at checker_cells in alpha_check.cpp, and in the README)
// Flags: empty (transparent >= 0.995), no_alpha (opaque >= 0.995), cut_off (edge >= 0.02), fragmented
// (components > 8), fake_transparency (a two-tone grey checker over >= 20% of the image, whatever the
// alpha); ok when none. Thresholds are compared on the exact counts, not on rounded fractions.
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "jobs/qa_flags.h"

namespace rgbaq::assets {

// The most alpha a transparent pixel has: the one definition of "transparent" (the check's figures, its
// bbox, and the export's trim, assets/trim.h).
inline constexpr int kTransparentAlphaMax = 8;

struct AlphaCheck {
  int width = 0, height = 0;
  uint64_t transparent_pixels = 0, opaque_pixels = 0, partial_pixels = 0;
  std::optional<std::array<int, 4>> bbox;  // x, y, w, h
  int components = 0;
  uint64_t border_pixels = 0, solid_border_pixels = 0;  // edge = solid_border_pixels / border_pixels
  int checker_cells = 0;                                // the checker's cells found
  uint64_t checker_pixels = 0;                          // the pixels they cover
  jobs::QaFlags flags = 0;

  uint64_t pixels() const { return uint64_t(width) * uint64_t(height); }
  double transparent() const;
  double opaque() const;
  double partial() const;
  double edge() const;
  double checker() const;
  std::string flags_text() const { return jobs::qa_flags_text(flags); }  // "ok" or "cut_off,fragmented"
};

// `rgba`: width * height pixels, 4 bytes each, rows top to bottom. Throws std::invalid_argument for a
// size that is not positive. Allocates per call, never per pixel: two rows' worth of bytes, and the
// components' runs (a few ints per run of solid pixels, grown as they are found).
AlphaCheck check_alpha(const uint8_t* rgba, int width, int height);

// The figures and flags as one JSON object, the form the queue, the PNG's metadata and `rgbaq qa --json`
// share: {"transparent", "opaque", "partial", "bbox" ([x, y, w, h] or null), "components", "edge",
// "checker", "flags" (an array of names, empty when ok)}; fractions as doubles (count / total).
nlohmann::json alpha_check_json(const AlphaCheck& check);
// The flags of such a JSON object, as AlphaCheck::flags_text() says them; throws std::invalid_argument
// when the object has no "flags" array of known names.
std::string qa_flags_of(const nlohmann::json& qa);

// A checker cell's least side in pixels (its greatest: a quarter of the image's shorter side), and the
// least number of cells fake_transparency needs beside their 20% of the image.
inline constexpr int kMinCheckerCell = 4;
inline constexpr int kMinCheckerCells = 4;

}  // namespace rgbaq::assets
