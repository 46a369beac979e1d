#pragma once
// Events for `rgbaq watch`: the worker and the writer publish from their threads; each subscriber's
// sink is called on the publishing thread and hands the line to its own connection's thread. The hub
// knows no io_context, so it can be declared before the one its subscribers live on and outlive them
// (a watch connection unsubscribes in its destructor, also at shutdown).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

class EventHub {
 public:
  // Called with the hub's lock held: it must not block nor call back into the hub.
  using Sink = std::function<void(const std::shared_ptr<const std::string>& line, int64_t run)>;

  int subscribe(Sink sink);
  void unsubscribe(int id);
  // Whether anyone watches: work done only for watchers can be skipped otherwise.
  bool has_subscribers();
  // Any thread. The event gets "v" and "event" fields; `run` is fields["run"] (0 when absent).
  void publish(const std::string& event, nlohmann::json fields);

 private:
  std::mutex mutex_;
  std::map<int, Sink> sinks_;
  int next_id_ = 1;
};

}  // namespace rgbaq::daemon
