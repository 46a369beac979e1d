#include "storage/png_file.h"

#include <fcntl.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
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
               png_bytep* rows, bool drop_alpha, ErrorSink* sink) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_init_io(png, f);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8,
               drop_alpha ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (chunk_count > 0) png_set_text(png, info, chunks, chunk_count);
  png_write_info(png, info);
  if (drop_alpha) png_set_filler(png, 0, PNG_FILLER_AFTER);  // the rows are RGBA: the fourth byte is dropped
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

std::string encode(FILE* f, const uint8_t* rgba, int width, int height, const std::vector<PngText>& texts, bool drop_alpha = false) {
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
  const bool ok = write_all(png, info, f, width, height, chunks.data(), static_cast<int>(chunks.size()), rows.data(), drop_alpha, &sink);
  png_destroy_write_struct(&png, &info);
  return ok ? std::string() : std::string(sink.message);
}

void collect_texts(png_structp png, png_infop info, PngImage& image) {
  png_textp text = nullptr;
  int count = 0;
  png_get_text(png, info, &text, &count);
  for (int i = 0; i < count; ++i) {
    const size_t len = text[i].compression >= PNG_ITXT_COMPRESSION_NONE ? text[i].itxt_length : text[i].text_length;
    image.texts[text[i].key] = std::string(text[i].text, len);
  }
}

// Which images have their pixels decoded; the others give the header and the text chunks before the
// image data only.
struct PixelRule {
  bool any = true;            // false: none
  int width = 0, height = 0;  // when > 0: only an image of this size
  bool decodes(const PngImage& image) const {
    return any && (width <= 0 || (image.width == width && image.height == height));
  }
};

std::string decode(FILE* f, PngImage& image, const PixelRule& rule) {
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
  } else if (!rule.decodes(image)) {
    collect_texts(png, info, image);
  } else if (static_cast<uint64_t>(image.width) * image.height > (1ull << 28)) {
    error = "image of " + std::to_string(image.width) + "x" + std::to_string(image.height) + " is too large";
  } else {
    image.rgba.resize(static_cast<size_t>(image.width) * image.height * 4);
    std::vector<png_bytep> rows(static_cast<size_t>(image.height));
    for (int y = 0; y < image.height; ++y) rows[y] = image.rgba.data() + static_cast<size_t>(y) * image.width * 4;
    if (!read_rows(png, info, rows.data(), &sink)) {
      error = sink.message;
    } else {
      collect_texts(png, info, image);
    }
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return error;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

// A write that failed; `os_error` is the errno behind it, 0 when there is none (libpng's own error).
[[noreturn]] void fail_write(const std::filesystem::path& path, const std::string& what, int os_error) {
  throw PngWriteError(path.string() + ": " + what + (os_error ? std::strerror(os_error) : ""),
                      os_error ? std::error_code(os_error, std::generic_category()) : std::error_code());
}

// An existing file opened for reading only if it is a regular file: O_NONBLOCK so that a FIFO planted
// at the path cannot block the caller, O_NOFOLLOW so that a symlink is not followed, then fstat.
FILE* open_regular_for_reading(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) fail(path, errno == ELOOP ? "is a symbolic link; not following it" : std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "is not a regular file");
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FILE* f = fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    fail(path, std::strerror(errno));
  }
  return f;
}

// A fresh temporary next to `name` in the directory `dfd`: O_EXCL | O_NOFOLLOW with an unpredictable
// suffix, so nothing planted in the directory (a symlink, a FIFO, another file) is ever opened.
int create_temporary(int dfd, const std::string& name, std::string& tmp_name) {
  std::random_device rd;
  for (int tries = 0; tries < 100; ++tries) {
    char suffix[24];
    std::snprintf(suffix, sizeof suffix, "%08x%08x", rd(), rd());
    tmp_name = "." + name + ".tmp" + suffix;
    const int fd = ::openat(dfd, tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace

void write_png_atomic(const std::filesystem::path& path, const uint8_t* rgba, int width, int height,
                      const std::vector<PngText>& texts, std::optional<mode_t> mode) {
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  // Everything below is relative to this one directory descriptor: the temporary, the rename and the
  // fsync all act on the same directory even if its path is swapped meanwhile.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) fail_write(path, "cannot open the directory " + dir.string() + ": ", errno);
  PendingPng(dfd, path, rgba, width, height, texts, mode).commit();
}

PendingPng::PendingPng(int dir_fd, const std::filesystem::path& path, const uint8_t* rgba, int width, int height,
                       const std::vector<PngText>& texts, std::optional<mode_t> mode)
    : dfd_(dir_fd), path_(path) {
  const std::string name = path.filename().string();
  // A folder at the path would refuse the rename; the caller may record the job done before renaming,
  // so that is found now.
  struct stat at {};
  if (::fstatat(dfd_, name.c_str(), &at, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(at.st_mode)) {
    ::close(dfd_);
    fail_write(path, "writing the PNG failed: ", EISDIR);
  }
  const int fd = create_temporary(dfd_, name, tmp_);
  if (fd < 0) {
    const int why = errno;
    ::close(dfd_);
    fail_write(path, "cannot create a temporary file: ", why);
  }
  int os_error = mode && fchmod(fd, *mode) != 0 ? errno : 0;  // behind `error`; 0 for libpng's own
  FILE* f = os_error ? nullptr : fdopen(fd, "wb");
  if (!f && !os_error) os_error = errno;
  std::string error = f ? std::string() : std::string(std::strerror(os_error));
  if (!f) ::close(fd);
  if (error.empty()) error = encode(f, rgba, width, height, texts);
  if (error.empty() && std::fflush(f) != 0) error = std::strerror(os_error = errno);
  if (error.empty() && fsync(fileno(f)) != 0) error = std::strerror(os_error = errno);
  if (f && std::fclose(f) != 0 && error.empty()) error = std::strerror(os_error = errno);
  if (!error.empty()) {
    ::unlinkat(dfd_, tmp_.c_str(), 0);
    ::close(dfd_);
    fail_write(path, "writing the PNG failed: " + (os_error ? "" : error), os_error);
  }
}

PendingPng::~PendingPng() {
  if (!settled_) ::unlinkat(dfd_, tmp_.c_str(), 0);
  ::close(dfd_);
}

void PendingPng::commit() {
  // renameat replaces whatever entry is at the path (a planted symlink or FIFO included) without
  // following it.
  if (::renameat(dfd_, tmp_.c_str(), dfd_, path_.filename().c_str()) != 0) {
    fail_write(path_, "writing the PNG failed: ", errno);  // the destructor removes the temporary
  }
  settled_ = true;
  fsync(dfd_);  // the rename is durable only once the directory entry is
}

// Decodes the PNG that `f` reads (closing it), `name` naming it in errors.
static PngImage read_png_stream(FILE* f, const std::filesystem::path& name, const PixelRule& rule) {
  unsigned char signature[8] = {0};
  const size_t got = std::fread(signature, 1, 8, f);
  if (got != 8 || png_sig_cmp(signature, 0, 8) != 0) {
    std::fclose(f);
    fail(name, "not a PNG file");
  }
  std::rewind(f);
  PngImage image;
  const std::string error = decode(f, image, rule);
  std::fclose(f);
  if (!error.empty()) fail(name, "corrupt PNG: " + error);
  return image;
}

static PngImage read_png_file(const std::filesystem::path& path, const PixelRule& rule) {
  return read_png_stream(open_regular_for_reading(path), path, rule);
}

std::string encode_png(const uint8_t* rgba, int width, int height, const std::vector<PngText>& texts, bool drop_alpha) {
  char* data = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&data, &size);
  if (!f) throw PngWriteError(std::string("encoding a PNG in memory: ") + std::strerror(errno), std::error_code(errno, std::generic_category()));
  const std::string error = encode(f, rgba, width, height, texts, drop_alpha);
  std::fclose(f);  // sets data and size
  std::string bytes(data ? data : "", data ? size : 0);
  std::free(data);
  if (!error.empty()) throw PngWriteError("encoding a PNG in memory: " + error, {});
  return bytes;
}

PngImage read_png_bytes(std::string_view bytes, const std::filesystem::path& name, bool pixels) {
  if (bytes.empty()) fail(name, "not a PNG file");
  FILE* f = fmemopen(const_cast<char*>(bytes.data()), bytes.size(), "rb");
  if (!f) fail(name, std::strerror(errno));
  return read_png_stream(f, name, {.any = pixels});
}

PngImage read_png(const std::filesystem::path& path) { return read_png_file(path, {}); }

PngImage read_png_info(const std::filesystem::path& path) { return read_png_file(path, {.any = false}); }

PngImage read_png_if_size(const std::filesystem::path& path, int width, int height) {
  return read_png_file(path, {.width = width, .height = height});
}

}  // namespace rgbaq::storage
