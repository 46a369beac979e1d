#pragma once
// What a worker hands the queue when a job is done (storage::Completion): its image's alpha check and,
// when the check's flags meet the job's reseed_on, the candidates for its row's next job, which the
// store inserts (the first that fits) in the transaction that completes the job. The writer thread
// builds it from the pixels it writes; the reuse of a finished output from the pixels of the file.
#include <string>

#include "assets/alpha_check.h"
#include "daemon/base/daemon_state.h"
#include "daemon/base/event_hub.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

// Candidates offered per re-seed: the row's next seeds, so that one whose output path another run's
// job holds, or whose seed a worker finishing another job of the row took meanwhile, has successors.
inline constexpr int kReseedCandidates = 4;

// Reads the row's seeds from `store` (QueueStore::row_seeds) only when the job is to be re-seeded. A
// failure to read them is logged (naming the job and the error) and leaves no re-seed candidates: the
// job is completed all the same.
storage::Completion job_completion(storage::QueueStore& store, const storage::Job& job, const assets::AlphaCheck& check,
                                   std::string metadata_json);

// After a completion with re-seed candidates: the job the store queued for the row, if it did (none:
// the row had its reseed_max already, or no candidate fitted), logged and announced ("job_reseeded"),
// and a worker woken for it. Never throws: the job is done whatever this finds.
void announce_reseed(storage::QueueStore& store, DaemonState& state, EventHub& events, const storage::Job& job,
                     const std::string& qa_flags);

// Whether `flags` (assets::AlphaCheck::flags) meet `reseed_on` ("cut_off,empty"; "" never does).
bool meets_reseed_on(jobs::QaFlags flags, const std::string& reseed_on);

}  // namespace rgbaq::daemon
