#include "daemon/data_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rgbaq::daemon {

DataDirLock::DataDirLock(const std::filesystem::path& data_dir) : path_(data_dir / "rgbaqd.lock") {
  std::filesystem::create_directories(data_dir);
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::runtime_error(path_.string() + ": cannot open the data directory's lock file: " + std::strerror(errno));
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw std::runtime_error(path_.string() + ": cannot lock: " + std::strerror(err));
    const std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("unknown");
    throw std::runtime_error("another rgbaqd (pid " + holder.substr(0, holder.find_first_of("\n")) +
                             ") is using the data directory " + data_dir.string() + " (it holds " + path_.string() +
                             "); one data directory serves one daemon");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds regardless; only the message a second daemon prints would lack the pid.
  }
}

DataDirLock::~DataDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace rgbaq::daemon
