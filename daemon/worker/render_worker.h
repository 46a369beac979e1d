#pragma once
// The one worker that owns the engine session: claims jobs (preferring LoRA sets already loaded, then
// prompts whose embeddings are in memory), reuses a finished PNG left by an earlier run of the daemon instead of rendering again,
// looks embeddings up in the encoder cache, renders with progress events, checks for cancellation and
// shutdown between steps, and hands the image to the writer thread.
#include <deque>
#include <memory>
#include <string>

#include "daemon/base/daemon_config.h"
#include "daemon/base/daemon_state.h"
#include "daemon/base/event_hub.h"
#include "daemon/base/lora_folders.h"
#include "daemon/worker/output_writer.h"
#include "daemon/worker/worker_heartbeat.h"
#include "engine/encoder_cache.h"
#include "engine/session.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

class RenderWorker {
 public:
  RenderWorker(const DaemonConfig& config, engine::Session& session, const std::string& model_identity,
               DaemonState& state, EventHub& events, WorkerHeartbeat& heartbeat);

  // Until the daemon stops: a job in hand goes back to the queue at its next step; the PNGs already
  // rendered are written before it returns.
  void run();

 private:
  void handle(const storage::Job& job);
  bool reuse_finished_output(const storage::Job& job);
  engine::Tensor embeddings(const tokenizer::TemplatedPrompt& prompt, bool& cache_hit);
  // The LoRA lists of recent jobs whose files the session still holds, "" (none) always among them.
  std::vector<std::string> loaded_loras() const;

  const DaemonConfig& config_;
  engine::Session& session_;
  std::string model_identity_;
  DaemonState& state_;
  EventHub& events_;
  std::unique_ptr<storage::QueueStore> store_;
  OutputWriter writer_;
  engine::EncoderCache cache_;
  std::deque<uint64_t> cached_prompts_;  // prompt keys of recent encodes, for claim preference
  std::deque<std::string> recent_loras_;  // LoRA lists of recent jobs, newest first
  LoraFileHashes lora_hashes_;            // the LoRA files' hashes, for judging finished outputs
  WorkerHeartbeat& heartbeat_;
};

}  // namespace rgbaq::daemon
