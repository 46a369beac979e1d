#include "daemon/http/http_api.h"

#include <chrono>
#include <limits>
#include <sstream>

#include <spdlog/spdlog.h>

#include "daemon/export_csv.h"
#include "daemon/protocol.h"

namespace rgbaq::embedded {
std::string_view openapi_json();  // daemon/http/openapi.json, compiled in (cmake/embed_file.cmake)
}

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;
using beast_http::verb;
namespace ec = protocol::error_code;

// Splits "/a/b/c" into its segments; a route segment in braces takes any segment.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    const auto end = path.find('/');
    out.push_back(path.substr(0, end));
    if (end == std::string_view::npos) break;
    path.remove_prefix(end);
  }
  return out;
}

bool matches(std::string_view pattern, const std::vector<std::string_view>& got, std::vector<std::string>& captures) {
  const auto want = segments(pattern);
  if (want.size() != got.size()) return false;
  captures.clear();
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].size() > 2 && want[i].front() == '{') {
      captures.emplace_back(got[i]);
    } else if (want[i] != got[i]) {
      return false;
    }
  }
  return true;
}

// Query parameters that a queue list takes, as the core's params (which checks them as on the socket).
json list_params(const RouteCall& call) {
  json p = json::object();
  for (const char* key : {"state", "marked", "qa"}) {
    if (const auto v = call.query(key)) p[key] = *v;
  }
  for (const char* key : {"limit", "offset"}) {
    if (const auto v = call.query_int(key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) p[key] = *v;
  }
  return p;
}


// A method of the core with the body's JSON (or {}) as its params, plus `extra`.
void core_call(const std::shared_ptr<RouteCall>& call, RequestLane& lane, std::string method, json params) {
  call->on_lane(lane, [method = std::move(method), params = std::move(params)](RequestHandler& h) { return h.handle(method, params); });
}

}  // namespace

void route_status(const std::shared_ptr<RouteCall>& call) { core_call(call, call->context.lanes.quick, "status", json::object()); }
void route_list_runs(const std::shared_ptr<RouteCall>& call) { core_call(call, call->context.lanes.quick, "ls_runs", json::object()); }

void route_show_run(const std::shared_ptr<RouteCall>& call) {
  core_call(call, call->context.lanes.quick, "show_run", {{"run", call->id(0, "run")}});
}

void route_run_jobs(const std::shared_ptr<RouteCall>& call) {
  json p = list_params(*call);
  p["run"] = call->id(0, "run");
  core_call(call, call->context.lanes.quick, "ls_jobs", std::move(p));
}

void route_list_jobs(const std::shared_ptr<RouteCall>& call) { core_call(call, call->context.lanes.quick, "ls_jobs", list_params(*call)); }

void route_show_job(const std::shared_ptr<RouteCall>& call) {
  core_call(call, call->context.lanes.quick, "show_job", {{"job", call->id(0, "job")}});
}

// JSON as the socket's submit takes it ({"file": TEXT, "format", "out_dir", "defaults", ...}, or "rows":
// [{...}, ...] for the file's rows), or a CSV or JSONL body with the options in the query.
void route_submit(const std::shared_ptr<RouteCall>& call) {
  const std::string type(call->request()[beast_http::field::content_type]);
  const auto is = [&](std::string_view t) { return type.compare(0, t.size(), t) == 0; };
  json params;
  if (is("text/csv") || is("application/x-ndjson") || is("application/jsonl") || is("application/x-jsonlines")) {
    params = {{"file", call->request().body()}, {"format", is("text/csv") ? "csv" : "jsonl"}};
    json defaults = json::object();
    for (const char* key : {"out_dir", "name", "file_name"}) {
      if (const auto v = call->query(key)) params[key] = *v;
    }
    for (const char* key : {"seeds", "size", "lora", "reseed_on"}) {
      if (const auto v = call->query(key)) defaults[key] = *v;
    }
    for (const char* key : {"count", "priority", "reseed_max"}) {
      if (const auto v = call->query_int(key, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) defaults[key] = *v;
    }
    for (const char* key : {"skip_duplicates", "dry_run"}) {
      if (const auto v = call->query(key)) params[key] = *v == "1" || *v == "true";
    }
    params["defaults"] = defaults;
  } else if (type.empty() || is("application/json")) {
    params = call->json_body();
    if (const auto rows = params.find("rows"); rows != params.end()) {
      if (!rows->is_array()) throw RequestError(ec::kBadRequest, "\"rows\" must be a list of row objects");
      if (params.contains("file")) throw RequestError(ec::kBadRequest, "give \"rows\" or \"file\", not both");
      std::string file;
      for (const auto& row : *rows) file += row.dump() + "\n";
      params["file"] = file;
      params["format"] = "jsonl";
      params.erase("rows");
    }
  } else {
    throw RequestError(ec::kBadRequest, "a submit's Content-Type must be application/json, text/csv or application/x-ndjson, not \"" + type + "\"");
  }
  if (!params.contains("file_name")) params["file_name"] = "http";
  call->on_lane(call->context.lanes.bulk, [params = std::move(params)](RequestHandler& h) { return h.handle("submit", params); });
}

void route_export_run(const std::shared_ptr<RouteCall>& call) {
  const auto run = call->id(0, "run");
  const auto format = call->query("format").value_or("json");
  if (format != "json" && format != "jsonl" && format != "csv") {
    throw RequestError(ec::kBadRequest, "format \"" + format + "\" is not json, jsonl or csv");
  }
  json params = {{"run", run}, {"limit", protocol::kExportPageJobs}};
  if (const auto marked = call->query("marked")) params["marked"] = *marked;
  if (const auto qa = call->query("qa")) params["qa"] = *qa;
  const char* type = format == "json" ? "application/json" : format == "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson";
  auto header = call->make_response(beast_http::status::ok, type, "");
  if (format != "json") {
    header.set(beast_http::field::content_disposition, "attachment; filename=\"run-" + std::to_string(run) + "." + format + "\"");
  }
  // The body goes out a page of jobs at a time, each page asked of the core once the one before is
  // written: memory holds one page whatever the run's size. As json, it is what
  // {"jobs": [...], "run": {...}}.dump() gives.
  struct Cursor {
    int64_t after = 0;
    bool any_job = false;
    std::string run_text;
  };
  auto cursor = std::make_shared<Cursor>();
  call->stream_on_lane(call->context.lanes.bulk, std::move(header), [params, format, cursor](RequestHandler& h) mutable {
    params["after"] = cursor->after;
    const json page = h.handle("export", params);
    BodyChunk chunk;
    if (cursor->after == 0) {
      cursor->run_text = page["run"].dump();
      if (format == "json") chunk.text = "{\"jobs\":[";
      if (format == "csv") chunk.text = kExportCsvHeader;
    }
    for (const auto& job : page["jobs"]) {
      if (format == "json") {
        if (cursor->any_job) chunk.text += ',';
        chunk.text += job.dump();
      } else if (format == "csv") {
        chunk.text += export_csv_row(job);
      } else {
        chunk.text += job.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
      }
      cursor->any_job = true;
    }
    if (page["next_after"].is_number_integer()) {
      cursor->after = page["next_after"].get<int64_t>();
    } else {
      chunk.last = true;
      if (format == "json") chunk.text += "],\"run\":" + cursor->run_text + "}\n";
    }
    return chunk;
  });
}

void route_cancel_run(const std::shared_ptr<RouteCall>& call) {
  core_call(call, call->context.lanes.bulk, "cancel", {{"run", call->id(0, "run")}});
}

void route_retry_run(const std::shared_ptr<RouteCall>& call) {
  json p = call->json_body();
  p["run"] = call->id(0, "run");
  core_call(call, call->context.lanes.bulk, "retry", std::move(p));
}

void route_prioritize_run(const std::shared_ptr<RouteCall>& call) {
  json p = call->json_body();
  p["run"] = call->id(0, "run");
  core_call(call, call->context.lanes.bulk, "prioritize", std::move(p));
}

void route_cancel_job(const std::shared_ptr<RouteCall>& call) {
  core_call(call, call->context.lanes.bulk, "cancel", {{"job", call->id(0, "job")}});
}

void route_pause(const std::shared_ptr<RouteCall>& call) { core_call(call, call->context.lanes.bulk, "pause", json::object()); }
void route_resume(const std::shared_ptr<RouteCall>& call) { core_call(call, call->context.lanes.bulk, "resume", json::object()); }

void route_openapi(const std::shared_ptr<RouteCall>& call) {
  call->respond(call->make_response(beast_http::status::ok, "application/json", std::string(openapi_document())));
}

std::string_view openapi_document() { return embedded::openapi_json(); }

const std::vector<Route>& http_routes() {
  static const std::vector<Route> routes = {
      {verb::get, "/", route_gallery_page},
      {verb::get, "/web/{file}", route_gallery_file},
      {verb::get, "/openapi.json", route_openapi},
      {verb::get, "/api/v1/status", route_status},
      {verb::get, "/api/v1/runs", route_list_runs},
      {verb::post, "/api/v1/runs", route_submit},
      {verb::get, "/api/v1/runs/{run}", route_show_run},
      {verb::get, "/api/v1/runs/{run}/jobs", route_run_jobs},
      {verb::get, "/api/v1/runs/{run}/export", route_export_run},
      {verb::post, "/api/v1/runs/{run}/cancel", route_cancel_run},
      {verb::post, "/api/v1/runs/{run}/retry", route_retry_run},
      {verb::post, "/api/v1/runs/{run}/prioritize", route_prioritize_run},
      {verb::get, "/api/v1/jobs", route_list_jobs},
      {verb::get, "/api/v1/jobs/{job}", route_show_job},
      {verb::post, "/api/v1/jobs/{job}/cancel", route_cancel_job},
      {verb::post, "/api/v1/jobs/retry", route_retry_jobs},
      {verb::post, "/api/v1/marks", route_mark_jobs},
      {verb::post, "/api/v1/jobs/copy", route_copy_jobs},
      {verb::post, "/api/v1/jobs/export-assets", route_export_assets},
      {verb::get, "/api/v1/jobs/{job}/parameters", route_job_parameters},
      {verb::get, "/api/v1/jobs/{job}/image", route_job_image},
      {verb::get, "/api/v1/jobs/{job}/thumbnail", route_job_thumbnail},
      {verb::get, "/api/v1/media-key", route_media_key},
      {verb::post, "/api/v1/pause", route_pause},
      {verb::post, "/api/v1/resume", route_resume},
      {verb::get, "/api/v1/events", route_events},
      {verb::post, "/v1/images/generations", route_openai_generate},
      {verb::get, "/v1/models", route_openai_models},
      {verb::post, "/sdapi/v1/txt2img", route_a1111_txt2img},
      {verb::get, "/sdapi/v1/sd-models", route_a1111_models},
      {verb::get, "/sdapi/v1/options", route_a1111_options},
      {verb::get, "/sdapi/v1/progress", route_a1111_progress},
      {verb::get, "/sdapi/v1/samplers", route_a1111_samplers},
      {verb::get, "/sdapi/v1/schedulers", route_a1111_schedulers},
      {verb::get, "/sdapi/v1/loras", route_a1111_loras},
      {verb::get, "/sdapi/v1/sd-vae", route_a1111_vaes},
      {verb::get, "/sdapi/v1/upscalers", route_a1111_upscalers},
      {verb::get, "/sdapi/v1/cmd-flags", route_a1111_cmd_flags},
      {verb::post, "/sdapi/v1/interrupt", route_a1111_interrupt},
      {verb::get, "/internal/ping", route_a1111_ping},
  };
  return routes;
}

namespace {

bool is_get(verb v) { return v == verb::get || v == verb::head; }

std::string_view path_of(const Request& request) {
  const std::string_view target = text_of(request.target());
  return target.substr(0, target.find('?'));
}

}  // namespace

std::optional<Response> HttpApi::screen(const Request& request) const {
  if (context_.guard.is_cors_preflight(request)) return std::nullopt;
  if (const auto refusal = context_.guard.check_host_and_origin(request)) {
    return error_response(context_, request, refusal->status, refusal->code, refusal->message);
  }
  const auto got = segments(path_of(request));
  std::vector<std::string> captures;
  // The gallery's own files hold nothing of the queue: the page asks for the token itself.
  if (is_get(request.method()) && (got.empty() || matches("/web/{file}", got, captures))) return std::nullopt;
  if (context_.guard.authenticated(request)) return std::nullopt;
  const bool image = matches("/api/v1/jobs/{job}/image", got, captures);
  if (is_get(request.method()) && (image || matches("/api/v1/jobs/{job}/thumbnail", got, captures))) {
    const std::string_view target = text_of(request.target());
    const auto q = target.find('?');
    const std::string_view query = q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (const auto key = query_value(query, "key"); key && context_.guard.media_key_valid(*key, now)) return std::nullopt;
    // An image API's signed address opens that one job's image and nothing else.
    const auto expires = query_value(query, "expires"), signature = query_value(query, "signature");
    if (image && expires && signature && captures.size() == 1 && captures[0].size() <= 18 &&
        captures[0].find_first_not_of("0123456789") == std::string::npos && !captures[0].empty() &&
        context_.guard.job_image_signed(std::stoll(captures[0]), *expires, *signature, now)) {
      return std::nullopt;
    }
  }
  auto r = error_response(context_, request, beast_http::status::unauthorized, "unauthorized",
                          "this API needs the token in the daemon's data directory (http-token): Authorization: Bearer TOKEN");
  r.set(beast_http::field::www_authenticate, "Bearer realm=\"rgbaqd\", Basic realm=\"rgbaqd\"");
  return r;
}

void HttpApi::handle(const std::shared_ptr<HttpExchange>& exchange) {
  const Request& request = exchange->request();
  const std::string_view path = path_of(request);
  auto call = std::make_shared<RouteCall>(exchange, context_, std::vector<std::string>{});
  spdlog::debug("http: {} {} from {}", std::string(to_string(request.method())), std::string(path), exchange->peer());
  try {
    if (auto refusal = screen(request)) return call->respond(std::move(*refusal));  // the server screened it already
    if (context_.guard.is_cors_preflight(request)) {
      return call->respond(call->make_response(beast_http::status::no_content, "text/plain", ""));
    }
    // A browser's first visit: `/?token=TOKEN` (what `rgbaq gallery` opens) is checked, then moved into
    // the address's fragment, which the page keeps in its origin's storage and which no request carries.
    if (request.method() == verb::get && path == "/") {
      if (const auto token = call->query("token")) {
        if (!context_.guard.token_matches(*token)) {
          return call->respond_error(beast_http::status::unauthorized, "unauthorized", "that token is not this daemon's");
        }
        auto r = call->make_response(beast_http::status::see_other, "text/plain", "");
        r.set(beast_http::field::location, "/#token=" + *token);
        return call->respond(std::move(r));
      }
    }
    const auto got = segments(path);
    bool path_known = false;
    std::vector<std::string> captures;
    for (const auto& route : http_routes()) {
      if (!matches(route.path, got, captures)) continue;
      path_known = true;
      if (route.verb != request.method() && !(route.verb == verb::get && request.method() == verb::head)) continue;
      call = std::make_shared<RouteCall>(exchange, context_, captures);
      return route.handler(call);
    }
    if (path_known) return call->respond_error(beast_http::status::method_not_allowed, "method_not_allowed",
                                                std::string(to_string(request.method())) + " is not allowed on " + std::string(path));
    call->respond_error(beast_http::status::not_found, ec::kNotFound, "there is no route " + std::string(path) + " (see /openapi.json)");
  } catch (const std::exception& e) {
    call->respond_exception(e);
  }
}

}  // namespace rgbaq::daemon::http
