#pragma once
// A submit request, from its parameters to queue rows: the file validated again (token length needs
// the tokenizer), then expanded and inserted in bounded batches, each its own short transaction, so
// neither memory nor the database's write lock grows with the job count. Output paths are a function
// of the job; content keys detect resubmissions; prompt keys serve encoder-cache-friendly claims.
#include <cstdint>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/base/queue_row.h"
#include "engine/session.h"
#include "jobs/job_file.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

struct SubmitLimits {
  uint64_t max_jobs = jobs::kDefaultMaxJobs;  // the daemon's --max-jobs-per-submit
  size_t batch_jobs = 1000;                   // jobs a transaction inserts: a few ms of write lock each
  std::vector<std::filesystem::path> lora_dirs;  // where a job's LoRA names must be found (daemon/lora_folders.h)
};

// Handles the protocol's "submit": returns {"run", "jobs", "skipped", "duplicates_in_file", "reusable"}
// (or {"jobs", "dry_run"}). "reusable" counts the jobs whose output already holds their image (an
// earlier run's, same prompt, seed, size and model `model_identity`): the worker marks them done
// without rendering. When --skip-duplicates leaves nothing to queue, no run is made: "run" is null.
// Throws RequestError: bad_request for a malformed or out-of-range parameter (naming it) or an output
// directory that cannot be written (with the OS's reason), invalid_file with one detail per error
// (line, column, field) for a bad file or an output path another job owns or where a PNG holding
// another image already is; nothing of a refused submit stays in the queue.
nlohmann::json submit_job_file(storage::QueueStore& store, const engine::Session& session, const std::string& model_identity,
                               const nlohmann::json& params, const SubmitLimits& limits);

// to_queue_row and to_queue_rows: daemon/base/queue_row.h (re-seeding builds a row's next jobs with them).

}  // namespace rgbaq::daemon
