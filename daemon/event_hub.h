#pragma once
// Events for `rgbaq watch`: the worker publishes from its thread, connections that asked to watch
// receive them on the server's thread.
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

class EventHub {
 public:
  using Sink = std::function<void(const std::string& line)>;
  // `post` runs a function on the server's thread (asio::post); sinks are called there.
  explicit EventHub(std::function<void(std::function<void()>)> post) : post_(std::move(post)) {}

  int subscribe(Sink sink);
  void unsubscribe(int id);
  // Any thread. The event gets "v" and "event" fields.
  void publish(const std::string& event, nlohmann::json fields);

 private:
  std::function<void(std::function<void()>)> post_;
  std::mutex mutex_;
  std::map<int, Sink> sinks_;
  int next_id_ = 1;
};

}  // namespace rgbaq::daemon
