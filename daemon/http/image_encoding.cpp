#include "daemon/http/image_encoding.h"

#include "assets/asset_format.h"

namespace rgbaq::daemon::http {

std::vector<uint8_t> composite_on_white(const std::vector<uint8_t>& rgba) {
  std::vector<uint8_t> out(rgba.size());
  for (size_t i = 0; i + 3 < rgba.size(); i += 4) {
    const unsigned a = rgba[i + 3];
    for (int c = 0; c < 3; ++c) out[i + c] = static_cast<uint8_t>((rgba[i + c] * a + 255u * (255u - a) + 127u) / 255u);
    out[i + 3] = 255;
  }
  return out;
}

std::string encode_png_rgb(const std::vector<uint8_t>& rgba, int width, int height, const std::vector<storage::PngText>& texts) {
  return storage::encode_png(rgba.data(), width, height, texts, true);
}

std::string encode_webp_rgba(const std::vector<uint8_t>& rgba, int width, int height, int quality) {
  return assets::encode_webp(rgba.data(), width, height, quality);
}

std::string base64(const std::string& bytes) {
  static const char* table = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint8_t>(bytes[i]) << 16 | static_cast<uint8_t>(bytes[i + 1]) << 8 | static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += table[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += table[(v >> 18) & 63];
    out += table[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? table[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace rgbaq::daemon::http
