#include "daemon/hooks/run_end_watch.h"

#include <pthread.h>

namespace rgbaq::daemon::hooks {

RunEndWatch::RunEndWatch(std::string name, EventHub& events, std::chrono::milliseconds poll, std::function<void()> work)
    : events_(events), name_(std::move(name)), poll_(poll), work_(std::move(work)) {}

void RunEndWatch::start() {
  // The sink runs under the hub's lock on the publishing thread (a writer's): it only sets a flag.
  subscription_ = events_.subscribe([this](const std::shared_ptr<const Event>& e) {
    if (e->name != "run_done") return;
    {
      std::lock_guard lock(mutex_);
      woken_ = true;
    }
    cv_.notify_all();
  });
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), name_.c_str());
    loop();
  });
}

RunEndWatch::~RunEndWatch() {
  if (subscription_ != 0) events_.unsubscribe(subscription_);
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool RunEndWatch::pause(std::chrono::milliseconds d) {
  std::unique_lock lock(mutex_);
  return !cv_.wait_for(lock, d, [&] { return stopping_.load(); });
}

void RunEndWatch::loop() {
  while (!stopping_) {
    {
      std::lock_guard lock(mutex_);
      woken_ = false;  // an end published from here on wakes the next round
    }
    work_();
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, poll_, [&] { return stopping_.load() || woken_; });
  }
}

}  // namespace rgbaq::daemon::hooks
