#pragma once
// Folders a process writes into on its user's behalf (rgbaqd's output folders), opened so that nobody
// else can redirect the write: the path is resolved once (symbolic links the user typed are followed
// then, never again), and each later open walks it from "/" one component at a time with
// openat(O_NOFOLLOW | O_DIRECTORY) from the descriptor before, checking every component's owner and
// mode. A component is trusted when it belongs to this user or root and no other user may change its
// entries: not writable by others, nor by a group other than ours, unless it is sticky (as /tmp is).
#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>

namespace rgbaq::common {

// A folder that cannot be opened safely: what() says which component and why; code() is the OS error
// behind it (EPERM for a component that is not trusted, ELOOP for a symbolic link that was swapped in).
class FolderError : public std::runtime_error {
 public:
  FolderError(const std::string& what, std::error_code code) : std::runtime_error(what), code_(code) {}
  std::error_code code() const { return code_; }

 private:
  std::error_code code_;
};

// `dir` (absolute) as the file system names it: its existing part through realpath (symbolic links
// followed, "." and ".." gone; on macOS the names as stored, so "Renders" and "renders" are one), the
// part that does not exist yet appended as written (lexically normal). Two names of one existing
// folder give one path. Throws FolderError for a relative path or an existing part realpath refuses.
std::filesystem::path resolve_folder(const std::filesystem::path& dir);

// Opens the folder `dir` (absolute, as resolve_folder gave it) one component at a time, as above, and
// returns its descriptor (O_DIRECTORY, the caller closes it). Missing components are made with
// `create_mode` (chmod'ed to it, whatever the umask) when it is given, else refused (ENOENT). Throws
// FolderError naming `dir`, the component at fault and why: a symbolic link, not a folder, another
// user's, or writable by another user.
int open_trusted_folder(const std::filesystem::path& dir, std::optional<mode_t> create_mode = std::nullopt);

// Why the folder `path`, with the status `st`, may not be trusted ("" when it may), for the rule above.
std::string untrusted_because(const std::filesystem::path& path, const struct stat& st);

}  // namespace rgbaq::common
