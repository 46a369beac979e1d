#include "daemon/socket/listen_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifdef __APPLE__
#include <launch.h>
#endif

namespace rgbaq::daemon {
namespace {

sockaddr_un address_of(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof(addr.sun_path)) {
    throw std::runtime_error(p + ": socket path is longer than " + std::to_string(sizeof(addr.sun_path) - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
  return addr;
}

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error(path.string() + ": " + what);
}

// The directory must be ours and closed to others: it guards the socket.
void secure_directory(const std::filesystem::path& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    if (errno == ENOENT) {
      std::error_code ec;
      std::filesystem::create_directories(dir.parent_path(), ec);
      if (mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return secure_directory(dir);
    }
    fail(dir, std::string("cannot create the socket directory: ") + std::strerror(errno));
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) fail(dir, std::strerror(errno));
  if (!S_ISDIR(st.st_mode)) fail(dir, "the socket directory is not a directory");
  if (st.st_uid != geteuid()) fail(dir, "the socket directory belongs to another user");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    fail(dir, std::string("the socket directory is open to other users (mode ") + mode + "); it must be 0700");
  }
}

}  // namespace

int open_listen_socket(const std::filesystem::path& path) {
  secure_directory(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path());
  const sockaddr_un addr = address_of(path);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) fail(path, "exists and is not a socket; remove it or choose another --socket");
    const int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool live = connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    close(probe);
    if (live) fail(path, "another rgbaqd is already listening here (stop it first, or use another --socket)");
    unlink(path.c_str());  // stale: its daemon is gone
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(path, std::strerror(errno));
  const mode_t old_mask = umask(0177);  // the socket is born 0600
  const int bound = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  umask(old_mask);
  if (bound != 0) {
    close(fd);
    fail(path, std::string("bind failed: ") + std::strerror(bind_errno));
  }
  if (listen(fd, 64) != 0) {
    const int e = errno;
    close(fd);
    fail(path, std::string("listen failed: ") + std::strerror(e));
  }
  return fd;
}

std::optional<int> activated_listen_socket() {
#ifdef __APPLE__
  int* fds = nullptr;
  size_t count = 0;
  if (launch_activate_socket("Listener", &fds, &count) == 0 && count > 0) {
    const int fd = fds[0];
    std::free(fds);
    return fd;
  }
  return std::nullopt;
#else
  const char* pid = std::getenv("LISTEN_PID");
  const char* fds = std::getenv("LISTEN_FDS");
  if (!pid || !fds || std::strtol(pid, nullptr, 10) != getpid() || std::strtol(fds, nullptr, 10) < 1) return std::nullopt;
  constexpr int kFirstFd = 3;  // SD_LISTEN_FDS_START
  fcntl(kFirstFd, F_SETFD, FD_CLOEXEC);
  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  return kFirstFd;
#endif
}

}  // namespace rgbaq::daemon
