#include "engine/cpu/thread_pool.h"

#include <algorithm>

namespace rgbaq::engine::cpu {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain(const std::function<void(int64_t)>& job, int64_t tasks) {
  for (int64_t task; (task = next_.fetch_add(1)) < tasks;) job(task);
}

void ThreadPool::work() {
  uint64_t seen = 0;
  for (;;) {
    // The job and its size are read under the lock, with busy_ raised in the same breath: run() cannot
    // return (and the next run() cannot replace them) until this worker is done with them. A worker that
    // wakes after its run() already finished finds job_ cleared and takes no task from the next one.
    const std::function<void(int64_t)>* job = nullptr;
    int64_t tasks = 0;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (!job_) continue;
      job = job_;
      tasks = tasks_;
      ++busy_;
    }
    drain(*job, tasks);
    {
      std::lock_guard lock(mutex_);
      if (--busy_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::run(int64_t tasks, const std::function<void(int64_t)>& fn) {
  if (tasks <= 0) return;
  if (workers_.empty() || tasks == 1) {
    for (int64_t t = 0; t < tasks; ++t) fn(t);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    job_ = &fn;
    tasks_ = tasks;
    next_ = 0;
    ++generation_;
  }
  wake_.notify_all();
  drain(fn, tasks);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0 && next_ >= tasks_; });
  job_ = nullptr;
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, static_cast<int64_t>(size()) * 4);
  const int64_t per = (n + chunks - 1) / chunks;
  run((n + per - 1) / per, [&](int64_t c) { fn(c * per, std::min(n, (c + 1) * per)); });
}

}  // namespace rgbaq::engine::cpu
