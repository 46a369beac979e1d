#include "daemon/worker/job_completion.h"

#include <spdlog/spdlog.h>

#include "daemon/base/queue_row.h"

namespace rgbaq::daemon {

bool meets_reseed_on(jobs::QaFlags flags, const std::string& reseed_on) {
  if (reseed_on.empty()) return false;
  try {
    return (flags & jobs::parse_qa_flag_list(reseed_on)) != 0;
  } catch (const std::invalid_argument& e) {
    // Validated at submit: a name unknown here was queued by another rgbaq version (a shared queue).
    spdlog::warn("reseed_on \"{}\" is not understood by this rgbaqd ({}); not re-seeding", reseed_on, e.what());
    return false;
  }
}

void announce_reseed(storage::QueueStore& store, DaemonState& state, EventHub& events, const storage::Job& job,
                     const std::string& qa_flags) {
  try {
    const auto done = store.job(job.id);
    if (!done || done->replaced_by == 0) {
      spdlog::info("job {} ({}) is not re-seeded: its row has its {} re-seeded job{} already, or its next seeds' outputs are taken",
                   job.id, qa_flags, job.reseed_max, job.reseed_max == 1 ? "" : "s");
      return;
    }
    const auto next = store.job(done->replaced_by);
    spdlog::info("job {} ({}) re-seeded: job {} renders its row with seed {}", job.id, qa_flags, done->replaced_by,
                 next ? next->seed : 0);
    events.publish("job_reseeded", {{"job", job.id}, {"run", job.run_id}, {"qa", qa_flags}, {"replaced_by", done->replaced_by},
                                    {"seed", next ? nlohmann::json(next->seed) : nlohmann::json(nullptr)}});
    state.wake_worker();
  } catch (const std::exception& e) {
    spdlog::warn("job {}: reading whether it was re-seeded failed: {}", job.id, e.what());
  }
}

storage::Completion job_completion(storage::QueueStore& store, const storage::Job& job, const assets::AlphaCheck& check,
                                   std::string metadata_json) {
  storage::Completion c;
  c.output_path = job.output_path;
  c.metadata_json = std::move(metadata_json);
  c.qa_json = assets::alpha_check_json(check).dump();
  c.qa_flags = check.flags_text();
  if (job.reseed_max > 0 && meets_reseed_on(check.flags, job.reseed_on)) {
    try {
      auto rows = reseed_rows(job, store.row_seeds(job.run_id, job.row_key), kReseedCandidates);
      if (rows) {
        c.reseed_candidates = std::move(*rows);
      } else {
        spdlog::warn("job {} ({}) is not re-seeded: its row cannot be rebuilt exactly (queued by an older rgbaq?)", job.id, c.qa_flags);
      }
    } catch (const std::exception& e) {
      // The render is good: it is kept and recorded done, only its re-seed is lost.
      spdlog::warn("job {} ({}) is completed without a re-seed: reading its row's seeds failed: {}", job.id, c.qa_flags, e.what());
    }
  }
  return c;
}

}  // namespace rgbaq::daemon
