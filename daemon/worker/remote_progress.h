#pragma once
// The watch stream's view of jobs that other workers render (other hosts on a shared queue, or other
// daemons on one SQLite file): while anyone watches, the queue's running jobs are read once a second,
// and each change in the progress another worker recorded for its job (record_progress, written by its
// heartbeat) is published as this daemon's own workers publish their steps: a "progress" event, and
// "decoding" once the steps are done, each with the rendering host. This daemon's own jobs have their
// events from its render workers. Nothing is read while nobody watches.
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "daemon/base/daemon_config.h"
#include "daemon/base/event_hub.h"
#include "daemon/base/daemon_state.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

class RemoteProgress {
 public:
  // Starts the polling thread; the queue is opened when the first watcher comes.
  RemoteProgress(const DaemonConfig& config, EventHub& events, const DaemonState& state);
  ~RemoteProgress();  // stops the thread
  RemoteProgress(const RemoteProgress&) = delete;
  RemoteProgress& operator=(const RemoteProgress&) = delete;

 private:
  void loop();
  void poll();

  const DaemonConfig& config_;
  EventHub& events_;
  const DaemonState& state_;
  std::unique_ptr<storage::QueueStore> store_;
  std::map<int64_t, storage::JobProgress> published_;  // by job: what watchers were last told
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace rgbaq::daemon
