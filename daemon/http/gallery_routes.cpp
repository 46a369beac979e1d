// What the gallery (web/) needs beyond the queue routes: its own files, marks on many jobs at once,
// a retry of chosen jobs, and an image's A1111 parameters text for "copy parameters".
#include "daemon/http/http_api.h"
#include "daemon/protocol.h"
#include "storage/png_file.h"
#include "web/web_files.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

// The page may load only what this server serves: no other host, no inline script.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

Response web_response(const RouteCall& call, const web::WebFile& file) {
  auto r = call.make_response(beast_http::status::ok, std::string(file.content_type), std::string(file.bytes));
  r.set("Content-Security-Policy", kContentSecurityPolicy);
  r.set("Referrer-Policy", "no-referrer");
  r.set(beast_http::field::cache_control, "no-cache");
  return r;
}

}  // namespace

void route_gallery_page(const std::shared_ptr<RouteCall>& call) {
  call->respond(web_response(*call, *web::web_file("index.html")));
}

void route_gallery_file(const std::shared_ptr<RouteCall>& call) {
  const auto file = web::web_file(call->capture(0));
  if (!file) throw RequestError(protocol::error_code::kNotFound, "the gallery has no file " + call->capture(0));
  call->respond(web_response(*call, *file));
}

void route_mark_jobs(const std::shared_ptr<RouteCall>& call) {
  json p = call->json_body();
  p["by"] = "http " + call->exchange()->peer().substr(0, call->exchange()->peer().rfind(':'));
  call->on_lane(call->context.lanes.bulk, [p = std::move(p)](RequestHandler& h) { return h.handle("mark", p); });
}

void route_retry_jobs(const std::shared_ptr<RouteCall>& call) {
  call->on_lane(call->context.lanes.bulk, [p = call->json_body()](RequestHandler& h) { return h.handle("retry_jobs", p); });
}

void route_job_parameters(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  call->on_lane(call->context.lanes.media, [job](RequestHandler& h) {
    const json j = h.handle("show_job", {{"job", job}});
    if (j.value("state", "") != "done") throw RequestError("conflict", "job " + std::to_string(job) + " is not done");
    const auto png = storage::read_png_info(j.value("output", ""));
    const auto it = png.texts.find("parameters");
    return json({{"parameters", it == png.texts.end() ? "" : it->second}});
  });
}

}  // namespace rgbaq::daemon::http
