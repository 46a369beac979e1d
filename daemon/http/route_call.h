#pragma once
// What a route has to work with: the request (its path's ids, its query, its body as JSON), the
// daemon's lanes where the request core runs, and one way to answer. Errors the core throws
// (RequestError) become JSON errors with the HTTP status their code stands for.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/api/request_handler.h"
#include "daemon/base/daemon_config.h"
#include "daemon/base/daemon_state.h"
#include "daemon/base/event_hub.h"
#include "daemon/http/http_exchange.h"
#include "daemon/http/http_guard.h"
#include "daemon/http/image_api_runs.h"

namespace rgbaq::daemon::http {

class ThumbnailCache;

struct HttpLanes {
  RequestLane quick;  // status, lists, one job: never behind a submit
  RequestLane bulk;   // submit, export, the image APIs' submits
  RequestLane media;  // images and thumbnails (file reads, WebP encoding)
};

struct HttpContext {
  const DaemonConfig& config;
  HttpLanes lanes;
  EventHub& events;
  DaemonState& state;
  const HttpGuard& guard;
  ThumbnailCache& thumbnails;
  std::string base_url;  // "http://127.0.0.1:7878"
  std::string model_name, model_identity;
  std::shared_ptr<ImageApiRuns> image_api_runs = std::make_shared<ImageApiRuns>();  // who waits on which run
};

// "GET /api/v1/jobs/7/image": the method and path, without the query (a media key, a token).
std::string logged_request(const Request& request);

// The HTTP status for one of the protocol's error codes.
beast_http::status status_for(std::string_view code);

// A response to `request` with the headers every answer carries (no caching, no sniffing, CORS for
// the configured origin).
Response make_response(const HttpContext& context, const Request& request, beast_http::status status, std::string content_type,
                       std::string body);
// The JSON error every route answers with: {"error": {"code", "message", "type"(, "details")}}.
Response error_response(const HttpContext& context, const Request& request, beast_http::status status, std::string_view code,
                        const std::string& message, const nlohmann::json& details = nlohmann::json::array());

class RouteCall;
// An API's own error body (OpenAI's, A1111's) for what its routes refuse; `details` as RequestError has them.
using ErrorShape = Response (*)(const RouteCall& call, beast_http::status status, std::string_view code, const std::string& message,
                                const nlohmann::json& details);

class RouteCall : public std::enable_shared_from_this<RouteCall> {
 public:
  RouteCall(std::shared_ptr<HttpExchange> exchange, HttpContext& context, std::vector<std::string> captures);

  HttpContext& context;
  const Request& request() const { return exchange_->request(); }
  const std::shared_ptr<HttpExchange>& exchange() const { return exchange_; }
  // The path's {id} number i, as a positive id; throws RequestError naming it.
  int64_t id(size_t i, const char* what) const;
  const std::string& capture(size_t i) const { return captures_.at(i); }
  std::optional<std::string> query(std::string_view key) const;
  // The query's integer `key` from lo to hi, or nullopt when absent; throws RequestError naming it.
  std::optional<int64_t> query_int(std::string_view key, int64_t lo, int64_t hi) const;
  // The body as a JSON object ({} when empty); throws RequestError for another type, bad JSON or JSON
  // nested deeper than the protocol allows.
  nlohmann::json json_body() const;

  // Runs `work` on `lane`'s thread; what it returns is answered as 200 JSON, what it throws as an error.
  void on_lane(RequestLane& lane, std::function<nlohmann::json(RequestHandler&)> work);
  // As on_lane, with the answer made by `work` itself (an image, a redirect).
  void respond_on_lane(RequestLane& lane, std::function<Response(RequestHandler&)> work);

  // As respond_on_lane for a body made a piece at a time on `lane` (a big export): `next` gives each
  // piece, `last` set on the final one. The first is made before `header` is sent, so what it throws
  // (an unknown run) is an ordinary error answer; what a later one throws cuts the body. Each piece is
  // made once the one before is written, and other work on the lane runs between pieces.
  void stream_on_lane(RequestLane& lane, Response header, std::function<BodyChunk(RequestHandler&)> next);

  void respond(Response response);
  void respond_json(const nlohmann::json& body, beast_http::status status = beast_http::status::ok);
  void respond_error(beast_http::status status, std::string_view code, const std::string& message,
                     const nlohmann::json& details = nlohmann::json::array());
  // The answer for an exception out of a route or the core.
  void respond_exception(const std::exception& e);
  // Errors answered from now on take `shape` instead of {"error": {"code", "message", ...}}. Set it first
  // thing in the route, before any work goes to a lane.
  void set_error_shape(ErrorShape shape) { error_shape_ = shape; }

  Response make_response(beast_http::status status, std::string content_type, std::string body) const;

 private:
  std::shared_ptr<HttpExchange> exchange_;
  std::vector<std::string> captures_;
  ErrorShape error_shape_ = nullptr;
};

using RouteHandler = void (*)(const std::shared_ptr<RouteCall>& call);

struct Route {
  beast_http::verb verb;
  std::string_view path;  // segments in braces are ids: "/api/v1/runs/{run}/jobs"
  RouteHandler handler;
};

}  // namespace rgbaq::daemon::http
