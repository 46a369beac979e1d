#include "daemon/worker/remote_progress.h"

#include <spdlog/spdlog.h>

#include "storage/open_queue_store.h"

namespace rgbaq::daemon {
namespace {

constexpr auto kPollInterval = std::chrono::seconds(1);  // a step of a real image takes longer
constexpr int64_t kMostJobs = 1000;                       // running at once: one or a few per host

}  // namespace

RemoteProgress::RemoteProgress(const DaemonConfig& config, EventHub& events, const DaemonState& state)
    : config_(config), events_(events), state_(state), thread_([this] { loop(); }) {}

RemoteProgress::~RemoteProgress() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RemoteProgress::loop() {
  bool failing = false;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (cv_.wait_for(lock, kPollInterval, [&] { return done_; })) return;
    }
    if (!events_.has_subscribers()) {
      published_.clear();  // the next watcher hears of every job in hand afresh
      continue;
    }
    try {
      poll();
      failing = false;
    } catch (const std::exception& e) {
      if (!failing) spdlog::warn("reading other workers' progress from the queue failed: {}", e.what());
      failing = true;  // said once; the worker's own health check reports a queue that stays down
    }
  }
}

void RemoteProgress::poll() {
  if (!store_) store_ = storage::open_queue_store(config_.queue_url(), config_.store_options());
  std::map<int64_t, storage::JobProgress> now;
  for (const auto& j : store_->list_jobs(std::nullopt, storage::JobState::kRunning, kMostJobs)) {
    if (state_.is_local_worker(j.worker_id) || j.steps == 0) continue;  // ours have their own events; nothing recorded yet
    const storage::JobProgress p{j.id, j.step, j.steps, j.decoding};
    now[j.id] = p;
    const auto before = published_.find(j.id);
    if (before != published_.end() && before->second == p) continue;
    events_.publish("progress", {{"job", j.id}, {"run", j.run_id}, {"step", j.step}, {"steps", j.steps}, {"width", j.width},
                                 {"height", j.height}, {"host", j.host}});
    if (j.decoding && (before == published_.end() || !before->second.decoding)) {
      events_.publish("decoding", {{"job", j.id}, {"run", j.run_id}, {"host", j.host}});
    }
  }
  published_ = std::move(now);
}

}  // namespace rgbaq::daemon
