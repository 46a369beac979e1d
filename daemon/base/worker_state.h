#pragma once
// One render worker as the rest of the daemon sees it: its device, the job in hand and its step, the
// jobs whose leases its heartbeat renews, what it has done, and whether it is in service. The worker
// writes it; its heartbeat, its writer, the crash handler and `status` read it.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace rgbaq::daemon {

class WorkerState {
 public:
  WorkerState(int index, std::string device) : index_(index), device_(std::move(device)) {}
  WorkerState(const WorkerState&) = delete;
  WorkerState& operator=(const WorkerState&) = delete;

  int index() const { return index_; }                 // 0.. in the order of --devices (or --workers)
  const std::string& device() const { return device_; }  // "cpu", "cuda:0"
  // "w1 cuda:0": how logs, status and watch name the worker.
  std::string label() const { return "w" + std::to_string(index_) + " " + device_; }

  std::atomic<int64_t> queue_id{0};     // its registration in the queue (WorkerHeartbeat), 0 before
  std::atomic<int64_t> job{-1};         // the job it renders, -1 when none (the crash handler reads it)
  std::atomic<int> step{0}, steps{0};   // of that job
  std::atomic<uint64_t> images_done{0};       // PNGs its writer wrote
  std::atomic<uint64_t> session_restarts{0};  // sessions opened again after a device fault
  std::atomic<uint64_t> device_faults{0};     // jobs given back for a device fault
  std::atomic<int64_t> busy_ns{0};            // time spent with a job in hand, for images per hour
  std::atomic<uint64_t> device_peak_bytes{0};  // its session's peak device memory after its last render (cuda)

  // The session's device as it describes itself (again after a reopen).
  void set_description(std::string d) {
    std::lock_guard lock(mutex_);
    description_ = std::move(d);
  }
  std::string description() const {
    std::lock_guard lock(mutex_);
    return description_;
  }
  // Out of service for good (its device failed and its session could not be opened again): why.
  void set_out_of_service(std::string why) {
    std::lock_guard lock(mutex_);
    out_of_service_ = std::move(why);
  }
  std::optional<std::string> out_of_service() const {
    std::lock_guard lock(mutex_);
    return out_of_service_;
  }
  // The last device fault and what came of it, for status; empty when none.
  void set_last_fault(std::string what) {
    std::lock_guard lock(mutex_);
    last_fault_ = std::move(what);
  }
  std::string last_fault() const {
    std::lock_guard lock(mutex_);
    return last_fault_;
  }

  // The jobs whose leases this worker holds (claimed, rendering or waiting for its writer): its heartbeat
  // extends exactly these, so a job it lost track of (a claim whose answer a dropped connection ate)
  // lets its lease run out and goes back to the queue.
  void hold(int64_t job_id) {
    std::lock_guard lock(mutex_);
    held_.insert(job_id);
  }
  void release(int64_t job_id) {
    std::lock_guard lock(mutex_);
    held_.erase(job_id);
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
  void set_progress(int64_t job_id, int done, int total) {
    std::lock_guard lock(mutex_);
    progress_ = {job_id, done, total};
  }
  Progress progress() const {
    std::lock_guard lock(mutex_);
    return progress_;
  }

  // Images per hour while it had a job in hand (0 before its first image).
  double images_per_hour() const {
    const double busy_s = static_cast<double>(busy_ns.load()) / 1e9;
    return busy_s > 0 ? static_cast<double>(images_done.load()) * 3600.0 / busy_s : 0.0;
  }

 private:
  const int index_;
  const std::string device_;
  mutable std::mutex mutex_;
  std::string description_, last_fault_;
  std::optional<std::string> out_of_service_;
  std::set<int64_t> held_;
  Progress progress_;
};

}  // namespace rgbaq::daemon
