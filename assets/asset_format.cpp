#include "assets/asset_format.h"

#include <webp/encode.h>

#include <stdexcept>

#include "storage/png_file.h"

namespace rgbaq::assets {
std::string encode_webp(const uint8_t* rgba, int width, int height, int quality) {
  WebPConfig config;
  WebPPicture picture;
  if (!WebPConfigInit(&config) || !WebPPictureInit(&picture)) throw std::runtime_error("libwebp: version mismatch");
  config.lossless = quality >= 100;
  config.exact = 1;  // lossless means lossless: the colour under transparent pixels is kept too
  config.quality = config.lossless ? 75.0f : static_cast<float>(quality);  // lossless: effort, not fidelity
  picture.use_argb = 1;
  picture.width = width;
  picture.height = height;
  WebPMemoryWriter writer;
  WebPMemoryWriterInit(&writer);
  picture.writer = WebPMemoryWrite;
  picture.custom_ptr = &writer;
  const bool ok = WebPValidateConfig(&config) && WebPPictureImportRGBA(&picture, rgba, width * 4) && WebPEncode(&config, &picture);
  const int error = picture.error_code;
  WebPPictureFree(&picture);
  std::string out(reinterpret_cast<const char*>(writer.mem), writer.size);
  WebPMemoryWriterClear(&writer);
  if (!ok) {
    throw std::runtime_error("libwebp could not encode a " + std::to_string(width) + "x" + std::to_string(height) + " image (error " +
                             std::to_string(error) + ")");
  }
  return out;
}

std::optional<AssetFormat> parse_asset_format(std::string_view name) {
  if (name == "png") return AssetFormat::kPng;
  if (name == "webp") return AssetFormat::kWebp;
  return std::nullopt;
}

const char* asset_format_name(AssetFormat format) { return format == AssetFormat::kPng ? "png" : "webp"; }

int asset_format_max_side(AssetFormat format) { return format == AssetFormat::kPng ? 65535 : WEBP_MAX_DIMENSION; }

std::string encode_asset(const RgbaImage& image, AssetFormat format) {
  if (format == AssetFormat::kWebp) return encode_webp(image.rgba.data(), image.width, image.height, 100);
  return storage::encode_png(image.rgba.data(), image.width, image.height, {});
}

}  // namespace rgbaq::assets
