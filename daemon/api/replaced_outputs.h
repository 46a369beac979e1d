#pragma once
// Images that give up their output path: moved aside when a submit --replace takes the name over, or
// deleted with `rgbaq rm RUN --delete-images`. Neither follows a symbolic link in the output folder
// (each folder is opened as the writer opens it), and neither loses an image silently.
#include <cstdint>
#include <filesystem>
#include <string>

namespace rgbaq::daemon {

// The folder of `output` gets a `replaced/` folder (output_dir_mode()); the file moves there under its
// own name, or `NAME-2.png`, `NAME-3.png`... when that is taken (never over another file). Returns the
// new path. Throws naming the file and the cause when it cannot be moved.
std::filesystem::path move_aside(const std::filesystem::path& output);

// Unlinks `output` only when it is a PNG whose `rgbaq` chunk names job `job_id`: a file put there by
// anyone else (another job's image, a user's file) stays. Returns whether it was deleted; a file gone
// already is not an error (false).
bool delete_own_image(const std::filesystem::path& output, int64_t job_id);

}  // namespace rgbaq::daemon
