#pragma once
// The image APIs' answers in the forms their clients ask for, made from the PNG as written: composited
// on white (OpenAI's `background: "opaque"`), as PNG (libpng, its text chunks kept) or WebP (libwebp,
// alpha kept), and base64 for JSON.
#include <cstdint>
#include <string>
#include <vector>

#include "storage/png_file.h"

namespace rgbaq::daemon::http {

// RGBA8 over opaque white: each colour c * a / 255 + 255 * (255 - a) / 255, rounded; alpha 255.
std::vector<uint8_t> composite_on_white(const std::vector<uint8_t>& rgba);

// An RGB PNG (alpha dropped: every pixel must be opaque already) with `texts` as iTXt chunks. Throws
// std::runtime_error when libpng fails.
std::string encode_png_rgb(const std::vector<uint8_t>& rgba, int width, int height, const std::vector<storage::PngText>& texts);

// A WebP with alpha: lossless at quality 100, else lossy at `quality` (0..100, the alpha plane lossless);
// the export stage's encoder (assets::encode_webp).
// Throws std::runtime_error when libwebp fails.
std::string encode_webp_rgba(const std::vector<uint8_t>& rgba, int width, int height, int quality);

std::string base64(const std::string& bytes);

}  // namespace rgbaq::daemon::http
