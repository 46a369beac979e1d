// The image APIs' way through the queue (image_apis.h): submit or attach, wait, answer; and cancel what
// nobody waits for any more.
#include "daemon/http/image_apis.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include <utility>  // before Asio: Boost 1.74 uses std::exchange without including <utility>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/sha256.h"
#include "daemon/http/http_api.h"
#include "daemon/protocol.h"
#include "host/contract_limits.h"
#include "host/image_size.h"
#include "storage/png_file.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;
namespace ec = protocol::error_code;

constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr double kKeyLifetimeSeconds = 24 * 3600;  // an Idempotency-Key finds its run for a day, as OpenAI's and Stripe's do
constexpr double kRetryLifetimeSeconds = 3600;     // a keyless client retry finds the run of the same body made within an hour
constexpr size_t kMaxKeyBytes = 255;

double now_seconds() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// One request waiting on a run, as long as any of its callbacks holds it: when the last request waiting
// on the run goes and its client hung up, the run's queued jobs are canceled (on the bulk lane, where
// requests attach: one that attached meanwhile keeps them). A daemon that is stopping cancels nothing:
// its runs finish after the restart.
struct Waiter {
  std::shared_ptr<RouteCall> call;
  int64_t run;
  Waiter(std::shared_ptr<RouteCall> c, int64_t r) : call(std::move(c)), run(r) { call->context.image_api_runs->join(run); }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  ~Waiter() {
    HttpContext& c = call->context;
    if (c.image_api_runs->leave(run) > 0 || !call->exchange()->hung_up() || c.state.stopping()) return;
    boost::asio::post(c.lanes.bulk.executor, [call = call, run = run] {
      HttpContext& c = call->context;
      if (c.image_api_runs->waiting(run) > 0 || c.state.stopping()) return;
      try {
        auto& h = c.lanes.bulk.handler;
        std::vector<int64_t> canceled;
        const json queued = h.handle("ls_jobs", {{"run", run}, {"state", "queued"}});
        for (const auto& j : queued.at("jobs")) {
          // A job claimed since the listing gets a cancel request instead (it stops at its next step):
          // the one race left, as narrow as a claim.
          const int64_t id = j.at("id").get<int64_t>();
          if (h.handle("cancel", {{"job", id}}).value("state", "") == "canceled") canceled.push_back(id);
        }
        c.image_api_runs->abandoned(run, canceled);
        if (!canceled.empty()) {
          spdlog::info("run {}: its last HTTP client hung up: {} queued job(s) canceled (a request with its Idempotency-Key queues them again)",
                       run, canceled.size());
        }
      } catch (const std::exception& e) {
        spdlog::warn("run {}: its last HTTP client hung up; canceling its queued jobs failed: {}", run, e.what());
      }
    });
  }
};

struct Wait {
  Generation g;
  Finish finish;
  bool attached = false;
  std::shared_ptr<Waiter> waiter;
};

const json& member(const json& j, const char* key) {
  static const json none;
  if (!j.is_object()) return none;
  const auto it = j.find(key);
  return it == j.end() ? none : *it;
}

// The run an earlier request of this generation made (its Idempotency-Key, or for a keyless client
// retry the same body), newest first; nullopt when there is none.
std::optional<int64_t> earlier_run(RequestHandler& h, const Generation& g) {
  if (g.idempotency_key.empty() && !g.client_retry) return std::nullopt;
  const double now = now_seconds();
  const json listing = h.handle("ls_runs", json::object());
  const json& runs = member(listing, "runs");
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    const json& r = *it;
    if (!r.is_object() || r.value("name", "") != g.api || !member(r, "created_at").is_number() || !member(r, "id").is_number_integer()) continue;
    const double age = now - member(r, "created_at").get<double>();
    const int64_t id = member(r, "id").get<int64_t>();
    const json& recorded = member(member(member(r, "options"), "defaults"), "image_api");
    const std::string key = member(recorded, "idempotency_key").is_string() ? member(recorded, "idempotency_key").get<std::string>() : "";
    const std::string fingerprint = member(recorded, "fingerprint").is_string() ? member(recorded, "fingerprint").get<std::string>() : "";
    if (!g.idempotency_key.empty()) {
      if (age > kKeyLifetimeSeconds || key != g.idempotency_key) continue;
      if (fingerprint != g.fingerprint) {
        refuse_field("Idempotency-Key", "Idempotency-Key \"" + key + "\" was used by run " + std::to_string(id) +
                                            " for another request; a key names one request (send a new key for a new one)",
                     "unprocessable");
      }
      return id;
    }
    if (age <= kRetryLifetimeSeconds && key.empty() && fingerprint == g.fingerprint) return id;
  }
  return std::nullopt;
}

// The submit's refusal of the one row we sent, as a refusal of the request's field: not "openai:1:...".
[[noreturn]] void refuse_row(const RequestError& e, const std::string& api) {
  const json& first = e.details().is_array() && !e.details().empty() ? e.details()[0] : json(nullptr);
  std::string field = member(first, "field").is_string() ? member(first, "field").get<std::string>() : "";
  if (field == "lora" || field.empty()) field = "prompt";  // the row's LoRAs come from <lora:...> tags in the prompt
  if (field == "size") field = api == "openai" ? "size" : "width";
  const std::string message = member(first, "message").is_string() ? member(first, "message").get<std::string>() : e.what();
  refuse_field(field, field + ": " + message);
}

void poll(const std::shared_ptr<RouteCall>& call, const std::shared_ptr<const Wait>& w);

void answer(const std::shared_ptr<RouteCall>& call, const std::shared_ptr<const Wait>& w, json listed, bool interrupted) {
  boost::asio::post(call->context.lanes.media.executor, [call, w, listed = std::move(listed), interrupted] {
    try {
      Generated done;
      done.run = w->waiter->run;
      done.attached = w->attached;
      done.interrupted = interrupted;
      auto& h = call->context.lanes.media.handler;
      for (const auto& j : listed.at("jobs")) {
        if (j.value("state", "") != "done") continue;
        const int64_t id = j.at("id").get<int64_t>();
        done.jobs.push_back(h.handle("show_job", {{"job", id}}));
        const auto png = served_job_output(h, id);
        done.pngs.push_back(png->read());
        done.parameters.push_back(storage::read_png_bytes(done.pngs.back(), png->path(), false).texts["parameters"]);
      }
      call->respond(w->finish(done));
    } catch (const std::exception& e) {
      call->respond_exception(e);
    }
  });
}

// Asks after the run's jobs every kPollInterval on the quick lane until all have ended.
void poll(const std::shared_ptr<RouteCall>& call, const std::shared_ptr<const Wait>& w) {
  auto timer = std::make_shared<boost::asio::steady_timer>(call->context.lanes.quick.executor, kPollInterval);
  timer->async_wait([call, w, timer](const boost::system::error_code& error) {
    if (error || call->exchange()->hung_up()) return;  // nobody is left to answer: w's waiter goes
    const int64_t run = w->waiter->run;
    try {
      if (call->context.state.stopping()) {
        throw RequestError("unavailable", "rgbaqd is stopping; run " + std::to_string(run) + " stays queued and finishes after its restart");
      }
      json listed = call->context.lanes.quick.handler.handle("ls_jobs", {{"run", run}, {"limit", w->g.count}});
      bool ended = true, canceled = false;
      for (const auto& j : listed["jobs"]) {
        const std::string state = j.value("state", "");
        if (state == "failed") {
          throw RequestError(ec::kInternal, "job " + std::to_string(j.value("id", 0)) + " of run " + std::to_string(run) +
                                                " failed: " + j.value("error", ""));
        }
        canceled = canceled || state == "canceled";
        ended = ended && (state == "done" || state == "canceled");
      }
      if (canceled && !w->g.answer_when_canceled) throw RequestError("conflict", "run " + std::to_string(run) + " was canceled");
      if (!ended || static_cast<int>(listed["jobs"].size()) < w->g.count) return poll(call, w);
      answer(call, w, std::move(listed), canceled);
    } catch (const std::exception& e) {
      call->respond_exception(e);
    }
  });
}

}  // namespace

void refuse_field(const std::string& field, const std::string& message, std::string_view code) {
  throw RequestError(code, message, json::array({{{"param", field}}}));
}

std::string refused_field(const json& details) {
  if (!details.is_array() || details.empty() || !details[0].is_object()) return "";
  for (const char* key : {"param", "field"}) {
    if (details[0].contains(key) && details[0][key].is_string()) return details[0][key].get<std::string>();
  }
  return "";
}

std::optional<int64_t> integer_field(const json& body, const std::string& key, int64_t lo, int64_t hi, bool lenient) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  std::optional<int64_t> v;
  if (it->is_number_unsigned()) {
    if (it->get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) v = static_cast<int64_t>(it->get<uint64_t>());
  } else if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (lenient && it->is_number_float()) {
    const double d = it->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) v = static_cast<int64_t>(d);
  } else if (lenient && it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    size_t used = 0;
    try {
      const long long parsed = std::stoll(s, &used);
      if (used == s.size() && !s.empty() && s.find_first_of(" \t\n+") == std::string::npos) v = parsed;
    } catch (const std::exception&) {
    }
  }
  std::string shown = it->dump();
  if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
  if (!v) refuse_field(key, "\"" + key + "\" must be an integer, not " + shown);
  if (*v < lo || *v > hi) {
    refuse_field(key, "\"" + key + "\" is " + shown + "; it must be from " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return v;
}

std::optional<std::string> string_field(const json& body, const std::string& key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) refuse_field(key, "\"" + key + "\" must be a string");
  return it->get<std::string>();
}

void check_api_size(int width, int height, const std::string& field) {
  using host::kPatchPixels;
  const std::string asked = std::to_string(width) + "x" + std::to_string(height);
  if (width <= 0 || height <= 0) refuse_field(field, "size " + asked + ": both sides must be positive");
  if (width % kPatchPixels != 0 || height % kPatchPixels != 0) {
    const auto around = [](int v) {
      const int below = v / kPatchPixels * kPatchPixels;
      std::vector<int> out;
      if (v % kPatchPixels == 0) return std::vector<int>{v};
      if (below > 0) out.push_back(below);
      out.push_back(below + kPatchPixels);
      return out;
    };
    std::vector<std::string> sizes;
    for (const int w : around(width)) {
      for (const int h : around(height)) {
        try {
          host::check_image_size({w, h});
          sizes.push_back(std::to_string(w) + "x" + std::to_string(h));
        } catch (const std::invalid_argument&) {
        }
      }
    }
    std::string nearest;
    for (size_t i = 0; i < sizes.size(); ++i) nearest += (i == 0 ? "" : i + 1 == sizes.size() ? " or " : ", ") + sizes[i];
    refuse_field(field, "size " + asked + ": this model renders sizes whose sides are multiples of 16" +
                            (nearest.empty() ? std::string() : "; the nearest are " + nearest));
  }
  const host::ImageSize size{width, height};
  if (size.tokens() >= host::kMinImageTokens && size.tokens() <= host::kMaxImageTokens) return;
  // The same shape at the largest (or smallest) area the model takes, sides rounded to 16 inward.
  const bool big = size.tokens() > host::kMaxImageTokens;
  const double scale = std::sqrt(static_cast<double>(big ? host::kMaxImageTokens : host::kMinImageTokens) / size.tokens());
  const auto side = [&](int v) {
    const double tiles = v * scale / kPatchPixels;
    return std::max(1, static_cast<int>(big ? std::floor(tiles) : std::ceil(tiles))) * kPatchPixels;
  };
  refuse_field(field, "size " + asked + " is " + std::to_string(size.tokens()) + " image tokens (16x16 px each); this model takes " +
                          std::to_string(host::kMinImageTokens) + " to " + std::to_string(host::kMaxImageTokens) +
                          " (128x128 to 1024x1024 px in area): " + std::to_string(side(width)) + "x" + std::to_string(side(height)) +
                          " is that shape " + (big ? "at the most" : "at the least"));
}

uint64_t random_seed() {
  std::random_device device;
  return device();  // 32 bits, as A1111's seeds
}

std::string model_hash(const HttpContext& c) { return c.model_identity.substr(0, 10); }

void read_idempotency(const RouteCall& call, const json& body, Generation& g) {
  const std::string_view key = text_of(call.request()["Idempotency-Key"]);
  if (key.size() > kMaxKeyBytes) refuse_field("Idempotency-Key", "the Idempotency-Key header is longer than " + std::to_string(kMaxKeyBytes) + " bytes");
  for (const char c : key) {
    if (c < 0x21 || c > 0x7e) refuse_field("Idempotency-Key", "the Idempotency-Key header must be printable ASCII without spaces");
  }
  g.idempotency_key = std::string(key);
  const std::string text = g.api + "\n" + body.dump(-1, ' ', false, json::error_handler_t::replace);
  g.fingerprint = common::sha256_hex(text.data(), text.size());
  const std::string_view retry = text_of(call.request()["X-Stainless-Retry-Count"]);
  g.client_retry = !retry.empty() && retry.find_first_not_of("0123456789") == std::string_view::npos && retry.find_first_not_of('0') != std::string_view::npos;
}

void generate(const std::shared_ptr<RouteCall>& call, Generation g, Finish finish) {
  if (g.prompt.find_first_not_of(" \t\r\n") == std::string::npos) refuse_field("prompt", "\"prompt\" is required");
  json recorded = g.recorded;
  recorded["fingerprint"] = g.fingerprint;
  if (!g.idempotency_key.empty()) recorded["idempotency_key"] = g.idempotency_key;
  const json row = {{"prompt", g.prompt},
                    {"seed", g.count == 1 ? std::to_string(g.seed) : std::to_string(g.seed) + "-" + std::to_string(g.seed + g.count - 1)},
                    {"size", std::to_string(g.width) + "x" + std::to_string(g.height)}};
  // The submit keeps `defaults` as given in the run's options (its parser reads only the keys it knows):
  // where a retry finds the request again, with no change to the queue's schema.
  const json params = {{"file", row.dump() + "\n"},
                       {"format", "jsonl"},
                       {"file_name", g.api},
                       {"name", g.api},
                       {"out_dir", call->context.config.api_renders_dir().string()},
                       {"templates", false},  // an API's prompt is one image's text, braces and all
                       {"defaults", {{"priority", kApiPriority}, {"image_api", recorded}}}};
  auto w = std::make_shared<Wait>();
  w->g = std::move(g);
  w->finish = std::move(finish);
  boost::asio::post(call->context.lanes.bulk.executor, [call, params, w] {
    try {
      if (call->exchange()->hung_up()) return;  // gone before anything was queued
      auto& h = call->context.lanes.bulk.handler;
      int64_t run = 0;
      if (const auto earlier = earlier_run(h, w->g)) {
        run = *earlier;
        w->attached = true;
        if (const auto again = call->context.image_api_runs->take_abandoned(run); !again.empty()) {
          h.handle("retry_jobs", {{"jobs", again}});
          spdlog::info("run {}: a request with its Idempotency-Key queued its {} canceled job(s) again", run, again.size());
        }
      } else {
        json result;
        try {
          result = h.handle("submit", params);
        } catch (const RequestError& e) {
          if (e.code() == ec::kInvalidFile) refuse_row(e, w->g.api);
          throw;
        }
        if (!result["run"].is_number_integer()) throw RequestError(ec::kInternal, "the submit queued no run");
        run = result["run"].get<int64_t>();
      }
      w->waiter = std::make_shared<Waiter>(call, run);
      poll(call, w);
    } catch (const std::exception& e) {
      call->respond_exception(e);
    }
  });
}

}  // namespace rgbaq::daemon::http
