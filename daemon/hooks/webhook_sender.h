#pragma once
// The webhook (--webhook URL) of each run end the queue owes one (issue 41): the run's summary JSON
// POSTed to the owner's URL, signed as GitHub signs its webhooks (X-Rgbaq-Signature-256: sha256=<hex
// HMAC-SHA256 of the raw body>, keyed by DATA_DIR/webhook-secret), with a delivery id that is the same
// on every attempt (X-Rgbaq-Delivery: the end's id). An attempt that gets no 2xx answer is tried again
// after a backoff (the first --webhook-backoff-s, doubling, at most 10 minutes) until an hour after the
// run ended; each attempt and the outcome are recorded on the run end. The queue leases a delivery to
// one daemon at a time (claim_webhook), so one end is sent by one daemon, also on a shared queue.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "daemon/base/daemon_config.h"
#include "daemon/base/event_hub.h"
#include "daemon/hooks/run_end_watch.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon::hooks {

// The body sent for `end`: {"event": "run_end", "end", "run", "name", "out_dir", "created_at",
// "ended_at", "done", "failed", "canceled"} as compact JSON (the same bytes on every attempt); name,
// out_dir and created_at are null for a run forgotten since it ended.
std::string webhook_body(const storage::RunEnd& end, const std::optional<storage::Run>& run);

// After attempt `attempt` (1, 2, ...) failed at `now`: when to try again (`first_s` * 2^(attempt - 1)
// later, at most 10 minutes), or nullopt when that is more than an hour after the run ended (give up).
std::optional<double> webhook_retry_at(double ended_at, int attempt, double now, double first_s);

inline constexpr double kWebhookGiveUpSeconds = 3600;
inline constexpr double kWebhookLongestWaitSeconds = 600;

class WebhookSender {
 public:
  // Opens its own connection to the queue (throws what the store throws) and starts its thread
  // (daemon/hooks/run_end_watch.h). `worker_id` as RunHookRunner's.
  WebhookSender(const DaemonConfig& config, EventHub& events, std::function<int64_t()> worker_id);
  ~WebhookSender();  // stops the thread (an attempt under way ends at once, recorded as failed)
  WebhookSender(const WebhookSender&) = delete;
  WebhookSender& operator=(const WebhookSender&) = delete;

 private:
  void send_due_webhooks();
  void attempt(const storage::RunEnd& end);

  const DaemonConfig& config_;
  std::function<int64_t()> worker_id_;
  std::unique_ptr<storage::QueueStore> store_;
  std::unique_ptr<RunEndWatch> watch_;  // last: its thread uses the members above, and is joined first
};

}  // namespace rgbaq::daemon::hooks
