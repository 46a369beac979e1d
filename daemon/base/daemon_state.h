#pragma once
// What the daemon shares between its render workers, their writers and its socket server: counters
// since start, each worker's state, a wake-up for the workers, and the stop flag.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "daemon/base/worker_state.h"

namespace rgbaq::daemon {

struct DaemonCounters {
  std::atomic<uint64_t> images_rendered{0};     // PNGs written
  std::atomic<uint64_t> outputs_reused{0};      // finished PNGs found on disk, marked done without rendering
  std::atomic<uint64_t> encoder_runs{0};
  std::atomic<uint64_t> cache_memory_hits{0}, cache_disk_hits{0}, cache_corrupt{0};
  std::atomic<uint64_t> jobs_failed{0}, jobs_canceled{0};
  // Not counters: what the encoder cache's folder holds now (every model's entries) and its budget.
  std::atomic<uint64_t> cache_disk_bytes{0}, cache_disk_entries{0}, cache_disk_budget{0};
};

class DaemonState {
 public:
  DaemonCounters counters;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // The HTTP API's address ("http://127.0.0.1:7878", "" when off): set once at start-up, before any
  // request is served.
  std::string http_url;

  bool stopping() const { return stop_.load(); }
  void request_stop() {
    stop_ = true;
    wake_worker();
  }
  // The render workers, added at start before any thread runs (the list never changes after).
  WorkerState& add_worker(int index, std::string device) {
    workers_.push_back(std::make_unique<WorkerState>(index, std::move(device)));
    return *workers_.back();
  }
  const std::vector<std::unique_ptr<WorkerState>>& workers() const { return workers_; }
  // Whether a queue worker id is one of this daemon's render workers.
  bool is_local_worker(int64_t queue_id) const {
    for (const auto& w : workers_) {
      if (w->queue_id.load() == queue_id) return true;
    }
    return false;
  }

  // New work may be there (a submit, a resume, a retry): the workers stop waiting.
  void wake_worker() {
    {
      std::lock_guard lock(mutex_);
      ++wakeups_;
    }
    cv_.notify_all();
  }
  // Whether the queue store works for the worker: a problem is shown by `status` and sd_notify STATUS=.
  struct Health {
    std::string problem;  // empty: healthy
    std::chrono::steady_clock::time_point since;
  };
  void set_problem(const std::string& problem) {
    std::lock_guard lock(mutex_);
    if (health_.problem.empty()) health_.since = std::chrono::steady_clock::now();
    health_.problem = problem;
  }
  void clear_problem() {
    std::lock_guard lock(mutex_);
    health_.problem.clear();
  }
  Health health() const {
    std::lock_guard lock(mutex_);
    return health_;
  }
  // Waits up to `timeout` or until the stop, whatever wakes the worker meanwhile.
  void wait_for_stop(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return stop_.load(); });
  }
  // Waits up to `timeout` for a wake-up or the stop.
  void wait_for_work(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    const uint64_t seen = wakeups_;
    cv_.wait_for(lock, timeout, [&] { return wakeups_ != seen || stop_.load(); });
  }

 private:
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  uint64_t wakeups_ = 0;
  Health health_;
  std::vector<std::unique_ptr<WorkerState>> workers_;
};

}  // namespace rgbaq::daemon
