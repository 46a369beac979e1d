#include "daemon/http/copy_destination.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "common/trusted_folder.h"
#include "daemon/api/request_handler.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon::http {
namespace {

// "~" and "~/..." as a shell reads them, in the home folder of the daemon's user (the page's user types
// them, as "under your home folder" invites); anything else as given. Only the text changes: the folder
// then meets the same checks as any absolute path.
std::string expand_home(const std::string& folder) {
  if (folder != "~" && folder.rfind("~/", 0) != 0) return folder;
  std::string home;
  if (const char* h = std::getenv("HOME"); h && *h) {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) {
    home = pw->pw_dir;
  }
  if (home.empty()) throw RequestError(protocol::error_code::kBadRequest, "cannot expand " + folder + ": the daemon's user has no home folder");
  return home + folder.substr(1);
}

}  // namespace

std::filesystem::path copy_destination(const nlohmann::json& body, const std::vector<std::filesystem::path>& roots,
                                       const std::string& doing) {
  if (!body.contains("folder") || !body["folder"].is_string() || body["folder"].get<std::string>().empty()) {
    throw RequestError(protocol::error_code::kBadRequest, "\"folder\" is required (an absolute path, or ~/...)");
  }
  const std::filesystem::path folder = expand_home(body["folder"].get<std::string>());
  if (!folder.is_absolute()) throw RequestError(protocol::error_code::kBadRequest, "\"folder\" must be an absolute path (or ~/...)");
  std::filesystem::path resolved;
  try {
    resolved = common::resolve_folder(folder);
  } catch (const common::FolderError& e) {
    throw RequestError(protocol::error_code::kBadRequest, "cannot " + doing + " into " + folder.string() + ": " + e.what());
  }
  const bool under_a_root = std::any_of(roots.begin(), roots.end(), [&](const std::filesystem::path& root) {
    try {
      const auto rel = resolved.lexically_relative(common::resolve_folder(root));
      return !rel.empty() && *rel.begin() != "..";
    } catch (const common::FolderError&) {
      return false;
    }
  });
  if (!under_a_root) {
    std::string allowed;
    for (const auto& r : roots) allowed += (allowed.empty() ? "" : ", ") + r.string();
    throw RequestError(protocol::error_code::kBadRequest, "folder " + folder.string() + " is not under a folder the gallery may " + doing +
                                                              " into (" + (allowed.empty() ? std::string("none") : allowed) +
                                                              "; rgbaqd --copy-root DIR)");
  }
  return resolved;
}

}  // namespace rgbaq::daemon::http
