#include "assets/export_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "common/trusted_folder.h"

namespace rgbaq::assets {
namespace {

std::string os_error(int error) { return std::strerror(error); }

// Names come from the export and from a previous manifest: none may reach outside the folder.
void require_plain_name(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    throw ExportFolderError("\"" + name + "\" is not a plain file name");
  }
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (uint64_t v = rng(), i = 0; i < 16; ++i, v >>= 4) s += hex[v & 15];
  return s;
}

}  // namespace

ExportFolder::ExportFolder(const std::filesystem::path& resolved, mode_t dir_mode, mode_t file_mode)
    : path_(resolved), file_mode_(file_mode) {
  // The folders that are not there yet, to be removed again if the export comes to nothing.
  for (std::filesystem::path at = resolved; at != at.root_path(); at = at.parent_path()) {
    struct stat st {};
    if (::lstat(at.c_str(), &st) == 0 || errno != ENOENT) break;
    made_.insert(made_.begin(), at);
  }
  try {
    fd_ = common::open_trusted_folder(resolved, dir_mode);
  } catch (const common::FolderError& e) {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());
    throw ExportFolderError("cannot export into " + resolved.string() + ": " + e.what());
  }
  if (::faccessat(fd_, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    const int error = errno;
    ::close(fd_);
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());
    throw ExportFolderError("cannot export into " + resolved.string() + ": " + os_error(error));
  }
}

ExportFolder::~ExportFolder() {
  for (size_t i = 0; i < temps_.size(); ++i) {
    if (!temps_[i].empty()) ::unlinkat(fd_, temps_[i].c_str(), 0);
  }
  ::close(fd_);
  if (!committed_) {
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) ::rmdir(it->c_str());  // only if still empty
  }
}

bool ExportFolder::has(const std::string& name) const {
  require_plain_name(name);
  struct stat st {};
  return ::fstatat(fd_, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

std::optional<std::string> ExportFolder::read(const std::string& name) const {
  require_plain_name(name);
  const std::string at = (path_ / name).string();
  const int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw ExportFolderError(at + ": " + (errno == ELOOP ? std::string("a symbolic link") : os_error(errno)));
  }
  struct stat st {};
  std::string bytes, error;
  if (::fstat(fd, &st) != 0) {
    error = os_error(errno);
  } else if (!S_ISREG(st.st_mode)) {
    error = S_ISDIR(st.st_mode) ? "a folder" : "not a regular file";
  } else {
    bytes.resize(size_t(st.st_size));
    for (size_t done = 0; done < bytes.size() && error.empty();) {
      const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) error = os_error(errno);
      else if (n == 0) bytes.resize(done);  // it shrank meanwhile
      else done += size_t(n);
    }
  }
  ::close(fd);
  if (!error.empty()) throw ExportFolderError(at + ": " + error);
  return bytes;
}

void ExportFolder::stage(const std::string& name, const std::string& bytes) {
  require_plain_name(name);
  std::string temp;
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 8; ++tries) {
    temp = "." + name.substr(0, 200) + ".rgbaq-" + random_suffix();
    fd = ::openat(fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, file_mode_);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw ExportFolderError((path_ / name).string() + ": cannot create a temporary file: " + os_error(errno));
  names_.push_back(name);
  temps_.push_back(temp);  // removed by the destructor unless committed
  std::string error;
  for (size_t done = 0; done < bytes.size() && error.empty();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) error = os_error(errno);
    else done += size_t(n);
  }
  if (error.empty() && ::fchmod(fd, file_mode_) != 0) error = os_error(errno);  // the umask may be private (rgbaqd's)
  if (error.empty() && ::fsync(fd) != 0) error = os_error(errno);
  ::close(fd);
  if (!error.empty()) throw ExportFolderError((path_ / name).string() + ": " + error);
}

void ExportFolder::commit() {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (::renameat(fd_, temps_[i].c_str(), fd_, names_[i].c_str()) != 0) {
      throw ExportFolderError((path_ / names_[i]).string() + ": " + os_error(errno));
    }
    temps_[i].clear();
    committed_ = true;  // from the first rename on, the folders made hold the export's files
  }
  ::fsync(fd_);
}

bool ExportFolder::remove(const std::string& name) {
  require_plain_name(name);
  if (::unlinkat(fd_, name.c_str(), 0) == 0) return true;
  if (errno == ENOENT) return false;
  throw ExportFolderError((path_ / name).string() + ": " + os_error(errno));
}

}  // namespace rgbaq::assets
