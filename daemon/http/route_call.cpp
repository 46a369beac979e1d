#include "daemon/http/route_call.h"

#include <spdlog/spdlog.h>

#include "daemon/protocol.h"

namespace rgbaq::daemon::http {

using nlohmann::json;
namespace ec = protocol::error_code;

// A request as the log names it: the method and path, not the query (which may carry a media key).
std::string logged_request(const Request& request) {
  const std::string_view target = text_of(request.target());
  return std::string(to_string(request.method())) + " " + std::string(target.substr(0, target.find('?')));
}

beast_http::status status_for(std::string_view code) {
  if (code == ec::kNotFound || code == ec::kUnknownMethod) return beast_http::status::not_found;
  if (code == ec::kFrameTooLarge) return beast_http::status::payload_too_large;
  if (code == ec::kTooManyConnections) return beast_http::status::service_unavailable;
  if (code == ec::kInternal) return beast_http::status::internal_server_error;
  if (code == "conflict") return beast_http::status::conflict;
  if (code == "unavailable") return beast_http::status::service_unavailable;
  if (code == "too_many_requests") return beast_http::status::too_many_requests;
  if (code == "unprocessable") return beast_http::status::unprocessable_entity;
  return beast_http::status::bad_request;  // bad_request, invalid_file, unsupported_version
}

RouteCall::RouteCall(std::shared_ptr<HttpExchange> exchange, HttpContext& c, std::vector<std::string> captures)
    : context(c), exchange_(std::move(exchange)), captures_(std::move(captures)) {}

int64_t RouteCall::id(size_t i, const char* what) const {
  const std::string& text = captures_.at(i);
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 1) {
    throw RequestError(ec::kBadRequest, std::string(what) + " \"" + text + "\" in the path is not a positive id");
  }
  return value;
}

std::optional<std::string> RouteCall::query(std::string_view key) const {
  const std::string_view target = text_of(request().target());
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  return query_value(target.substr(q + 1), key);
}

std::optional<int64_t> RouteCall::query_int(std::string_view key, int64_t lo, int64_t hi) const {
  const auto text = query(key);
  if (!text) return std::nullopt;
  size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(*text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text->size() || value < lo || value > hi) {
    throw RequestError(ec::kBadRequest, "query parameter \"" + std::string(key) + "\" (\"" + *text + "\") is not an integer from " +
                                            std::to_string(lo) + " to " + std::to_string(hi));
  }
  return value;
}

json RouteCall::json_body() const {
  const std::string& body = request().body();
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) return json::object();
  if (!protocol::nesting_within(body)) {
    throw RequestError(ec::kBadRequest, "the JSON body nests deeper than " + std::to_string(protocol::kMaxJsonDepth) + " levels");
  }
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded()) throw RequestError(ec::kBadRequest, "the body is not valid JSON");
  if (!j.is_object()) throw RequestError(ec::kBadRequest, "the body must be a JSON object");
  return j;
}

Response make_response(const HttpContext& context, const Request& request, beast_http::status status, std::string content_type,
                       std::string body) {
  Response r{status, 11};
  r.set(beast_http::field::server, "rgbaqd");
  r.set(beast_http::field::content_type, content_type);
  r.set(beast_http::field::cache_control, "no-store");
  r.set("X-Content-Type-Options", "nosniff");
  r.body() = std::move(body);
  context.guard.add_cors_headers(request, r);
  return r;
}

Response error_response(const HttpContext& context, const Request& request, beast_http::status status, std::string_view code,
                        const std::string& message, const json& details) {
  json error = {{"code", code}, {"message", message}, {"type", code}};  // "type": as OpenAI's clients read it
  if (!details.empty()) error["details"] = details;
  return make_response(context, request, status, "application/json",
                       json({{"error", error}}).dump(-1, ' ', false, json::error_handler_t::replace) + "\n");
}

Response RouteCall::make_response(beast_http::status status, std::string content_type, std::string body) const {
  return http::make_response(context, request(), status, std::move(content_type), std::move(body));
}

void RouteCall::respond(Response response) { exchange_->respond(std::move(response)); }

void RouteCall::respond_json(const json& body, beast_http::status status) {
  respond(make_response(status, "application/json", body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"));
}

void RouteCall::respond_error(beast_http::status status, std::string_view code, const std::string& message, const json& details) {
  if (error_shape_) return respond(error_shape_(*this, status, code, message, details));
  respond(error_response(context, request(), status, code, message, details));
}

void RouteCall::respond_exception(const std::exception& e) {
  if (const auto* r = dynamic_cast<const RequestError*>(&e)) return respond_error(status_for(r->code()), r->code(), r->what(), r->details());
  spdlog::error("http: {} failed: {}", logged_request(request()), e.what());
  respond_error(beast_http::status::internal_server_error, ec::kInternal, e.what());
}

void RouteCall::respond_on_lane(RequestLane& lane, std::function<Response(RequestHandler&)> work) {
  boost::asio::post(lane.executor, [self = shared_from_this(), &lane, work = std::move(work)] {
    try {
      self->respond(work(lane.handler));
    } catch (const std::exception& e) {
      self->respond_exception(e);
    }
  });
}

void RouteCall::stream_on_lane(RequestLane& lane, Response header, std::function<BodyChunk(RequestHandler&)> next) {
  boost::asio::post(lane.executor, [self = shared_from_this(), &lane, header = std::move(header), next = std::move(next)]() mutable {
    auto first = std::make_shared<std::optional<BodyChunk>>();
    try {
      *first = next(lane.handler);
    } catch (const std::exception& e) {
      return self->respond_exception(e);
    }
    const std::string what = logged_request(self->request());
    self->exchange_->respond_chunked(std::move(header), [&lane, next, first, what](std::function<void(BodyChunk)> give) {
      if (*first) {
        BodyChunk chunk = std::move(**first);
        first->reset();
        return give(std::move(chunk));
      }
      boost::asio::post(lane.executor, [&lane, next, what, give = std::move(give)] {
        try {
          give(next(lane.handler));
        } catch (const std::exception& e) {
          spdlog::error("http: {} failed after its body began: {}", what, e.what());
          give(BodyChunk{.failed = true});
        }
      });
    });
  });
}

void RouteCall::on_lane(RequestLane& lane, std::function<json(RequestHandler&)> work) {
  boost::asio::post(lane.executor, [self = shared_from_this(), &lane, work = std::move(work)] {
    try {
      self->respond_json(work(lane.handler));
    } catch (const std::exception& e) {
      self->respond_exception(e);
    }
  });
}

}  // namespace rgbaq::daemon::http
