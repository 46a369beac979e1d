#include "daemon/base/event_hub.h"

#include <chrono>
#include <random>

#include "daemon/protocol.h"

namespace rgbaq::daemon {
namespace {

uint64_t new_epoch() {
  std::random_device device;
  const auto now = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return (now ^ (static_cast<uint64_t>(device()) << 32 | device())) & ((uint64_t{1} << 53) - 1);  // exact in JSON
}

}  // namespace

EventHub::EventHub(HistoryLimits limits) : limits_(limits), epoch_(new_epoch()) {}

int EventHub::subscribe(Sink sink) {
  std::lock_guard lock(mutex_);
  sinks_[next_id_] = std::move(sink);
  return next_id_++;
}

int EventHub::subscribe_after(uint64_t after_seq, Sink sink, const std::function<void()>& on_gap) {
  std::lock_guard lock(mutex_);
  const uint64_t oldest = history_.empty() ? next_seq_ : history_.front()->seq;
  if (after_seq + 1 < oldest) on_gap();
  for (const auto& e : history_) {
    if (e->seq > after_seq) sink(e);
  }
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
  auto e = std::make_shared<Event>();
  e->run = run_field != fields.end() && run_field->is_number_integer() ? run_field->get<int64_t>() : 0;
  e->name = event;
  e->line = fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mutex_);
  e->seq = next_seq_++;
  std::shared_ptr<const Event> kept = std::move(e);
  history_.push_back(kept);
  history_bytes_ += kept->line.size();
  while (!history_.empty() && (history_.size() > limits_.events || history_bytes_ > limits_.bytes)) {
    history_bytes_ -= history_.front()->line.size();
    history_.pop_front();
  }
  for (auto& [id, sink] : sinks_) sink(kept);
}

}  // namespace rgbaq::daemon
