#pragma once
// The notes that make "recorded done, then renamed into place" safe across a crash. A worker may put a
// PNG at a job's output path only once the queue has recorded the job done by it (a fenced complete):
// a worker that stalled past its lease and lost the job must never replace the PNG of the worker that
// finished it. Between that commit and the rename a crash would leave a done job whose PNG is still its
// temporary; a note in the data directory, written (fsynced) before the commit and removed after the
// rename, lets the next start finish the rename, or remove the temporary of a job the queue does not
// record as this render's.
#include <cstdint>
#include <filesystem>
#include <string>

#include "storage/queue_store.h"

namespace rgbaq::daemon {

class PendingOutputNote {
 public:
  // Writes the note into `dir` (created 0700): the job, its output folder and file, the temporary's
  // name, and the metadata the complete will record. Throws naming the file when it cannot be written.
  PendingOutputNote(const std::filesystem::path& dir, int64_t job, const std::filesystem::path& output_path,
                    const std::string& temp_name, const std::string& metadata_json);
  // Removes the note (the rename is done, or the temporary is gone).
  ~PendingOutputNote();
  PendingOutputNote(const PendingOutputNote&) = delete;
  PendingOutputNote& operator=(const PendingOutputNote&) = delete;
  // Leaves the note for the next start (the outcome is not known, or the rename failed).
  void keep() { kept_ = true; }

 private:
  std::filesystem::path file_;
  bool kept_ = false;
};

// At start, before anything removes stale temporaries: each note left in `dir` by a crash is settled. A
// job the queue records done with the note's metadata (this render's) gets its temporary renamed into
// place; for any other the temporary is removed. Each outcome is logged; the note is removed. Returns
// the notes settled.
int settle_pending_outputs(storage::QueueStore& store, const std::filesystem::path& dir);

}  // namespace rgbaq::daemon
