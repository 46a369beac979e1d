#pragma once
// A run's manifest for its hook: the run's JSONL export (`rgbaq export RUN --format jsonl`, one job
// record a line, as the protocol's export gives them), written by the daemon into a folder of its own
// (DATA_DIR/manifests/run-N.jsonl, 0600, replaced atomically at each end of the run).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "storage/queue_store.h"

namespace rgbaq::daemon::hooks {

struct RunManifest {
  std::filesystem::path path;
  int64_t jobs = 0;
  // Done jobs whose output file is not there: the last PNG of a run is renamed into place just after
  // its job is recorded done, so a hook claimed at once may find it still missing (await_outputs).
  std::vector<std::filesystem::path> missing_outputs;
};

// Writes run `run_id`'s manifest into `dir` (made 0700 when missing), reading the jobs a page at a time;
// notes the done jobs finished after `recent` (seconds since the epoch) whose output is missing.
// Throws std::runtime_error naming the file when it cannot be written, or what the store throws.
RunManifest write_run_manifest(storage::QueueStore& store, int64_t run_id, const std::filesystem::path& dir, double recent);

// Waits until every path of `paths` exists, up to `limit`; returns those still missing.
std::vector<std::filesystem::path> await_outputs(std::vector<std::filesystem::path> paths, std::chrono::milliseconds limit);

}  // namespace rgbaq::daemon::hooks
