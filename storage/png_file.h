#pragma once
// RGBA PNG files through libpng: written atomically (a temporary file in the same directory, fsynced,
// renamed, the directory fsynced) with text chunks, and read back (tests, contact sheets, the
// daemon's check for an already finished output).
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace rgbaq::storage {

// A PNG that could not be written: what() names the path and the cause; code() is the OS error behind
// it (none for a libpng error), so a caller can tell a folder that can never take the file from a full disk.
class PngWriteError : public std::runtime_error {
 public:
  PngWriteError(const std::string& what, std::error_code code) : std::runtime_error(what), code_(code) {}
  std::error_code code() const { return code_; }

 private:
  std::error_code code_;
};

struct PngText {
  std::string key;    // 1..79 Latin-1 characters
  std::string value;  // UTF-8: stored as an iTXt chunk (uncompressed), readable by common tools
};

// The temporary is created O_EXCL | O_NOFOLLOW under an unpredictable name, relative to one descriptor
// of the directory, and renamed over whatever entry is at `path` (a symlink there is replaced, not
// followed). The file gets `mode` when given (whatever the umask), else 0644 less the umask. Throws
// PngWriteError naming the path and the OS or libpng error (disk full, permissions).
void write_png_atomic(const std::filesystem::path& path, const uint8_t* rgba, int width, int height,
                      const std::vector<PngText>& texts, std::optional<mode_t> mode = std::nullopt);

// write_png_atomic in two steps, for a writer that may rename only while it still holds the job: the
// PNG is written to its temporary (fsynced) in the folder `dir_fd` (held, e.g. from
// common::open_trusted_folder; the object closes it), and commit() renames it over `name` there. A
// PendingPng destroyed before its commit removes its temporary. `path` names it in messages.
class PendingPng {
 public:
  PendingPng(int dir_fd, const std::filesystem::path& path, const uint8_t* rgba, int width, int height,
             const std::vector<PngText>& texts, std::optional<mode_t> mode = std::nullopt);
  ~PendingPng();
  PendingPng(const PendingPng&) = delete;
  PendingPng& operator=(const PendingPng&) = delete;
  // The temporary's name in the folder (".NAME.tmpXXXXXXXXXXXXXXXX").
  const std::string& temp_name() const { return tmp_; }
  // renameat over the entry at the path (a planted symlink or FIFO included, never followed), then the
  // folder fsynced. Throws PngWriteError.
  void commit();
  // Leaves the temporary where it is when the object goes (a note says what becomes of it).
  void keep() { settled_ = true; }

 private:
  int dfd_;
  std::filesystem::path path_;
  std::string tmp_;
  bool settled_ = false;
};

struct PngImage {
  int width = 0, height = 0;
  int channels = 0;              // as stored: 4 for RGBA
  std::vector<uint8_t> rgba;     // converted to RGBA8, pixel-interleaved
  std::map<std::string, std::string> texts;  // tEXt, zTXt and iTXt chunks
};

// Opens only a regular file, never blocking (a FIFO or device at the path is refused at once) and never
// following a symlink. Throws std::runtime_error naming the path for a missing, truncated or corrupt
// file, or one that is not a regular file.
PngImage read_png(const std::filesystem::path& path);

// As read_png, without decoding the pixels (rgba stays empty): the size and the text chunks that come
// before the image data (where write_png_atomic puts its own), for a cheap look at a finished output.
PngImage read_png_info(const std::filesystem::path& path);

// As read_png when the image is `width` x `height`; an image of another size comes back as
// read_png_info gives it (rgba empty), its size read from the header before a pixel is decoded, so a
// planted 16384x16384 PNG costs no more than its header.
PngImage read_png_if_size(const std::filesystem::path& path, int width, int height);

// The PNG of `rgba` with `texts`, as write_png_atomic writes it, in memory; `drop_alpha`: an RGB PNG
// (every pixel must be opaque already). Throws PngWriteError when libpng fails.
std::string encode_png(const uint8_t* rgba, int width, int height, const std::vector<PngText>& texts, bool drop_alpha = false);

// As read_png (or read_png_info, when `pixels` is false) for a PNG already in memory; `name` names it
// in the errors.
PngImage read_png_bytes(std::string_view bytes, const std::filesystem::path& name, bool pixels = true);

}  // namespace rgbaq::storage
