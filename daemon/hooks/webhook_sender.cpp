#include "daemon/hooks/webhook_sender.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/sha256.h"
#include "daemon/base/private_files.h"
#include "daemon/hooks/webhook_post.h"
#include "storage/open_queue_store.h"

namespace rgbaq::daemon::hooks {
namespace {

using nlohmann::json;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::chrono::milliseconds millis(double seconds) { return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)); }

}  // namespace

std::string webhook_body(const storage::RunEnd& end, const std::optional<storage::Run>& run) {
  const json body = {{"event", "run_end"},
                     {"end", end.id},
                     {"run", end.run_id},
                     {"name", run ? json(run->name) : json(nullptr)},
                     {"out_dir", run ? json(run->out_dir) : json(nullptr)},
                     {"created_at", run ? json(run->created_at) : json(nullptr)},
                     {"ended_at", end.ended_at},
                     {"done", end.done},
                     {"failed", end.failed},
                     {"canceled", end.canceled}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<double> webhook_retry_at(double ended_at, int attempt, double now, double first_s) {
  const double wait = std::min(kWebhookLongestWaitSeconds, first_s * std::ldexp(1.0, std::clamp(attempt, 1, 40) - 1));
  const double at = now + wait;
  if (at > ended_at + kWebhookGiveUpSeconds) return std::nullopt;
  return at;
}

WebhookSender::WebhookSender(const DaemonConfig& config, EventHub& events, std::function<int64_t()> worker_id)
    : config_(config),
      worker_id_(std::move(worker_id)),
      store_(storage::open_queue_store(config.queue_url(), config.store_options())) {
  curl_global_init(CURL_GLOBAL_DEFAULT);  // before the thread: not thread-safe in every libcurl
  // Due deliveries are looked for at least as often as the first backoff, so a retry is not late by more.
  const double poll_s = std::clamp(config.webhook_backoff_s, 0.1, 5.0);
  watch_ = std::make_unique<RunEndWatch>("rgbaqd-webhook", events, millis(poll_s), [this] { send_due_webhooks(); });
  watch_->start();
}

WebhookSender::~WebhookSender() {
  watch_.reset();
  curl_global_cleanup();
}

void WebhookSender::send_due_webhooks() {
  while (!watch_->stopping()) {
    const int64_t worker = worker_id_();
    if (worker == 0) return;
    std::optional<storage::RunEnd> end;
    try {
      end = store_->claim_webhook(worker, now_seconds());
    } catch (const std::exception& e) {
      spdlog::warn("webhooks: claiming the next due delivery failed (tried again soon): {}", e.what());
      return;
    }
    if (!end) return;
    attempt(*end);
  }
}

void WebhookSender::attempt(const storage::RunEnd& end) {
  const int number = end.webhook_attempts + 1;
  const std::string who = "webhook of run " + std::to_string(end.run_id) + " (delivery " + std::to_string(end.id) + ", attempt " +
                          std::to_string(number) + ")";
  std::string outcome;
  bool delivered = false;
  try {
    const std::string body = webhook_body(end, store_->run(end.run_id));
    // Read at each attempt: a secret the owner replaced is used from the next delivery on.
    const std::string secret = load_or_create_secret(config_.webhook_secret_file(), "the webhooks' signing secret");
    const std::vector<std::string> headers = {"Content-Type: application/json", "X-Rgbaq-Event: run_end",
                                              "X-Rgbaq-Delivery: " + std::to_string(end.id),
                                              "X-Rgbaq-Attempt: " + std::to_string(number),
                                              "X-Rgbaq-Signature-256: sha256=" + common::hmac_sha256_hex(secret, body)};
    // The attempt must end well within the delivery's lease in the queue, or another daemon could take it.
    const auto timeout = millis(std::min(30.0, config_.lease_s / 2));
    const PostAnswer answer =
        post(config_.webhook, body, headers, std::min(timeout, std::chrono::milliseconds(10000)), timeout, [this] { return watch_->stopping(); });
    delivered = answer.delivered();
    outcome = answer.words();
  } catch (const std::exception& e) {
    outcome = std::string("not sent: ") + e.what();
  }
  const double now = now_seconds();
  // One cut short by a stop is due again at once, for the next start (or another daemon) to send.
  const std::optional<double> retry_at = delivered ? std::nullopt
                                         : watch_->stopping() ? std::optional<double>(now)
                                                              : webhook_retry_at(end.ended_at, number, now, config_.webhook_backoff_s);
  if (delivered) {
    spdlog::info("{}: delivered ({})", who, outcome);
  } else if (retry_at) {
    spdlog::warn("{}: {}; tried again in {:.0f} s", who, outcome, *retry_at - now);
  } else {
    spdlog::error("{}: {}; given up, an hour after the run ended", who, outcome);
  }
  try {
    if (!store_->record_webhook_attempt(end, outcome, delivered, retry_at)) {
      spdlog::warn("{}: not recorded: the delivery's lease in the queue ran out during the attempt", who);
    }
  } catch (const std::exception& e) {
    // Its lease runs out and the delivery is owed again: sent again, as a delivery id receivers can
    // recognise.
    spdlog::warn("{}: recording it failed: {}", who, e.what());
  }
}

}  // namespace rgbaq::daemon::hooks
