#include "daemon/event_hub.h"

#include "daemon/protocol.h"

namespace rgbaq::daemon {

int EventHub::subscribe(Sink sink) {
  std::lock_guard lock(mutex_);
  sinks_[next_id_] = std::move(sink);
  return next_id_++;
}

void EventHub::unsubscribe(int id) {
  std::lock_guard lock(mutex_);
  sinks_.erase(id);
}

void EventHub::publish(const std::string& event, nlohmann::json fields) {
  fields["v"] = protocol::kVersion;
  fields["event"] = event;
  auto line = std::make_shared<std::string>(fields.dump() + "\n");
  post_([this, line] {
    std::map<int, Sink> sinks;
    {
      std::lock_guard lock(mutex_);
      sinks = sinks_;
    }
    for (auto& [id, sink] : sinks) sink(*line);
  });
}

}  // namespace rgbaq::daemon
