#pragma once
// From validated job specs to queue rows: output paths (a function of the job), content keys for
// resubmission detection, prompt keys for encoder-cache-friendly claims.
#include <filesystem>
#include <vector>

#include "jobs/job_file.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

std::vector<storage::NewJob> to_queue_rows(const std::vector<jobs::JobSpec>& specs, const std::filesystem::path& out_dir);

}  // namespace rgbaq::daemon
