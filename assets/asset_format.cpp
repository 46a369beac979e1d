#include "assets/asset_format.h"

#include <webp/encode.h>

#include <stdexcept>

#include "storage/png_file.h"

namespace rgbaq::assets {
namespace {

std::string encode_webp_lossless(const RgbaImage& image) {
  WebPConfig config;
  WebPPicture picture;
  if (!WebPConfigInit(&config) || !WebPPictureInit(&picture)) throw std::runtime_error("libwebp: version mismatch");
  config.lossless = 1;
  config.exact = 1;  // every pixel as given, the colour under alpha 0 included
  picture.use_argb = 1;
  picture.width = image.width;
  picture.height = image.height;
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  picture.writer = WebPMemoryWrite;
  picture.custom_ptr = &writer;
  const bool ok = WebPValidateConfig(&config) && WebPPictureImportRGBA(&picture, image.rgba.data(), image.width * 4) &&
                  WebPEncode(&config, &picture);
  const int error = picture.error_code;
  WebPPictureFree(&picture);
  std::string out(reinterpret_cast<const char*>(writer.mem), writer.size);
  WebPMemoryWriterClear(&writer);
  if (!ok) {
    throw std::runtime_error("libwebp could not encode a " + std::to_string(image.width) + "x" + std::to_string(image.height) +
                             " image (error " + std::to_string(error) + ")");
  }
  return out;
}

}  // namespace

std::optional<AssetFormat> parse_asset_format(std::string_view name) {
  if (name == "png") return AssetFormat::kPng;
  if (name == "webp") return AssetFormat::kWebp;
  return std::nullopt;
}

const char* asset_format_name(AssetFormat format) { return format == AssetFormat::kPng ? "png" : "webp"; }

int asset_format_max_side(AssetFormat format) { return format == AssetFormat::kPng ? 65535 : WEBP_MAX_DIMENSION; }

std::string encode_asset(const RgbaImage& image, AssetFormat format) {
  if (format == AssetFormat::kWebp) return encode_webp_lossless(image);
  return storage::encode_png(image.rgba.data(), image.width, image.height, {});
}

}  // namespace rgbaq::assets
