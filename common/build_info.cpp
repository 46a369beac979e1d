#include "common/build_info.h"

#include "build_info.inc"  // generated at build time by cmake/build_info.cmake

namespace rgbaq::common {

const char* project_version() { return RGBAQ_VERSION; }
const char* git_commit() { return RGBAQ_GIT_COMMIT; }

std::string version_text(const std::string& program, const std::vector<std::string>& engines) {
  std::string names;
  for (const auto& e : engines) names += (names.empty() ? "" : ", ") + e;
  return program + " " + RGBAQ_VERSION + " (git " + RGBAQ_GIT_COMMIT + ")\nengines: " + names + "\n";
}

}  // namespace rgbaq::common
