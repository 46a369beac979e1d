#pragma once
// Temporary files a killed writer left next to the outputs (".NAME.png.tmpXXXXXX"), removed after a
// restart. Only the folders of runs with unfinished jobs can hold one (a killed writer's job went back
// to the queue), each folder is listed once however many runs share it (under any name), and the scan
// runs in the background once the daemon answers: a queue with a thousand finished runs over 50,000
// images would otherwise keep it from starting in time (issue 26, item 15).
#include <cstddef>
#include <filesystem>
#include <vector>

#include "daemon/base/daemon_state.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon {

// The output folders of the runs that have queued or running jobs, each name once, in run order.
std::vector<std::filesystem::path> unfinished_output_folders(const std::vector<storage::Run>& runs);

struct StaleScan {
  size_t folders = 0;  // distinct folders listed (one reached under two names counts once)
  size_t removed = 0;  // temporaries removed
};
// Lists each folder of `folders` once (by device and inode) and removes the temporaries last written
// before `older_than` (a writer of this daemon, started since, writes newer ones). Stops early when
// the daemon stops. A folder that is gone or unreadable is passed over.
StaleScan remove_stale_temporaries(const std::vector<std::filesystem::path>& folders,
                                   std::filesystem::file_time_type older_than, const DaemonState& state);

}  // namespace rgbaq::daemon
