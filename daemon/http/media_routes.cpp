// The images of finished jobs, by job id: the PNG as written (metadata and all) and WebP thumbnails.
// Only an output the queue records for a done job is served, and only if what is at its path is still
// the image rgbaqd wrote (daemon/base/served_output.h); nothing of the request names a path.
#include "daemon/http/http_api.h"
#include "daemon/http/thumbnails.h"
#include "daemon/protocol.h"

namespace rgbaq::daemon::http {

using nlohmann::json;

std::unique_ptr<ServedOutput> served_job_output(RequestHandler& h, int64_t job) {
  const json j = h.handle("show_job", {{"job", job}});
  if (j.value("state", "") != "done") {
    throw RequestError("conflict", "job " + std::to_string(job) + " is " + j.value("state", "?") + ", not done: it has no image yet");
  }
  try {
    return std::make_unique<ServedOutput>(j.value("output", ""), j.value("width", 0), j.value("height", 0));
  } catch (const ServedOutputError& e) {
    if (e.missing()) throw RequestError(protocol::error_code::kNotFound, "job " + std::to_string(job) + "'s image " + e.what());
    throw RequestError("conflict", "job " + std::to_string(job) + "'s image " + e.what());
  }
}

void route_job_image(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  call->respond_on_lane(call->context.lanes.media, [call, job](RequestHandler& h) {
    const auto png = served_job_output(h, job);
    auto r = call->make_response(beast_http::status::ok, "image/png", png->read());
    r.set(beast_http::field::content_disposition, "inline; filename=\"" + png->path().filename().string() + "\"");
    return r;
  });
}

void route_job_thumbnail(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  const int size = static_cast<int>(call->query_int("size", kMinThumbnail, kMaxThumbnail).value_or(256));
  call->respond_on_lane(call->context.lanes.media, [call, job, size](RequestHandler& h) {
    const auto png = served_job_output(h, job);
    auto r = call->make_response(beast_http::status::ok, "image/webp", call->context.thumbnails.get(job, *png, size));
    r.set(beast_http::field::cache_control, "private, max-age=3600");
    return r;
  });
}

}  // namespace rgbaq::daemon::http
