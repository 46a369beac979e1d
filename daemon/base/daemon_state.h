#pragma once
// What the daemon shares between its worker, its writer and its socket server: counters since start,
// the job in hand, a wake-up for the worker, and the stop flag.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rgbaq::daemon {

struct DaemonCounters {
  std::atomic<uint64_t> images_rendered{0};     // PNGs written
  std::atomic<uint64_t> outputs_reused{0};      // finished PNGs found on disk, marked done without rendering
  std::atomic<uint64_t> encoder_runs{0};
  std::atomic<uint64_t> cache_memory_hits{0}, cache_disk_hits{0}, cache_corrupt{0};
  std::atomic<uint64_t> jobs_failed{0}, jobs_canceled{0};
  std::atomic<int64_t> current_job{-1};
  std::atomic<int> current_step{0}, current_steps{0};
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
  // New work may be there (a submit, a resume, a retry): the worker stops waiting.
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
  // The jobs whose leases this daemon holds (claimed, rendering or waiting for the writer): the heartbeat
  // extends exactly these, so a job we lost track of (a claim whose answer a dropped connection ate)
  // lets its lease run out and goes back to the queue.
  void hold(int64_t job) {
    std::lock_guard lock(mutex_);
    held_.insert(job);
  }
  void release(int64_t job) {
    std::lock_guard lock(mutex_);
    held_.erase(job);
  }
  std::vector<int64_t> held_jobs() const {
    std::lock_guard lock(mutex_);
    return {held_.begin(), held_.end()};
  }
  // The job in hand's render progress as the worker last reported it (its step callback): the heartbeat
  // records it in the queue, where watchers on every host read it.
  struct Progress {
    int64_t job = 0;
    int step = 0, steps = 0;
  };
  void set_progress(int64_t job, int step, int steps) {
    std::lock_guard lock(mutex_);
    progress_ = {job, step, steps};
  }
  Progress progress() const {
    std::lock_guard lock(mutex_);
    return progress_;
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
  std::set<int64_t> held_;
  Progress progress_;
};

}  // namespace rgbaq::daemon
