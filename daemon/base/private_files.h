#pragma once
// What the daemon writes for itself (its data directory: queue.db and its WAL, the lock, the log, the
// embedding cache, the crash record) is its user's alone: another local user would read every prompt,
// every output path and the model's path there. The outputs are the user's files in the user's
// folders: they keep the modes they had, 0644 and 0755 less the umask the daemon was started with.
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace rgbaq::daemon {

// Sets the process umask to 077, so that every file and folder created from now on is private, and
// remembers the umask it replaces for output_file_mode(). Call once, first thing, before other threads.
void make_created_files_private();

// 0644 and 0777 less the umask the daemon was started with (the umask now before
// make_created_files_private()): what a new output PNG and a new output folder get.
mode_t output_file_mode();
mode_t output_dir_mode();

// Creates the missing folders of `dir` with output_dir_mode() (create_directories would give 0700 under
// the private umask). Throws std::filesystem::filesystem_error naming the folder that cannot be made.
void create_output_dirs(const std::filesystem::path& dir);

// Writes `text` to `file` atomically (a temporary made O_EXCL | O_NOFOLLOW, mode 0600, fsynced, then
// renamed over it). Throws std::runtime_error naming the file and the OS's reason.
void write_private_file(const std::filesystem::path& file, const std::string& text);

// The secret in `file` (its first line), made when there is none: 32 random bytes from the kernel's
// CSPRNG as 64 hex digits, mode 0600, written atomically. `what` names it in messages ("the HTTP API's
// token"). Throws std::runtime_error naming the file when it is not a regular file of this user or holds
// fewer than 32 characters; one open to others is made 0600 again (logged).
std::string load_or_create_secret(const std::filesystem::path& file, const std::string& what);

// An existing data directory from before (0755, its files 0644) is tightened: the folder and every
// folder in it to 0700, every file to 0600 (symbolic links are neither followed nor changed), each
// change logged. Creates the folder 0700 when it is missing. Throws naming a path it cannot change.
void make_data_dir_private(const std::filesystem::path& data_dir);

}  // namespace rgbaq::daemon
