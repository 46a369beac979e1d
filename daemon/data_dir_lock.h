#pragma once
// One data directory, one daemon: an exclusive flock on DATA_DIR/rgbaqd.lock, held for the process's
// life (the kernel drops it when the process dies, SIGKILL included), with the holder's pid written in
// the file so that a second daemon can say who holds it.
#include <filesystem>

namespace rgbaq::daemon {

class DataDirLock {
 public:
  // Creates the directory if needed and takes the lock. Throws std::runtime_error naming the lock
  // file and the holder's pid when another process holds it.
  explicit DataDirLock(const std::filesystem::path& data_dir);
  ~DataDirLock();
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace rgbaq::daemon
