#pragma once
// Who waits on which image-API run (OpenAI's and A1111's, image_apis.h): requests attached to one run
// by an Idempotency-Key are counted, so that only when the last one hangs up are the run's queued jobs
// canceled; and the jobs canceled so, which a retry that attaches to the run queues again. In memory:
// a restart ends every request anyway, and a retry after it finds its run in the queue (the key is in
// the run's options) with its jobs as they were.
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace rgbaq::daemon::http {

class ImageApiRuns {
 public:
  // A request waits on `run`.
  void join(int64_t run);
  // A request no longer waits on `run` (answered, or its client gone); returns how many still do.
  int leave(int64_t run);
  int waiting(int64_t run) const;
  // `jobs` of `run` were canceled because nobody waited on them any more.
  void abandoned(int64_t run, const std::vector<int64_t>& jobs);
  // Those jobs of `run`, forgotten here: a request attached to the run queues them again.
  std::vector<int64_t> take_abandoned(int64_t run);

 private:
  mutable std::mutex mutex_;
  std::map<int64_t, int> waiting_;
  std::map<int64_t, std::vector<int64_t>> abandoned_;
};

}  // namespace rgbaq::daemon::http
