#pragma once
// The writer thread: PNG encoding and writing run here, off the worker, so the next job's DiT work does
// not wait. Each PNG goes to a temporary file in its folder (opened as common/trusted_folder.h says) and
// is fsynced; the job is marked done (fenced by its lease), and only then is the PNG renamed into place. A write error or a store error (busy, disk full) fails that job's attempt with the
// reason; one that no retry can fix (the output folder is a file, read-only, not ours) fails the job at
// once. The daemon carries on.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/base/daemon_state.h"
#include "daemon/base/event_hub.h"
#include "storage/queue_store.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {

struct FinishedRender {
  storage::Job job;
  std::vector<uint8_t> rgba;
  int width = 0, height = 0;
  storage::RenderMetadata metadata;
  nlohmann::json components;  // the single component files rendered with (describe_component_files), or {}
};

class OutputWriter {
 public:
  // The writer of one render worker: it releases that worker's leases and counts its images. Its notes
  // of PNGs between their record and their rename go to `pending_dir` (pending_outputs.h).
  OutputWriter(const std::string& queue_url, const storage::StoreOptions& options, std::filesystem::path pending_dir,
               DaemonState& state, WorkerState& worker, EventHub& events);
  ~OutputWriter();

  // Waits while two renders are already pending (they hold whole images in memory).
  void enqueue(FinishedRender render);
  // Waits until everything enqueued is written and recorded (the thread goes on).
  void wait_idle();
  // Writes everything pending, then stops the thread.
  void finish();

 private:
  void loop();
  void write(FinishedRender& render);
  // report_failure, catching what the store throws: the writer thread never ends on an exception.
  void record_failure(const storage::Job& job, const std::string& reason,
                      storage::Failure failure = storage::Failure::kRetry);

  std::unique_ptr<storage::QueueStore> store_;
  std::filesystem::path pending_dir_;
  DaemonState& state_;
  WorkerState& worker_;
  EventHub& events_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<FinishedRender> pending_;
  bool busy_ = false, done_ = false;
  std::thread thread_;
};

// Publishes run_done when the job's run has nothing queued or running left.
void publish_if_run_finished(storage::QueueStore& store, EventHub& events, int64_t run_id);

// Records a failed attempt (queued again after a backoff, failed at the limit, or failed now when
// `failure` is permanent), logs it and tells the watchers. A job no longer this worker's (its lease was
// lost) is left to its new holder: logged, not counted.
void report_failure(storage::QueueStore& store, DaemonState& state, EventHub& events, const storage::Job& job,
                    const std::string& reason, storage::Failure failure = storage::Failure::kRetry);

// Why a transition of `job` (as this worker claimed it) was refused, for the log: where the job is now
// (running under another worker after this one's lease ran out, queued, done...).
std::string lost_lease(storage::QueueStore& store, const storage::Job& job);

// Whether an output that could not be written can be written by trying again: a folder that is gone,
// is not a folder, is read-only or refuses this user, or a name too long, never can (kPermanent); a full
// disk, an I/O error, too many open files, or a cause unknown may pass (kRetry).
storage::Failure write_failure_kind(std::error_code cause);

}  // namespace rgbaq::daemon
