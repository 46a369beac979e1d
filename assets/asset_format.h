#pragma once
// The file formats the export stage writes an image in: PNG (libpng, through storage/) or WebP
// (libwebp, lossless, alpha kept, the colour under transparent pixels kept too).
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

}  // namespace rgbaq::assets
