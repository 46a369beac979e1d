#pragma once
// A job spec as the queue stores it: the one place where a job's output path, content key, row key and
// prompt key are computed, for the submit (daemon/api/job_submission.h) and for re-seeding (a row's next
// seeds, built by the writer when an image's alpha check meets the job's reseed_on).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "jobs/job_file.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

storage::NewJob to_queue_row(const jobs::JobSpec& spec, const std::filesystem::path& out_dir);
std::vector<storage::NewJob> to_queue_rows(const std::vector<jobs::JobSpec>& specs, const std::filesystem::path& out_dir);

// The rows of `job`'s row (its spec, output folder and re-seed settings) with the next `count` seeds
// after the highest in `used` (the seeds its row has, ascending: QueueStore::row_seeds), skipping used ones and
// wrapping past 2^64 - 1, in order. nullopt when to_queue_row does not give back the job's own output
// path, content key and row key for its own seed (a job queued by an older rgbaq): a row that cannot be
// rebuilt exactly is not re-seeded.
std::optional<std::vector<storage::NewJob>> reseed_rows(const storage::Job& job, const std::vector<uint64_t>& used, int count);

}  // namespace rgbaq::daemon
