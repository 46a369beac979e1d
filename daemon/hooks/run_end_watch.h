#pragma once
// A thread that acts on run ends (the hook runner's, the webhook sender's): it calls its work at once
// (ends owed from before a restart), after each "run_done" event this daemon publishes, and every poll
// interval (ends that a cancel, a recovery or another host on a shared queue recorded, and deliveries
// that came due). The work returns when nothing more is owed, checking stopping() as it goes.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "daemon/base/event_hub.h"

namespace rgbaq::daemon::hooks {

class RunEndWatch {
 public:
  // `name`: the thread's name (at most 15 characters).
  RunEndWatch(std::string name, EventHub& events, std::chrono::milliseconds poll, std::function<void()> work);
  ~RunEndWatch();  // stops and joins the thread
  // Starts the thread: once the owner is whole, since `work` uses it (and this watch, through it).
  void start();
  RunEndWatch(const RunEndWatch&) = delete;
  RunEndWatch& operator=(const RunEndWatch&) = delete;

  bool stopping() const { return stopping_.load(); }
  // Sleeps up to `d`; returns false when it was cut short by the stop.
  bool pause(std::chrono::milliseconds d);

 private:
  void loop();

  EventHub& events_;
  const std::string name_;
  const std::chrono::milliseconds poll_;
  const std::function<void()> work_;
  int subscription_ = 0;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool woken_ = false;
  std::thread thread_;
};

}  // namespace rgbaq::daemon::hooks
