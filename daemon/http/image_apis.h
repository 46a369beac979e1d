#pragma once
// What the two image APIs (openai_images.cpp, a1111_routes.cpp) share: a generation through the durable
// queue, the reading of their request fields, and this model's sizes.
//
// A generation becomes a run at high priority with its outputs in DATA_DIR/api-renders; the answer
// waits for its jobs, then carries the PNGs as written. A request with an Idempotency-Key (or an
// OpenAI client's retry, X-Stainless-Retry-Count above 0, of the same body) attaches to the run the
// first one made instead of queueing another, and answers from it. Requests are counted per run: when
// the last one waiting on a run hangs up, its queued jobs are canceled (a running one finishes and is
// kept), and a request that attaches later queues them again.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/http/route_call.h"

namespace rgbaq::daemon::http {

inline constexpr int kApiPriority = 1000;  // ahead of batch runs (default 0): someone waits for these
inline constexpr int kMaxImagesPerRequest = 16;

struct Generation {
  std::string api;  // "openai" | "a1111": the run's name
  std::string prompt;
  uint64_t seed = 0;
  int count = 1;
  int width = 0, height = 0;
  // Kept with the run (its options' defaults.image_api): what finds it again for a retry.
  std::string idempotency_key;  // the request's Idempotency-Key header, "" when none
  std::string fingerprint;      // SHA-256 of the API's name and the request's JSON body (keys sorted)
  bool client_retry = false;    // X-Stainless-Retry-Count above 0: the official OpenAI clients' retries
  nlohmann::json recorded = nlohmann::json::object();  // more to keep with the run (OpenAI's `user`)
  // A1111: a job canceled meanwhile (its interrupt) ends the wait with the images done, as A1111 answers
  // an interrupted batch; otherwise it is an error (409).
  bool answer_when_canceled = false;
};

// A finished generation: its jobs (with metadata) and, for each done one, its PNG's bytes and A1111
// `parameters` text, in job order.
struct Generated {
  int64_t run = 0;
  bool attached = false;     // the run an earlier request with the same key made
  bool interrupted = false;  // some job was canceled (answer_when_canceled)
  std::vector<nlohmann::json> jobs;
  std::vector<std::string> pngs;
  std::vector<std::string> parameters;
};

using Finish = std::function<Response(const Generated&)>;

// Fills g's idempotency_key, fingerprint and client_retry from the request and its parsed body.
void read_idempotency(const RouteCall& call, const nlohmann::json& body, Generation& g);

// Queues the generation (or attaches to an earlier run of it) on the bulk lane, waits for its jobs,
// reads their PNGs on the media lane and answers with `finish` (which runs there). Throws RequestError
// for a prompt that is blank; what goes wrong later is answered through the call's error shape.
void generate(const std::shared_ptr<RouteCall>& call, Generation g, Finish finish);

// A refusal of one request field: RequestError bad_request (or `code`) whose details name it
// ([{"param": field}]), which each API's error shape puts where its clients look.
[[noreturn]] void refuse_field(const std::string& field, const std::string& message, std::string_view code = "bad_request");
// The field's `param` from an error's details (refuse_field's, or the submit's first file error), or "".
std::string refused_field(const nlohmann::json& details);

// An integer field from lo to hi, nullopt when absent or null. `lenient`: also as A1111 (pydantic)
// takes one, a string of digits ("42") or an integral number (512.0). Refuses anything else, naming it.
std::optional<int64_t> integer_field(const nlohmann::json& body, const std::string& key, int64_t lo, int64_t hi, bool lenient);
// A string field, nullopt when absent or null; refuses another type, naming it.
std::optional<std::string> string_field(const nlohmann::json& body, const std::string& key);

// Refuses a size this model cannot render, naming `field` and what it can: sides that are not multiples
// of 16 with the nearest sizes that are, an area outside 64..4096 image tokens with the size of that
// shape that fits.
void check_api_size(int width, int height, const std::string& field);

uint64_t random_seed();
std::string model_hash(const HttpContext& c);  // the model identity's first 10 hex digits, as A1111's short hash

}  // namespace rgbaq::daemon::http
