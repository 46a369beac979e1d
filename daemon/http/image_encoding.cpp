#include "daemon/http/image_encoding.h"

#include <png.h>
#include <webp/encode.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace rgbaq::daemon::http {
namespace {

// libpng reports errors by longjmp: the function that calls into it holds only plain data (as
// storage/png_file.cpp does), and the message comes back instead of an exception through libpng.
struct PngSink {
  std::string* out;
  char message[256] = {0};
};

void on_error(png_structp png, png_const_charp msg) {
  auto* sink = static_cast<PngSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", msg);
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}
void on_write(png_structp png, png_bytep data, size_t n) {
  static_cast<PngSink*>(png_get_error_ptr(png))->out->append(reinterpret_cast<const char*>(data), n);
}
void on_flush(png_structp) {}

bool write_rgb(png_structp png, png_infop info, int width, int height, png_text* chunks, int chunk_count, png_bytep* rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_write_fn(png, png_get_error_ptr(png), on_write, on_flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (chunk_count > 0) png_set_text(png, info, chunks, chunk_count);
  png_write_info(png, info);
  png_set_filler(png, 0, PNG_FILLER_AFTER);  // the rows are RGBA: the fourth byte is dropped
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

}  // namespace

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
  std::string out;
  PngSink sink{&out};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw std::runtime_error("libpng: out of memory");
  }
  std::vector<png_text> chunks(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    std::memset(&chunks[i], 0, sizeof(png_text));
    chunks[i].compression = PNG_ITXT_COMPRESSION_NONE;
    chunks[i].key = const_cast<char*>(texts[i].key.c_str());
    chunks[i].text = const_cast<char*>(texts[i].value.c_str());
    chunks[i].itxt_length = texts[i].value.size();
    chunks[i].lang = const_cast<char*>("");
    chunks[i].lang_key = const_cast<char*>("");
  }
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (int y = 0; y < height; ++y) rows[y] = const_cast<png_bytep>(rgba.data() + static_cast<size_t>(y) * width * 4);
  const bool ok = write_rgb(png, info, width, height, chunks.data(), static_cast<int>(chunks.size()), rows.data());
  png_destroy_write_struct(&png, &info);
  if (!ok) throw std::runtime_error(std::string("libpng: ") + sink.message);
  return out;
}

std::string encode_webp_rgba(const std::vector<uint8_t>& rgba, int width, int height, int quality) {
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
  const bool ok = WebPValidateConfig(&config) && WebPPictureImportRGBA(&picture, rgba.data(), width * 4) && WebPEncode(&config, &picture);
  const int error = picture.error_code;
  WebPPictureFree(&picture);
  std::string out(reinterpret_cast<const char*>(writer.mem), writer.size);
  WebPMemoryWriterClear(&writer);
  if (!ok) throw std::runtime_error("libwebp could not encode a " + std::to_string(width) + "x" + std::to_string(height) + " image (error " +
                                    std::to_string(error) + ")");
  return out;
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
