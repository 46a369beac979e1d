#pragma once
// The folder an asset export writes into (`rgbaq export RUN --assets DIR`, the gallery's export): the
// export never writes outside it. The path is resolved once (links the user typed are followed then),
// the folder opened from "/" one component at a time without following a link, every component trusted
// as common/trusted_folder.h says (none that another user could change), and every file is created
// relative to that descriptor: a temporary made O_EXCL | O_NOFOLLOW, renamed over its name only when the
// whole export is ready (commit). Until then nothing shows: an export that fails leaves the folder as it
// found it (its temporaries removed, the folders it made removed again).
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace rgbaq::assets {

// What keeps an export out of its folder: what() names the folder or file and the reason.
class ExportFolderError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ExportFolder {
 public:
  // Opens `resolved` (absolute, as common::resolve_folder gives it), making the folders missing on its
  // path with `dir_mode`; the files it writes get `file_mode` (both whatever the umask). Throws
  // ExportFolderError: not a folder, a link in the way, another user's, or not writable by this user.
  ExportFolder(const std::filesystem::path& resolved, mode_t dir_mode, mode_t file_mode);
  // Removes what was staged and not committed, and the folders it made when nothing was committed.
  ~ExportFolder();
  ExportFolder(const ExportFolder&) = delete;
  ExportFolder& operator=(const ExportFolder&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Every name is a plain file name (no '/', not "." or ".."): ExportFolderError otherwise.
  // Whether anything (a file, a folder, a link) has the name `name` in the folder.
  bool has(const std::string& name) const;
  // The bytes of the regular file `name`; nullopt when nothing has that name. Throws ExportFolderError
  // when something other than a regular file is there (a link is not followed) or it cannot be read.
  std::optional<std::string> read(const std::string& name) const;

  // `bytes` into a new temporary for `name` (a plain file name), renamed over it by commit().
  void stage(const std::string& name, const std::string& bytes);
  // The names staged so far, in order.
  const std::vector<std::string>& staged() const { return names_; }
  // Renames every staged temporary over its name, in the order staged, then syncs the folder.
  void commit();
  // Removes the file `name` (never a folder); false when it was not there.
  bool remove(const std::string& name);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  mode_t file_mode_;
  std::vector<std::filesystem::path> made_;  // folders this object made, outermost first
  std::vector<std::string> names_, temps_;
  bool committed_ = false;
};

}  // namespace rgbaq::assets
