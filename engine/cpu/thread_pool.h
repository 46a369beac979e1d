#pragma once
// A fixed pool of worker threads for the CPU engine. Work is split into tasks whose results do not
// depend on which thread runs them, so outputs are identical for any thread count.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rgbaq::engine::cpu {

class ThreadPool {
 public:
  // `threads` counts the calling thread; 0 means one per hardware thread.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for every task in [0, tasks) and returns when all are done. Not re-entrant.
  void run(int64_t tasks, const std::function<void(int64_t task)>& fn);

  // fn(begin, end) over [0, n) in chunks of at least `grain`.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

 private:
  void work();
  void drain(const std::function<void(int64_t)>& job, int64_t tasks);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<int64_t> next_{0};
  int busy_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace rgbaq::engine::cpu
