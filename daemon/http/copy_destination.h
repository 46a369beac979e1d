#pragma once
// Where the gallery writes on the daemon's side (its copy of chosen PNGs, its asset export): the folder
// a request names, "~/..." in the home folder of the daemon's user (as a shell reads it) or an
// absolute path, which must lie under one of rgbaqd's --copy-root folders once every link in it is
// resolved (a link that points elsewhere takes nothing there).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon::http {

// The body's "folder", resolved (common::resolve_folder) and checked against `roots`. `doing` names
// the work in messages ("copy", "export"). Throws RequestError (bad_request) naming the folder and why.
std::filesystem::path copy_destination(const nlohmann::json& body, const std::vector<std::filesystem::path>& roots,
                                       const std::string& doing);

}  // namespace rgbaq::daemon::http
