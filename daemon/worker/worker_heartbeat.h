#pragma once
// This daemon as a worker of the queue: registered at start (host, boot id, pid, engine, device), a
// heartbeat every lease/6 (10 s for the default 60 s lease) and at each render step, which extends the
// leases of the jobs in hand (DaemonState::held_jobs) and records the job in hand's step in the queue
// (for watchers on other hosts), and recovery of other workers' expired leases every beat. A worker
// the queue forgot (silent for a whole lease) registers again.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/base/daemon_config.h"
#include "daemon/base/daemon_state.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

// This host as the queue knows it: --host (or the system's host name), the boot id, this process.
storage::WorkerInfo this_worker(const DaemonConfig& config, const std::string& engine, const std::string& device);

// At start: this host's workers that are dead (another boot, or their process gone) lose their leases
// now, so a restarted daemon takes its own interrupted job back at once rather than after a lease.
int64_t expire_dead_local_workers(storage::QueueStore& store, const storage::WorkerInfo& me);

class WorkerHeartbeat {
 public:
  // Registers the worker (throws what the store throws) and starts the heartbeat thread.
  WorkerHeartbeat(const DaemonConfig& config, storage::WorkerInfo info, DaemonState& state);
  ~WorkerHeartbeat();  // stops the thread and unregisters (a clean stop)

  int64_t worker_id() const { return worker_id_.load(); }
  // A render step: beat now unless the last beat was under a second ago (never blocks the step).
  void beat_soon();

 private:
  void loop();
  void beat();

  const DaemonConfig& config_;
  storage::WorkerInfo info_;
  DaemonState& state_;
  std::unique_ptr<storage::QueueStore> store_;
  std::atomic<int64_t> worker_id_{0};
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool soon_ = false, done_ = false;
  storage::JobProgress recorded_;  // the progress last written, so an unchanged one is not written again
  std::thread thread_;
};

}  // namespace rgbaq::daemon
