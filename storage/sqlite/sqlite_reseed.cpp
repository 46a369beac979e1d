// The SQLite queue's re-seeding (issue 40): in the transaction that completes a flagged job, one more job
// for its row, with a seed the row has not used and an output path nobody else's content owns. BEGIN
// IMMEDIATE serializes completions, so two workers finishing jobs of one row never pick the same seed.
#include <algorithm>

#include "storage/sqlite/sqlite_queue_store.h"
#include "storage/sqlite/sqlite_store_helpers.h"

namespace rgbaq::storage {

void SqliteQueueStore::reseed_locked(const store_shared::CompletedJob& done, const std::vector<NewJob>& candidates) {
  SQLite::Statement reseeded(db_, "SELECT count(*) FROM jobs WHERE run_id = ? AND row_key = ? AND replaces <> 0");
  reseeded.bind(1, done.run_id);
  reseeded.bind(2, static_cast<int64_t>(done.row_key));
  reseeded.executeStep();
  if (reseeded.getColumn(0).getInt64() >= done.reseed_max) return;
  SQLite::Statement seed_used(db_, "SELECT 1 FROM jobs WHERE run_id = ? AND row_key = ? AND seed = ?");
  SQLite::Statement owner(db_, "SELECT content_key FROM outputs WHERE path = ?");
  for (const NewJob& j : candidates) {  // of the row: check_reseed_candidates
    seed_used.bind(1, done.run_id);
    seed_used.bind(2, static_cast<int64_t>(done.row_key));
    seed_used.bind(3, static_cast<int64_t>(j.seed));
    const bool used = seed_used.executeStep();
    seed_used.reset();
    if (used) continue;
    // As append_jobs claims a path: free, or owned by the same content (the same image); never taken over.
    owner.bindNoCopy(1, j.output_path);
    const bool owned = owner.executeStep();
    const bool same_content = owned && owner.getColumn(0).getInt64() == static_cast<int64_t>(j.content_key);
    owner.reset();
    if (owned && !same_content) continue;
    const double now = sqlite_store::now_seconds();
    if (!owned) {
      SQLite::Statement claim(db_, "INSERT INTO outputs (path, content_key, run_id) VALUES (?, ?, ?)");
      claim.bindNoCopy(1, j.output_path);
      claim.bind(2, static_cast<int64_t>(j.content_key));
      claim.bind(3, done.run_id);
      claim.exec();
    }
    SQLite::Statement ins(db_, sqlite_store::kInsertJob);
    sqlite_store::bind_new_job(ins, done.run_id, j, done.priority, now, done.id);
    ins.exec();
    const int64_t id = db_.getLastInsertRowid();
    SQLite::Statement link(db_, "UPDATE jobs SET replaced_by = ? WHERE id = ?");
    link.bind(1, id);
    link.bind(2, done.id);
    link.exec();
    // The counters' trigger counts state changes; an insert into a published run counts here.
    SQLite::Statement count(db_, "INSERT INTO run_counts (run_id, state, n) VALUES (?, 'queued', 1) "
                                 "ON CONFLICT (run_id, state) DO UPDATE SET n = n + 1");
    count.bind(1, done.run_id);
    count.exec();
    return;
  }
}

std::vector<uint64_t> SqliteQueueStore::row_seeds(int64_t run_id, uint64_t row_key) {
  SQLite::Statement q(db_, "SELECT DISTINCT seed FROM jobs WHERE run_id = ? AND row_key = ? ORDER BY seed");
  q.bind(1, run_id);
  q.bind(2, static_cast<int64_t>(row_key));
  std::vector<uint64_t> seeds;
  while (q.executeStep()) seeds.push_back(static_cast<uint64_t>(q.getColumn(0).getInt64()));
  std::sort(seeds.begin(), seeds.end());  // as unsigned: the column orders the bits as signed
  return seeds;
}

}  // namespace rgbaq::storage
