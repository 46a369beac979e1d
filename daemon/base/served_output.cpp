#include "daemon/base/served_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/trusted_folder.h"

namespace rgbaq::daemon {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void refuse(const std::filesystem::path& path, const std::string& why, bool missing = false) {
  throw ServedOutputError(path.string() + ": " + why, missing);
}

uint32_t big_endian(const unsigned char* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Reads `n` bytes at `offset`; fewer only at the end of the file.
size_t read_at(int fd, char* out, size_t n, uint64_t offset) {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

ServedOutput::ServedOutput(const std::filesystem::path& path, int width, int height) : path_(path) {
  if (!path.is_absolute() || !path.has_filename()) refuse(path, "is not an output path");
  int folder = -1;
  try {
    folder = common::open_trusted_folder(path.parent_path());
  } catch (const common::FolderError& e) {
    refuse(path, std::string("its folder cannot be opened safely: ") + e.what(), e.code() == std::errc::no_such_file_or_directory);
  }
  const Fd dir{folder};
  Fd file{::openat(dir.fd, path.filename().c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)};
  if (file.fd < 0) {
    const int why = errno;
    if (why == ENOENT) refuse(path, "is gone", true);
    refuse(path, why == ELOOP ? "is a symbolic link, not the image rgbaqd wrote; not followed" : std::strerror(why));
  }
  struct stat st {};
  if (fstat(file.fd, &st) != 0) refuse(path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) refuse(path, "is not a regular file (a FIFO, a device or a folder), not the image rgbaqd wrote");
  // The signature and the IHDR chunk: the size, before anything else is read.
  unsigned char head[24];
  static constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (read_at(file.fd, reinterpret_cast<char*>(head), sizeof head, 0) != sizeof head || std::memcmp(head, kSignature, 8) != 0 ||
      std::memcmp(head + 12, "IHDR", 4) != 0) {
    refuse(path, "is not a PNG file");
  }
  const uint32_t w = big_endian(head + 16), h = big_endian(head + 20);
  if (w != static_cast<uint32_t>(width) || h != static_cast<uint32_t>(height)) {
    refuse(path, "is a " + std::to_string(w) + "x" + std::to_string(h) + " PNG, not the job's " + std::to_string(width) + "x" +
                     std::to_string(height) + " image; not read");
  }
  // A PNG of this size holds at most its raw rows (a filter byte each) in zlib's stored blocks, plus
  // rgbaq's text chunks: a bigger file is not an image rgbaqd wrote.
  const uint64_t raw = (uint64_t{4} * w + 1) * h;
  if (static_cast<uint64_t>(st.st_size) > raw + raw / 64 + (16u << 20)) {
    refuse(path, "holds " + std::to_string(st.st_size) + " bytes, more than a " + std::to_string(w) + "x" + std::to_string(h) +
                     " PNG needs; not read");
  }
  // The worker writes every output as the daemon's user: a PNG another user put there (into a shared
  // folder, under the name of an output moved away) is theirs, not the job's image.
  if (st.st_uid != ::geteuid()) {
    refuse(path, "belongs to uid " + std::to_string(st.st_uid) + ", not to rgbaqd's user: not the image rgbaqd wrote");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  modified_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  std::swap(fd_, file.fd);
}

ServedOutput::~ServedOutput() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ServedOutput::read() const {
  std::string bytes(size_, '\0');
  if (read_at(fd_, bytes.data(), size_, 0) != size_) refuse(path_, "changed while it was read");
  return bytes;
}

}  // namespace rgbaq::daemon
