#include "common/trusted_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace rgbaq::common {
namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

[[noreturn]] void fail(const std::string& what, int error) {
  throw FolderError(what, std::error_code(error, std::generic_category()));
}

}  // namespace

std::filesystem::path resolve_folder(const std::filesystem::path& dir) {
  if (!dir.is_absolute()) fail(dir.string() + ": not an absolute path", EINVAL);
  std::filesystem::path normal = dir.lexically_normal();
  if (normal.filename().empty() && normal != normal.root_path()) normal = normal.parent_path();  // a trailing '/'
  // The nearest existing ancestor through realpath; what is missing below it is appended as written.
  std::filesystem::path at = normal, missing;
  for (;;) {
    char real[PATH_MAX];
    if (::realpath(at.c_str(), real)) return missing.empty() ? std::filesystem::path(real) : std::filesystem::path(real) / missing;
    const int error = errno;
    if ((error != ENOENT && error != ENOTDIR) || at == at.root_path()) fail(at.string() + ": " + std::strerror(error), error);
    missing = missing.empty() ? at.filename() : at.filename() / missing;
    at = at.parent_path();
  }
}

std::string untrusted_because(const std::filesystem::path& path, const struct stat& st) {
  const std::string another = "; another user could swap what is in it for a link elsewhere";
  if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    return path.string() + " belongs to uid " + std::to_string(st.st_uid) + another;
  }
  if ((st.st_mode & S_ISVTX) != 0) return "";  // sticky: only an entry's owner may rename or remove it
  if ((st.st_mode & S_IWOTH) != 0) {
    return path.string() + " is writable by every user (mode " + octal_mode(st.st_mode) + ", not sticky)" + another;
  }
  if ((st.st_mode & S_IWGRP) != 0 && st.st_gid != ::getegid()) {
    return path.string() + " is writable by group " + std::to_string(st.st_gid) + " (mode " + octal_mode(st.st_mode) +
           ", not sticky)" + another;
  }
  return "";
}

int open_trusted_folder(const std::filesystem::path& path, std::optional<mode_t> create_mode) {
  if (!path.is_absolute()) fail(path.string() + ": not an absolute path", EINVAL);
  std::filesystem::path dir = path.lexically_normal();
  if (dir.filename().empty() && dir != dir.root_path()) dir = dir.parent_path();  // a trailing '/'
  std::filesystem::path at = dir.root_path();
  int fd = ::open(at.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(at.string() + ": " + std::strerror(errno), errno);
  // Closes the folder in hand and throws: for a plain OS error on the folder itself its message alone
  // (the caller names the folder), else the component at fault first.
  const auto give_up = [&](const std::string& why, int error) {
    ::close(fd);
    fail(at == dir ? why : at.string() + ": " + why, error);
  };
  const auto check = [&] {
    struct stat st {};
    if (::fstat(fd, &st) != 0) give_up(std::strerror(errno), errno);
    if (const std::string why = untrusted_because(at, st); !why.empty()) {
      ::close(fd);
      fail(why + "; not writing there", EPERM);
    }
  };
  check();
  for (const auto& part : dir.relative_path()) {
    at /= part;
    if (part == "..") give_up("\"..\" in a folder's path", EINVAL);
    int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && create_mode) {
      const bool made = ::mkdirat(fd, part.c_str(), *create_mode) == 0;
      if (!made && errno != EEXIST) give_up(std::strerror(errno), errno);
      next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (next >= 0 && made) ::fchmod(next, *create_mode);  // mkdirat's mode passed through the umask
    }
    if (next < 0) {
      const int error = errno;
      struct stat entry {};
      if (::fstatat(fd, part.c_str(), &entry, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(entry.st_mode)) {
        give_up("is a symbolic link; not following it (links were resolved when the run was submitted, so one "
                "appearing since was put there)", ELOOP);
      }
      give_up(std::strerror(error), error);
    }
    ::close(fd);
    fd = next;
    check();
  }
  return fd;
}

}  // namespace rgbaq::common
