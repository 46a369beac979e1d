// A helper process for the queue store's crash and concurrency tests. It prints a line only after the
// transaction it reports has committed, so the parent knows what was acknowledged when it kills it.
//   queue_worker crash DB SEED        submit small runs and claim/complete jobs in a loop until killed
//   queue_worker submit DB RUNS JOBS  submit RUNS runs of JOBS jobs, then exit
//   queue_worker claim DB STOPFILE    claim and complete until nothing is left and STOPFILE exists
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "storage/sqlite/sqlite_queue_store.h"

using rgbaq::storage::NewJob;
using rgbaq::storage::SqliteQueueStore;

namespace {

void say(const std::string& line) {
  const std::string l = line + "\n";
  if (write(1, l.data(), l.size()) < 0) std::exit(3);  // one write: a line arrives whole or not at all
}

std::vector<NewJob> make_jobs(int n, uint64_t tag) {
  std::vector<NewJob> jobs;
  for (int i = 0; i < n; ++i) {
    NewJob j;
    j.prompt = "prompt " + std::to_string(tag % 7);
    j.seed = tag * 1000 + i;
    j.width = j.height = 256;
    j.output_path = "/out/" + std::to_string(tag) + "_" + std::to_string(i) + ".png";
    j.content_key = tag * 1000 + static_cast<uint64_t>(i);
    j.prompt_key = tag % 7;
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string mode = argv[1];
  // A lease of 0 in crash mode: the parent recovers right after each kill, as a restarted daemon that
  // knows its old process is gone would.
  SqliteQueueStore store(argv[2], {.lease_seconds = mode == "crash" ? 0.0 : 60.0});
  const int64_t worker = store.register_worker({"test-host", "boot", getpid(), "none", "none"});
  if (mode == "crash") {
    std::mt19937_64 rng(std::strtoull(argv[3], nullptr, 10));
    for (uint64_t round = 0;; ++round) {
      const int n = 1 + static_cast<int>(rng() % 20);
      const auto r = store.submit({"crash", "{}", "/out"}, make_jobs(n, rng()));
      say("S " + std::to_string(r.run_id) + " " + std::to_string(r.inserted));
      for (int k = 0; k < n; ++k) {
        const auto job = store.claim(worker);
        if (!job) break;
        if (rng() % 10 == 0) {
          store.fail(job->id, worker, "simulated failure");
          continue;
        }
        if (store.complete(job->id, worker, job->output_path, "{}")) say("C " + std::to_string(job->id));
      }
    }
  }
  if (mode == "submit") {
    const int runs = std::atoi(argv[3]), jobs = argc > 4 ? std::atoi(argv[4]) : 10;
    for (int r = 0; r < runs; ++r) {
      const auto res = store.submit({"concurrent", "{}", "/out"}, make_jobs(jobs, static_cast<uint64_t>(getpid()) * 100000 + r));
      say("S " + std::to_string(res.run_id) + " " + std::to_string(res.inserted));
    }
    return 0;
  }
  if (mode == "claim") {
    const std::filesystem::path stop = argv[3];
    for (;;) {
      const auto job = store.claim(worker);
      if (!job) {
        const auto queued = store.counts()[static_cast<int>(rgbaq::storage::JobState::kQueued)];
        if (std::filesystem::exists(stop) && queued == 0) return 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      say("C " + std::to_string(job->id));
      store.complete(job->id, worker, job->output_path, "{}");
    }
  }
  return 2;
}
