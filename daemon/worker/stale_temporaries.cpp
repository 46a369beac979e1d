#include "daemon/worker/stale_temporaries.h"

#include <sys/stat.h>

#include <set>
#include <string>
#include <utility>

#include <spdlog/spdlog.h>

namespace rgbaq::daemon {

std::vector<std::filesystem::path> unfinished_output_folders(const std::vector<storage::Run>& runs) {
  std::vector<std::filesystem::path> folders;
  std::set<std::string> seen;
  for (const auto& run : runs) {
    const auto& c = run.counts;
    if (c[static_cast<int>(storage::JobState::kQueued)] + c[static_cast<int>(storage::JobState::kRunning)] == 0) continue;
    if (seen.insert(run.out_dir).second) folders.emplace_back(run.out_dir);
  }
  return folders;
}

StaleScan remove_stale_temporaries(const std::vector<std::filesystem::path>& folders,
                                   std::filesystem::file_time_type older_than, const DaemonState& state) {
  StaleScan scan;
  std::set<std::pair<dev_t, ino_t>> listed;
  for (const auto& folder : folders) {
    if (state.stopping()) break;
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !listed.insert({st.st_dev, st.st_ino}).second) continue;
    ++scan.folders;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(folder, ec)) {
      const auto name = e.path().filename().string();
      if (name.size() > 1 && name[0] == '.' && name.find(".png.tmp") != std::string::npos && e.last_write_time(ec) < older_than &&
          !ec && std::filesystem::remove(e.path(), ec)) {
        ++scan.removed;
        spdlog::info("removed a stale temporary file {}", e.path().string());
      }
    }
  }
  return scan;
}

}  // namespace rgbaq::daemon
