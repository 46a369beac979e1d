#pragma once
// Events for `rgbaq watch` and the HTTP event stream: the worker and the writer publish from their
// threads; each subscriber's sink is called on the publishing thread and hands the event to its own
// connection's thread. Every event gets a sequence number, and the latest ones are kept, so a client
// that reconnects (SSE's Last-Event-ID) is given what it missed. The hub knows no io_context, so it can
// be declared before the one its subscribers live on and outlive them (a connection unsubscribes in
// its destructor, also at shutdown).
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace rgbaq::daemon {

struct Event {
  uint64_t seq = 0;   // 1, 2, ... in publishing order, since this daemon started
  int64_t run = 0;    // fields["run"], 0 when absent
  std::string name;   // "job_done", ...
  std::string line;   // the protocol's event line: JSON with "v" and "event", ending in "\n"
};

class EventHub {
 public:
  // Called with the hub's lock held: it must not block nor call back into the hub.
  using Sink = std::function<void(const std::shared_ptr<const Event>& event)>;

  struct HistoryLimits {
    size_t events = 8192;
    size_t bytes = 4u << 20;
  };
  EventHub() : EventHub(HistoryLimits{}) {}
  explicit EventHub(HistoryLimits limits);

  int subscribe(Sink sink);
  // As subscribe, after handing `sink` the kept events after `after_seq`, in order, under the same lock
  // (nothing is missed or seen twice between the two). When events after `after_seq` were already
  // dropped from the history, `on_gap` runs first (the client must read the state afresh).
  int subscribe_after(uint64_t after_seq, Sink sink, const std::function<void()>& on_gap);
  void unsubscribe(int id);
  // Whether anyone watches: work done only for watchers can be skipped otherwise.
  bool has_subscribers();
  // Any thread. The event gets "v" and "event" fields; its run is fields["run"] (0 when absent).
  void publish(const std::string& event, nlohmann::json fields);
  // A number that differs between two starts of the daemon, so that a sequence number from another
  // start is not taken for one of this start.
  uint64_t epoch() const { return epoch_; }

 private:
  HistoryLimits limits_;
  const uint64_t epoch_;
  std::mutex mutex_;
  std::map<int, Sink> sinks_;
  int next_id_ = 1;
  uint64_t next_seq_ = 1;
  std::deque<std::shared_ptr<const Event>> history_;
  size_t history_bytes_ = 0;
};

}  // namespace rgbaq::daemon
