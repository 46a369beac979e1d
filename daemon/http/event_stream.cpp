// GET /api/v1/events[?run=N]: the socket's watch events as Server-Sent Events. Each event's id is
// "EPOCH-SEQ"; a client that reconnects with Last-Event-ID is first given the kept events it missed
// (EventHub's history) when they fit in half the watcher bound (--client-queue-kb), or else (more
// than that, no longer kept, or the daemon restarted) a `resync` event: it must read the state afresh
// (GET /api/v1/runs/N). A replay is never what drops a reader: a client that stops reading is dropped
// at the watcher bound, as on the socket.
#include <limits>
#include <mutex>
#include <vector>
#include <string>

#include "daemon/http/http_api.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

std::string sse_text(uint64_t epoch, const Event& e) {
  std::string data = e.line;
  if (!data.empty() && data.back() == '\n') data.pop_back();
  return "id: " + std::to_string(epoch) + "-" + std::to_string(e.seq) + "\nevent: " + e.name + "\ndata: " + data + "\n\n";
}

// "EPOCH-SEQ" -> SEQ when EPOCH is this daemon's; nullopt otherwise.
std::optional<uint64_t> resume_point(const std::string& id, uint64_t epoch) {
  const auto dash = id.find('-');
  if (dash == std::string::npos) return std::nullopt;
  try {
    size_t used = 0;
    if (std::stoull(id.substr(0, dash), &used) != epoch || used != dash) return std::nullopt;
    const std::string seq = id.substr(dash + 1);
    const uint64_t n = std::stoull(seq, &used);
    if (used != seq.size()) return std::nullopt;
    return n;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

void route_events(const std::shared_ptr<RouteCall>& call) {
  const int64_t run = call->query_int("run", 1, std::numeric_limits<int64_t>::max()).value_or(0);
  EventHub& events = call->context.events;
  std::string last_id(call->request()["Last-Event-ID"]);
  if (last_id.empty()) last_id = call->query("last_event_id").value_or("");
  auto header = call->make_response(beast_http::status::ok, "text/event-stream", "");
  header.set(beast_http::field::cache_control, "no-cache");
  header.set("X-Accel-Buffering", "no");  // a proxy in front must not hold events back
  header.body().clear();
  auto subscription = std::make_shared<std::atomic<int>>(0);
  const auto exchange = call->exchange();
  exchange->open_stream(std::move(header), [&events, subscription] {
    if (const int id = subscription->exchange(-1); id > 0) events.unsubscribe(id);
  });
  const uint64_t epoch = events.epoch();
  // Until the missed events are weighed, they (and any that come meanwhile) are held here, in order.
  struct Replay {
    std::mutex mutex;
    bool holding = true;
    std::vector<std::shared_ptr<const Event>> held;
  };
  auto replay = std::make_shared<Replay>();
  const auto sink = [exchange, run, epoch, replay](const std::shared_ptr<const Event>& e) {
    if (run != 0 && e->run != run) return;
    std::lock_guard lock(replay->mutex);
    if (replay->holding) return replay->held.push_back(e);
    exchange->write_event(sse_text(epoch, *e));
  };
  // Tells the client how long to wait before it reconnects, and where it stands.
  exchange->write_event("retry: 2000\n\n");
  const auto resync = [&](const std::string& reason) {
    exchange->write_event("event: resync\ndata: " + json({{"reason", reason}}).dump() + "\n\n");
  };
  int id = 0;
  if (!last_id.empty()) {
    const auto after = resume_point(last_id, epoch);
    if (after) {
      id = events.subscribe_after(*after, sink, [&] { resync("events after " + last_id + " are no longer kept"); });
    } else {
      resync("the daemon restarted since event " + last_id);
      id = events.subscribe(sink);
    }
  } else {
    id = events.subscribe(sink);
  }
  {
    std::lock_guard lock(replay->mutex);
    size_t bytes = 0;
    std::vector<std::string> texts;
    for (const auto& e : replay->held) bytes += texts.emplace_back(sse_text(epoch, *e)).size();
    if (bytes <= call->context.config.client_queue_kb * 1024 / 2) {
      for (auto& text : texts) exchange->write_event(std::move(text));
    } else {
      resync(std::to_string(texts.size()) + " events since " + last_id + " are more than the stream holds at once");
    }
    replay->holding = false;
    replay->held.clear();
  }
  // The stream may already have ended (the client left at once): then drop the subscription here.
  int expected = 0;
  if (!subscription->compare_exchange_strong(expected, id)) events.unsubscribe(id);
}

}  // namespace rgbaq::daemon::http
