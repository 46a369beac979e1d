#pragma once
// The file formats the export stage writes an image in: PNG (libpng, through storage/) or WebP
// (libwebp, lossless, alpha kept, the colour under transparent pixels kept too).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "assets/rgba_image.h"

namespace rgbaq::assets {

enum class AssetFormat { kPng, kWebp };

std::optional<AssetFormat> parse_asset_format(std::string_view name);  // "png", "webp"
const char* asset_format_name(AssetFormat format);                       // "png", "webp": also the extension
// The largest side a format takes (WebP: 16383).
int asset_format_max_side(AssetFormat format);

// The file's bytes. Throws std::runtime_error when the encoder fails.
std::string encode_asset(const RgbaImage& image, AssetFormat format);

// A WebP of width * height RGBA8 pixels, alpha kept: lossless and exact at quality 100 (the export's),
// else lossy at `quality` (0..100, the alpha plane lossless; the daemon's OpenAI-style images). Throws
// std::runtime_error when libwebp fails.
std::string encode_webp(const uint8_t* rgba, int width, int height, int quality);

}  // namespace rgbaq::assets
