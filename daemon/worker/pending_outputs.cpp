#include "daemon/worker/pending_outputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/trusted_folder.h"

namespace rgbaq::daemon {
namespace {

void fsync_folder(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

// The note's outcome, for the log.
std::string settle(storage::QueueStore& store, const nlohmann::json& note) {
  const int64_t job_id = note.at("job").get<int64_t>();
  const std::filesystem::path output = note.at("output").get<std::string>();
  const std::string temp = note.at("temp").get<std::string>();
  const auto job = store.job(job_id);
  const bool ours = job && job->state == storage::JobState::kDone && job->metadata_json == note.at("metadata").get<std::string>();
  const int dfd = common::open_trusted_folder(output.parent_path());
  struct stat st {};
  if (::fstatat(dfd, temp.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
    ::close(dfd);
    return "its temporary " + temp + " is gone; nothing to do";
  }
  std::string outcome;
  if (ours && ::renameat(dfd, temp.c_str(), dfd, output.filename().c_str()) == 0) {
    ::fsync(dfd);
    outcome = "recorded done by this render before the stop: its PNG " + output.string() + " is now in place";
  } else if (ours) {
    outcome = "renaming its temporary into place failed (" + std::string(std::strerror(errno)) + ")";
  } else {
    ::unlinkat(dfd, temp.c_str(), 0);
    outcome = "not recorded done by this render (" + std::string(job ? storage::state_name(job->state) : "gone") +
              "): its temporary " + temp + " removed, the file at " + output.string() + " left as it is";
  }
  ::close(dfd);
  return outcome;
}

}  // namespace

PendingOutputNote::PendingOutputNote(const std::filesystem::path& dir, int64_t job, const std::filesystem::path& output_path,
                                     const std::string& temp_name, const std::string& metadata_json)
    : file_(dir / (std::to_string(job) + "-" + temp_name.substr(temp_name.rfind(".tmp") + 4) + ".json")) {
  std::filesystem::create_directories(dir);
  const std::string text = nlohmann::json({{"job", job}, {"output", output_path.string()}, {"temp", temp_name},
                                           {"metadata", metadata_json}})
                               .dump();
  const int fd = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) {
    if (fd >= 0) ::unlink(file_.c_str());
    throw std::runtime_error("cannot write the note " + file_.string() + ": " + std::strerror(error));
  }
  fsync_folder(dir);
}

PendingOutputNote::~PendingOutputNote() {
  if (!kept_) ::unlink(file_.c_str());
}

int settle_pending_outputs(storage::QueueStore& store, const std::filesystem::path& dir) {
  int settled = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const auto note = nlohmann::json::parse(in, nullptr, false);
    try {
      if (note.is_discarded()) throw std::runtime_error("not JSON");
      spdlog::info("job {}: a PNG was waiting to be put in place at a stop: {}", note.at("job").get<int64_t>(), settle(store, note));
    } catch (const std::exception& e) {
      spdlog::warn("the pending output note {} cannot be settled ({}); removed", entry.path().string(), e.what());
    }
    std::filesystem::remove(entry.path(), ec);
    ++settled;
  }
  return settled;
}

}  // namespace rgbaq::daemon
