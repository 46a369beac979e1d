#pragma once
// A render worker: one engine session (on its own device, or the cpu), registered in the queue as a
// worker of its own (its own leases and heartbeat), claiming from the daemon's one queue (preferring the
// LoRA sets and prompts it used last). It reuses a finished PNG left by an earlier run instead of
// rendering again, takes embeddings from the daemon's shared encoder cache, renders with progress
// events, checks for cancellation and shutdown between steps, and hands the image to its writer thread.
// A device fault stays with the worker: the job goes back to the queue as an interruption, a session
// the fault poisoned is opened again, and a worker whose session cannot be opened again goes out of
// service (status says why) while the daemon's other workers go on.
#include <deque>
#include <memory>
#include <string>

#include "daemon/base/daemon_config.h"
#include "daemon/base/daemon_state.h"
#include "daemon/base/event_hub.h"
#include "daemon/base/lora_folders.h"
#include "daemon/worker/output_writer.h"
#include "daemon/worker/shared_encoder_cache.h"
#include "daemon/worker/worker_heartbeat.h"
#include "engine/device_fault.h"
#include "engine/session.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

// Allocates now what the largest image (1024x1024, the longest prompt) needs on the session's device,
// so that a session that cannot render it fails at start, not in a job (engine::Graphs::reserve).
void reserve_largest_render(engine::Session& session);

class RenderWorker {
 public:
  // Registers `info` as a queue worker (throws what the store throws) and opens its queue connections.
  // `components`: describe_component_files of the config's, read once for every worker.
  RenderWorker(const DaemonConfig& config, engine::Session& session, const std::string& model_identity,
               const nlohmann::json& components, DaemonState& state, WorkerState& worker, EventHub& events, SharedEncoderCache& encoder_cache,
               storage::WorkerInfo info);

  // Until the daemon stops, or the worker goes out of service: a job in hand goes back to the queue at
  // its next step; the PNGs already rendered are written before it returns.
  void run();

 private:
  void handle(const storage::Job& job);
  bool reuse_finished_output(const storage::Job& job);
  // The job back to the queue as an interruption; the session opened again when the fault poisoned it.
  void device_fault(const storage::Job& job, const engine::DeviceFault& fault);
  // The LoRA lists of recent jobs whose files the session still holds, "" (none) always among them.
  std::vector<std::string> loaded_loras() const;

  const DaemonConfig& config_;
  engine::Session& session_;
  std::string model_identity_;
  nlohmann::json components_;  // for each output's record
  DaemonState& state_;
  WorkerState& worker_;
  EventHub& events_;
  SharedEncoderCache& encoder_cache_;
  std::unique_ptr<WorkerHeartbeat> heartbeat_;
  std::unique_ptr<storage::QueueStore> store_;
  OutputWriter writer_;
  std::deque<uint64_t> cached_prompts_;  // prompt keys of recent jobs, for claim preference
  std::deque<std::string> recent_loras_;  // LoRA lists of recent jobs, newest first
  LoraFileHashes lora_hashes_;            // the LoRA files' hashes, for judging finished outputs
};

}  // namespace rgbaq::daemon
