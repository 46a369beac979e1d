// ThreadPool under back-to-back runs: a worker that wakes late must neither take a task of the next
// run with the previous run's (destroyed) function nor read the job while run() replaces it. The
// ThreadSanitizer preset reports the unlocked read this used to make; in any build a stale worker
// calling a dead function shows as a wrong count here.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>

#include "engine/cpu/thread_pool.h"

namespace rgbaq::engine::cpu {
namespace {

TEST(ThreadPool, BackToBackRunsEachRunEveryTaskOnceWithItsOwnFunction) {
  ThreadPool pool(4);
  for (int round = 0; round < 20000; ++round) {
    const int64_t tasks = 2 + round % 5;
    // A heap-allocated tally per run, freed right after: a stale worker would write into freed memory
    // (ASan) or add to the wrong run's tally.
    auto tally = std::make_unique<std::vector<std::atomic<int>>>(static_cast<size_t>(tasks));
    const int expected_round = round;
    std::atomic<int> wrong_round{0};
    pool.run(tasks, [&, expected_round](int64_t t) {
      if (expected_round != round) ++wrong_round;
      ++(*tally)[static_cast<size_t>(t)];
    });
    for (int64_t t = 0; t < tasks; ++t) ASSERT_EQ((*tally)[static_cast<size_t>(t)].load(), 1) << "round " << round << " task " << t;
    ASSERT_EQ(wrong_round.load(), 0);
  }
}

}  // namespace
}  // namespace rgbaq::engine::cpu
