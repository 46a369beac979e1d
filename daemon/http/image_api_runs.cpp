#include "daemon/http/image_api_runs.h"

namespace rgbaq::daemon::http {

void ImageApiRuns::join(int64_t run) {
  std::lock_guard lock(mutex_);
  ++waiting_[run];
}

int ImageApiRuns::leave(int64_t run) {
  std::lock_guard lock(mutex_);
  const auto it = waiting_.find(run);
  if (it == waiting_.end()) return 0;
  const int left = --it->second;
  if (left <= 0) waiting_.erase(it);
  return left > 0 ? left : 0;
}

int ImageApiRuns::waiting(int64_t run) const {
  std::lock_guard lock(mutex_);
  const auto it = waiting_.find(run);
  return it == waiting_.end() ? 0 : it->second;
}

void ImageApiRuns::abandoned(int64_t run, const std::vector<int64_t>& jobs) {
  if (jobs.empty()) return;
  std::lock_guard lock(mutex_);
  auto& known = abandoned_[run];
  known.insert(known.end(), jobs.begin(), jobs.end());
}

std::vector<int64_t> ImageApiRuns::take_abandoned(int64_t run) {
  std::lock_guard lock(mutex_);
  const auto it = abandoned_.find(run);
  if (it == abandoned_.end()) return {};
  std::vector<int64_t> jobs = std::move(it->second);
  abandoned_.erase(it);
  return jobs;
}

}  // namespace rgbaq::daemon::http
