#include "daemon/hooks/run_manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "daemon/api/request_handler.h"

namespace rgbaq::daemon::hooks {
namespace {

constexpr int64_t kPageJobs = 1000;

}  // namespace

RunManifest write_run_manifest(storage::QueueStore& store, int64_t run_id, const std::filesystem::path& dir, double recent) {
  std::filesystem::create_directories(dir);
  RunManifest m;
  m.path = dir / ("run-" + std::to_string(run_id) + ".jsonl");
  // Written beside it and renamed over it: a hook of an earlier end still reading the old one keeps it.
  struct Temporary {
    std::string path;
    int fd = -1;
    ~Temporary() {
      if (fd >= 0) ::close(fd);
      if (!path.empty()) ::unlink(path.c_str());
    }
  } temporary{m.path.string() + ".tmp" + std::to_string(::getpid())};
  ::unlink(temporary.path.c_str());  // one a killed daemon of this pid left
  temporary.fd = ::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (temporary.fd < 0) throw std::runtime_error("cannot create " + temporary.path + ": " + std::strerror(errno));
  const auto cannot_write = [&] { return std::runtime_error("cannot write " + m.path.string() + ": " + std::strerror(errno)); };
  for (int64_t after = 0;;) {
    const auto page = store.list_jobs({.run = run_id, .after_id = after, .limit = kPageJobs});
    std::string text;
    for (const auto& j : page) {
      // The export's line, as the socket sends it (RequestHandler::export_run, invalid UTF-8 replaced).
      text += job_json(j, true).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      std::error_code ec;
      if (j.state == storage::JobState::kDone && j.finished_at > recent && !std::filesystem::exists(j.output_path, ec)) {
        m.missing_outputs.emplace_back(j.output_path);
      }
    }
    if (::write(temporary.fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) throw cannot_write();
    m.jobs += static_cast<int64_t>(page.size());
    if (static_cast<int64_t>(page.size()) < kPageJobs) break;
    after = page.back().id;
  }
  if (::fsync(temporary.fd) != 0 || ::rename(temporary.path.c_str(), m.path.c_str()) != 0) throw cannot_write();
  temporary.path.clear();  // renamed: nothing to remove
  return m;
}

std::vector<std::filesystem::path> await_outputs(std::vector<std::filesystem::path> paths, std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::erase_if(paths, [](const std::filesystem::path& p) {
      std::error_code ec;
      return std::filesystem::exists(p, ec);
    });
    if (paths.empty() || std::chrono::steady_clock::now() >= until) return paths;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace rgbaq::daemon::hooks
