// The PostgreSQL queue's re-seeding (issue 40): in the transaction that completes a flagged job, one more
// job for its row, with a seed the row has not used and an output path nobody else's content owns. The
// run's row is locked first, and each statement after it reads what committed before (READ COMMITTED),
// so two workers finishing jobs of one row at once never pick the same seed, nor both the last place.
#include <algorithm>

#include "storage/postgres/postgres_queue_store.h"
#include "storage/postgres/postgres_store_helpers.h"

namespace rgbaq::storage {

using postgres_store::num;

void PostgresQueueStore::reseed_in_transaction(const store_shared::CompletedJob& done, const std::vector<NewJob>& candidates) {
  const std::string run = num(done.run_id), row = num(done.row_key);
  db_->exec("SELECT 1 FROM runs WHERE id = $1 FOR NO KEY UPDATE", {run});
  const int64_t reseeded =
      db_->exec("SELECT count(*) FROM jobs WHERE run_id = $1 AND row_key = $2 AND replaces <> 0", {run, row}).int64(0, 0);
  if (reseeded >= done.reseed_max) return;
  for (const NewJob& j : candidates) {  // of the row: check_reseed_candidates
    if (!db_->exec("SELECT 1 FROM jobs WHERE run_id = $1 AND row_key = $2 AND seed = $3", {run, row, num(j.seed)}).empty()) {
      continue;
    }
    // As append_jobs claims a path: free, or owned by the same content (the same image); never taken over.
    const bool claimed = db_->exec("INSERT INTO outputs (path, content_key, run_id) VALUES ($1, $2, $3) ON CONFLICT (path) "
                                   "DO NOTHING",
                                   {j.output_path, num(j.content_key), run})
                             .affected() == 1;
    if (!claimed && db_->exec("SELECT 1 FROM outputs WHERE path = $1 AND content_key = $2", {j.output_path, num(j.content_key)})
                        .empty()) {
      continue;
    }
    const int64_t id =
        db_->exec("INSERT INTO jobs (run_id, prompt, seed, width, height, name, priority, state, created_at, output_path, "
                  "content_key, prompt_key, lora, template_text, choices_json, row_key, reseed_on, reseed_max, replaces) "
                  "VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', rgbaq_now(), $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) "
                  "RETURNING id",
                  {run, j.prompt, num(j.seed), num(j.width), num(j.height), j.name, num(done.priority), j.output_path,
                   num(j.content_key), num(j.prompt_key), j.lora, j.template_text, j.choices_json, row, j.reseed_on,
                   num(j.reseed_max), num(done.id)})
            .int64(0, 0);
    db_->exec("UPDATE jobs SET replaced_by = $1 WHERE id = $2", {num(id), num(done.id)});
    // The counters' trigger counts state changes; an insert into a published run counts here.
    db_->exec("INSERT INTO run_counts (run_id, state, stripe, n) VALUES ($1, 'queued', pg_backend_pid() % 16, 1) "
              "ON CONFLICT (run_id, state, stripe) DO UPDATE SET n = run_counts.n + 1",
              {run});
    return;
  }
}

std::vector<uint64_t> PostgresQueueStore::row_seeds(int64_t run_id, uint64_t row_key) {
  const auto r = db_->retrying([&] {
    return db_->exec("SELECT DISTINCT seed FROM jobs WHERE run_id = $1 AND row_key = $2", {num(run_id), num(row_key)});
  });
  std::vector<uint64_t> seeds;
  for (int i = 0; i < r.rows(); ++i) seeds.push_back(static_cast<uint64_t>(r.int64(i, 0)));
  std::sort(seeds.begin(), seeds.end());  // as unsigned: the column orders the bits as signed
  return seeds;
}

}  // namespace rgbaq::storage
