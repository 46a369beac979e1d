#include "storage/png_file.h"

#include <fcntl.h>
#include <png.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace rgbaq::storage {
namespace {

// libpng reports errors by longjmp; these C-style helpers keep only plain data between setjmp and the
// jump, and return the message instead of throwing through libpng's frames.
struct ErrorSink {
  char message[256] = {0};
};

void on_png_error(png_structp png, png_const_charp msg) {
  auto* sink = static_cast<ErrorSink*>(png_get_error_ptr(png));
  std::snprintf(sink->message, sizeof sink->message, "%s", msg);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// Each function below that calls into libpng sets its own jump point and holds only plain data, so
// a longjmp skips no destructor. They return false with sink->message set on error.
bool write_all(png_structp png, png_infop info, FILE* f, int width, int height, png_text* chunks, int chunk_count,
               png_bytep* rows, ErrorSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGBA,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (chunk_count > 0) png_set_text(png, info, chunks, chunk_count);
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

bool read_header(png_structp png, png_infop info, FILE* f, int* width, int* height, int* channels, ErrorSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, f);
  png_read_info(png, info);
  *width = static_cast<int>(png_get_image_width(png, info));
  *height = static_cast<int>(png_get_image_height(png, info));
  *channels = png_get_channels(png, info);
  // Whatever was stored, hand back RGBA8.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_gray_to_rgb(png);
  png_set_add_alpha(png, 0xff, PNG_FILLER_AFTER);
  png_read_update_info(png, info);
  return true;
}

bool read_rows(png_structp png, png_infop info, png_bytep* rows, ErrorSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

std::string encode(FILE* f, const uint8_t* rgba, int width, int height, const std::vector<PngText>& texts) {
  ErrorSink sink;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return "out of memory";
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
  for (int y = 0; y < height; ++y) rows[y] = const_cast<png_bytep>(rgba + static_cast<size_t>(y) * width * 4);
  const bool ok = write_all(png, info, f, width, height, chunks.data(), static_cast<int>(chunks.size()), rows.data(), &sink);
  png_destroy_write_struct(&png, &info);
  return ok ? std::string() : std::string(sink.message);
}

std::string decode(FILE* f, PngImage& image) {
  ErrorSink sink;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &sink, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return "out of memory";
  }
  std::string error;
  if (!read_header(png, info, f, &image.width, &image.height, &image.channels, &sink)) {
    error = sink.message;
  } else if (static_cast<uint64_t>(image.width) * image.height > (1ull << 28)) {
    error = "image of " + std::to_string(image.width) + "x" + std::to_string(image.height) + " is too large";
  } else {
    image.rgba.resize(static_cast<size_t>(image.width) * image.height * 4);
    std::vector<png_bytep> rows(static_cast<size_t>(image.height));
    for (int y = 0; y < image.height; ++y) rows[y] = image.rgba.data() + static_cast<size_t>(y) * image.width * 4;
    if (!read_rows(png, info, rows.data(), &sink)) {
      error = sink.message;
    } else {
      png_textp text = nullptr;
      int count = 0;
      png_get_text(png, info, &text, &count);
      for (int i = 0; i < count; ++i) {
        const size_t len = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
        image.texts[text[i].key] = std::string(text[i].text, len);
      }
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return error;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

}  // namespace

void write_png_atomic(const std::filesystem::path& path, const uint8_t* rgba, int width, int height,
                      const std::vector<PngText>& texts) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const auto tmp = dir / ("." + path.filename().string() + ".tmp" + std::to_string(getpid()));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) fail(path, std::string("cannot create ") + tmp.filename().string() + ": " + std::strerror(errno));
  std::string error = encode(f, rgba, width, height, texts);
  if (error.empty() && std::fflush(f) != 0) error = std::strerror(errno);
  if (error.empty() && fsync(fileno(f)) != 0) error = std::strerror(errno);
  if (std::fclose(f) != 0 && error.empty()) error = std::strerror(errno);
  if (error.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) error = std::strerror(errno);
  if (!error.empty()) {
    std::remove(tmp.c_str());
    fail(path, "writing the PNG failed: " + error);
  }
  // The rename is durable only once the directory entry is.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    ::close(dfd);
  }
}

PngImage read_png(const std::filesystem::path& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, std::strerror(errno));
  unsigned char signature[8] = {0};
  const size_t got = std::fread(signature, 1, 8, f);
  if (got != 8 || png_sig_cmp(signature, 0, 8) != 0) {
    std::fclose(f);
    fail(path, "not a PNG file");
  }
  std::rewind(f);
  PngImage image;
  const std::string error = decode(f, image);
  std::fclose(f);
  if (!error.empty()) fail(path, "corrupt PNG: " + error);
  return image;
}

}  // namespace rgbaq::storage
