// The images of finished jobs, by job id: the PNG as written (metadata and all) and WebP thumbnails.
// Only an output the queue records for a done job is served; nothing of the request names a path.
#include <fstream>
#include <sstream>

#include "daemon/http/http_api.h"
#include "daemon/http/thumbnails.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

// The done job's output path, or a RequestError (404 no job, 409 not done yet).
std::string finished_output(RequestHandler& h, int64_t job) {
  const json j = h.handle("show_job", {{"job", job}});
  if (j.value("state", "") != "done") {
    throw RequestError("conflict", "job " + std::to_string(job) + " is " + j.value("state", "?") + ", not done: it has no image yet");
  }
  return j.value("output", "");
}

}  // namespace

void route_job_image(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  call->respond_on_lane(call->context.lanes.media, [call, job](RequestHandler& h) {
    const auto path = finished_output(h, job);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw RequestError(protocol::error_code::kNotFound, "job " + std::to_string(job) + "'s image " + path + " is gone");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    auto r = call->make_response(beast_http::status::ok, "image/png", bytes.str());
    r.set(beast_http::field::content_disposition,
          "inline; filename=\"" + std::filesystem::path(path).filename().string() + "\"");
    return r;
  });
}

void route_job_thumbnail(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  const int size = static_cast<int>(call->query_int("size", kMinThumbnail, kMaxThumbnail).value_or(256));
  call->respond_on_lane(call->context.lanes.media, [call, job, size](RequestHandler& h) {
    const auto path = finished_output(h, job);
    if (!std::filesystem::exists(path)) throw RequestError(protocol::error_code::kNotFound, "job " + std::to_string(job) + "'s image " + path + " is gone");
    auto r = call->make_response(beast_http::status::ok, "image/webp", call->context.thumbnails.get(job, path, size));
    r.set(beast_http::field::cache_control, "private, max-age=3600");
    return r;
  });
}

}  // namespace rgbaq::daemon::http
