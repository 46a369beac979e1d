// The encoder cache the render workers share: a prompt one worker encodes serves the others, and a
// worker that needs a prompt another is encoding waits for it rather than encoding it again (so
// encoder runs = distinct prompts); an encode that fails leaves the prompt to the next worker.
#include "daemon/worker/shared_encoder_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>

#include "tests/test_temp_dir.h"

namespace rgbaq::daemon {
namespace {

engine::Tensor embedding(float value) { return engine::Tensor::from_f32({2, 3}, std::vector<float>(6, value)); }

TEST(SharedEncoderCache, TwoWorkersAskingForOnePromptAtOnceEncodeItOnce) {
  TempDir dir;
  DaemonCounters counters;
  SharedEncoderCache cache("encoder-a", 1 << 20, dir.path() / "cache", UINT64_MAX, counters);
  const std::vector<int32_t> fox = {1, 2, 3};
  std::promise<void> started, release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<int> encodes{0};
  auto first = std::async(std::launch::async, [&] {
    return cache.get(fox, [&] {
      ++encodes;
      started.set_value();
      go.wait();  // still encoding while the second worker asks
      return embedding(7.0f);
    });
  });
  started.get_future().wait();
  auto second = std::async(std::launch::async, [&] {
    return cache.get(fox, [&] {
      ++encodes;
      return embedding(-1.0f);
    });
  });
  // The second waits for the first's encode, however long it takes.
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  release.set_value();
  const auto a = first.get(), b = second.get();
  EXPECT_EQ(encodes.load(), 1);
  EXPECT_FALSE(a.cache_hit);
  EXPECT_TRUE(b.cache_hit);
  EXPECT_EQ(b.embeds.f32()[5], 7.0f) << "the first worker's embedding";
  EXPECT_EQ(counters.encoder_runs.load(), 1u);
  EXPECT_EQ(counters.cache_memory_hits.load(), 1u);
  // Another prompt is not held up by these.
  EXPECT_FALSE(cache.get({4, 5}, [] { return embedding(2.0f); }).cache_hit);
  EXPECT_EQ(counters.encoder_runs.load(), 2u);
}

TEST(SharedEncoderCache, AFailedEncodeLeavesThePromptToTheWorkerWaitingForIt) {
  TempDir dir;
  DaemonCounters counters;
  SharedEncoderCache cache("encoder-a", 1 << 20, dir.path() / "cache", UINT64_MAX, counters);
  const std::vector<int32_t> owl = {9, 9};
  std::promise<void> started, release;
  std::shared_future<void> go = release.get_future().share();
  auto failing = std::async(std::launch::async, [&] {
    return cache.get(owl, [&]() -> engine::Tensor {
      started.set_value();
      go.wait();
      throw std::runtime_error("the device failed");
    });
  });
  started.get_future().wait();
  auto waiting = std::async(std::launch::async, [&] { return cache.get(owl, [] { return embedding(3.0f); }); });
  release.set_value();
  EXPECT_THROW(failing.get(), std::runtime_error);
  const auto got = waiting.get();
  EXPECT_FALSE(got.cache_hit) << "it encoded the prompt itself";
  EXPECT_EQ(got.embeds.f32()[0], 3.0f);
  EXPECT_EQ(counters.encoder_runs.load(), 2u);
  // And kept it: on disk too, for the next daemon.
  DaemonCounters later;
  SharedEncoderCache next("encoder-a", 1 << 20, dir.path() / "cache", UINT64_MAX, later);
  EXPECT_TRUE(next.get(owl, []() -> engine::Tensor { throw std::logic_error("not encoded again"); }).cache_hit);
  EXPECT_EQ(later.cache_disk_hits.load(), 1u);
}

}  // namespace
}  // namespace rgbaq::daemon
