#include "daemon/base/private_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <system_error>

#include <spdlog/spdlog.h>

namespace rgbaq::daemon {
namespace {

// The umask the daemon was started with; -1 until make_created_files_private() runs.
std::atomic<int> started_umask{-1};

mode_t user_umask() {
  const int remembered = started_umask.load();
  if (remembered >= 0) return static_cast<mode_t>(remembered);
  const mode_t now = umask(022);  // read it: umask() only reads by setting
  umask(now);
  return now;
}

std::string octal(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// Chmods `path` to `wanted` when it has any group or other bit; logs what changed.
void tighten(const std::filesystem::path& path, const struct stat& st, mode_t wanted) {
  if ((st.st_mode & 077) == 0) return;
  if (::chmod(path.c_str(), wanted) != 0) {
    throw std::filesystem::filesystem_error("cannot make it private (chmod " + octal(wanted) + ")", path,
                                            std::error_code(errno, std::generic_category()));
  }
  spdlog::warn("{} was {} (readable by other users); tightened to {}", path.string(), octal(st.st_mode), octal(wanted));
}

}  // namespace

void make_created_files_private() { started_umask.store(static_cast<int>(umask(077))); }

mode_t output_file_mode() { return 0644 & ~user_umask(); }

void write_private_file(const std::filesystem::path& file, const std::string& text) {
  const auto temporary = file.string() + ".tmp" + std::to_string(getpid());
  ::unlink(temporary.c_str());  // one a killed start of this pid left
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + temporary + ": " + std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && fsync(fd) == 0;
  const int why = errno;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), file.c_str()) != 0) {
    const int cause = written ? errno : why;
    ::unlink(temporary.c_str());
    throw std::runtime_error("cannot write " + file.string() + ": " + std::strerror(cause));
  }
}
mode_t output_dir_mode() { return 0777 & ~user_umask(); }

std::string load_or_create_secret(const std::filesystem::path& file, const std::string& what) {
  struct stat st {};
  if (::lstat(file.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) throw std::runtime_error(file.string() + " is not a regular file");
    if (st.st_uid != ::geteuid()) throw std::runtime_error(file.string() + " belongs to another user");
    if ((st.st_mode & 077) != 0) {
      if (::chmod(file.c_str(), 0600) != 0) throw std::runtime_error("cannot make " + file.string() + " private (chmod 0600)");
      spdlog::warn("{} was readable by others: made it 0600 (anyone who read it holds {}; delete it and restart rgbaqd "
                   "for a new one)", file.string(), what);
    }
    std::ifstream in(file);
    std::string secret;
    std::getline(in, secret);
    if (secret.size() < 32) throw std::runtime_error(file.string() + " holds no " + what + " (delete it and rgbaqd makes a new one)");
    return secret;
  }
  std::random_device device;  // the kernel's CSPRNG on Linux and macOS
  static const char* hex = "0123456789abcdef";
  std::string secret;
  for (int i = 0; i < 8; ++i) {
    const uint32_t word = device();
    for (int b = 0; b < 8; ++b) secret += hex[(word >> (4 * b)) & 15];
  }
  std::filesystem::create_directories(file.parent_path());
  write_private_file(file, secret + "\n");
  spdlog::info("made {} in {}", what, file.string());
  return secret;
}

void create_output_dirs(const std::filesystem::path& dir) {
  if (dir.empty() || std::filesystem::is_directory(dir)) return;
  create_output_dirs(dir.parent_path());
  if (::mkdir(dir.c_str(), output_dir_mode()) != 0) {
    int error = errno;
    if (error == EEXIST && std::filesystem::is_directory(dir)) return;  // made meanwhile
    if (error == EEXIST) error = ENOTDIR;                                   // a file is in the way
    throw std::filesystem::filesystem_error("cannot make the folder", dir, std::error_code(error, std::generic_category()));
  }
  ::chmod(dir.c_str(), output_dir_mode());  // mkdir's mode passed through the private umask
}

void make_data_dir_private(const std::filesystem::path& data_dir) {
  std::filesystem::create_directories(data_dir);
  struct stat st {};
  if (::lstat(data_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) tighten(data_dir, st, 0700);
  for (auto it = std::filesystem::recursive_directory_iterator(data_dir); it != std::filesystem::recursive_directory_iterator(); ++it) {
    if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
    if (S_ISDIR(st.st_mode)) tighten(it->path(), st, 0700);
    else if (S_ISREG(st.st_mode)) tighten(it->path(), st, 0600);
  }
}

}  // namespace rgbaq::daemon
