#include "daemon/base/event_hub.h"

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

bool EventHub::has_subscribers() {
  std::lock_guard lock(mutex_);
  return !sinks_.empty();
}

void EventHub::publish(const std::string& event, nlohmann::json fields) {
  fields["v"] = protocol::kVersion;
  fields["event"] = event;
  const auto run_field = fields.find("run");
  const int64_t run = run_field != fields.end() && run_field->is_number_integer() ? run_field->get<int64_t>() : 0;
  const auto line = std::make_shared<const std::string>(fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  std::lock_guard lock(mutex_);
  for (auto& [id, sink] : sinks_) sink(line, run);
}

}  // namespace rgbaq::daemon
