#pragma once
// A render worker as a worker of the queue (each of a daemon's render workers is one, with its own
// leases): registered at start (host, boot id, pid, engine, device), a heartbeat every lease/6 (10 s for
// the default 60 s lease) and at each render step, which extends the leases of the jobs it holds
// (WorkerState::held_jobs) and records its job's step in the queue (for watchers on other hosts), and
// recovery of other workers' expired leases every beat. A worker the queue forgot (silent for a whole
// lease) registers again.
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
  // Registers the worker (throws what the store throws; its id goes to worker.queue_id) and starts
  // the heartbeat thread.
  WorkerHeartbeat(const DaemonConfig& config, storage::WorkerInfo info, WorkerState& worker, DaemonState& state);
  ~WorkerHeartbeat();  // stops the thread and unregisters (a clean stop)

  int64_t worker_id() const { return worker_id_.load(); }
  // A render step: beat now unless the last beat was under a second ago (never blocks the step).
  void beat_soon();
  // A device fault: every lease of this worker ends now and recovery takes the jobs back as
  // interruptions (their attempts given back, as for a host that died), then the worker registers
  // again under a new id. Throws what the store throws (the leases then run out by themselves: the
  // heartbeat no longer renews the jobs the caller released).
  void give_back_leases();

 private:
  void loop();
  void beat();

  const DaemonConfig& config_;
  storage::WorkerInfo info_;
  WorkerState& worker_;
  DaemonState& state_;
  std::unique_ptr<storage::QueueStore> store_;
  std::mutex store_mutex_;  // the store's one connection: the beat, or a give-back on the worker's thread
  std::atomic<int64_t> worker_id_{0};
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool soon_ = false, done_ = false;
  storage::JobProgress recorded_;  // the progress last written, so an unchanged one is not written again
  std::thread thread_;
};

}  // namespace rgbaq::daemon
