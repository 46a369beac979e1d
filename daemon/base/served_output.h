#pragma once
// A finished output as the daemon hands it out (the HTTP image and thumbnail routes, the image APIs,
// the gallery's copy). Output folders may be writable by other users (a sticky shared folder, as
// submit allows), so what sits at an output path is not trusted to be what the worker wrote: it is
// read only if it is a regular file reached without following a link (its folder opened one component
// at a time from "/", common::open_trusted_folder; the file O_NOFOLLOW | O_NONBLOCK, so a FIFO never
// blocks the reader), its PNG header says the job's size (a planted 16384x16384 PNG is never decoded,
// a link's or a hard link's private target is not a PNG of that size) and it belongs to the daemon's
// user (who wrote it; another user's PNG of the right size is not served as the job's).
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace rgbaq::daemon {

// Why an output cannot be handed out: what() names the path and the reason; missing() for an output
// that is not there at all (moved or deleted), as opposed to something else being there.
class ServedOutputError : public std::runtime_error {
 public:
  ServedOutputError(const std::string& what, bool missing) : std::runtime_error(what), missing_(missing) {}
  bool missing() const { return missing_; }

 private:
  bool missing_;
};

// The PNG at an output path, open and checked; read only when asked (a thumbnail already made needs
// only the size and time).
class ServedOutput {
 public:
  // Opens `path` (absolute), which must be a `width` x `height` PNG. Throws ServedOutputError.
  ServedOutput(const std::filesystem::path& path, int width, int height);
  ~ServedOutput();
  ServedOutput(const ServedOutput&) = delete;
  ServedOutput& operator=(const ServedOutput&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Its size and modification time, which change when it is rewritten.
  uint64_t size() const { return size_; }
  int64_t modified_ns() const { return modified_ns_; }
  // The whole file, as written (metadata and all). Throws ServedOutputError if it shrank meanwhile.
  std::string read() const;

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  int64_t modified_ns_ = 0;
};

}  // namespace rgbaq::daemon
