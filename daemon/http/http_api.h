#pragma once
// The HTTP face of the daemon: the guard first, then one route per operation. Queue routes under
// /api/v1/ call the request core (daemon/api/) as the socket does, with the same validation, limits and
// errors; images and thumbnails by job id; an event stream (SSE); the OpenAI Images API and
// AUTOMATIC1111's txt2img, both through the durable queue; /openapi.json describes every route.
#include <memory>
#include <optional>
#include <vector>

#include "daemon/base/served_output.h"
#include "daemon/http/route_call.h"

namespace rgbaq::daemon::http {

// Every route the server answers (besides the browser's `/?token=` login and CORS preflights), in the
// order they are matched: the dispatcher and the OpenAPI test read this one table.
const std::vector<Route>& http_routes();

// The OpenAPI 3.1 document, as served at /openapi.json.
std::string_view openapi_document();

class HttpApi {
 public:
  explicit HttpApi(HttpContext& context) : context_(context) {}
  // The server's screen, from a request's header alone (its body unread): Host and Origin, then the
  // credentials where the route needs them. A response refuses the request.
  std::optional<Response> screen(const Request& header) const;
  // The server's handler: runs on the HTTP thread, hands work to the lanes.
  void handle(const std::shared_ptr<HttpExchange>& exchange);

 private:
  HttpContext& context_;
};

// The done job's image, open and checked (media_routes.cpp): RequestError 404 for no job or an image
// gone, 409 for a job not done or something other than its image at its path.
std::unique_ptr<ServedOutput> served_job_output(RequestHandler& h, int64_t job);

// The queue routes (http_api.cpp), the media routes (media_routes.cpp), the event stream
// (event_stream.cpp), the image APIs (openai_images.cpp, a1111_routes.cpp) and the gallery's
// (gallery_routes.cpp).
void route_status(const std::shared_ptr<RouteCall>& call);
void route_list_runs(const std::shared_ptr<RouteCall>& call);
void route_submit(const std::shared_ptr<RouteCall>& call);
void route_show_run(const std::shared_ptr<RouteCall>& call);
void route_run_jobs(const std::shared_ptr<RouteCall>& call);
void route_list_jobs(const std::shared_ptr<RouteCall>& call);
void route_export_run(const std::shared_ptr<RouteCall>& call);
void route_cancel_run(const std::shared_ptr<RouteCall>& call);
void route_retry_run(const std::shared_ptr<RouteCall>& call);
void route_prioritize_run(const std::shared_ptr<RouteCall>& call);
void route_show_job(const std::shared_ptr<RouteCall>& call);
void route_cancel_job(const std::shared_ptr<RouteCall>& call);
void route_pause(const std::shared_ptr<RouteCall>& call);
void route_resume(const std::shared_ptr<RouteCall>& call);
void route_openapi(const std::shared_ptr<RouteCall>& call);
void route_job_image(const std::shared_ptr<RouteCall>& call);
void route_job_thumbnail(const std::shared_ptr<RouteCall>& call);
void route_events(const std::shared_ptr<RouteCall>& call);
void route_openai_generate(const std::shared_ptr<RouteCall>& call);
void route_openai_models(const std::shared_ptr<RouteCall>& call);
void route_a1111_txt2img(const std::shared_ptr<RouteCall>& call);
void route_a1111_models(const std::shared_ptr<RouteCall>& call);
void route_a1111_options(const std::shared_ptr<RouteCall>& call);
void route_a1111_progress(const std::shared_ptr<RouteCall>& call);
void route_a1111_samplers(const std::shared_ptr<RouteCall>& call);
void route_a1111_schedulers(const std::shared_ptr<RouteCall>& call);
void route_a1111_loras(const std::shared_ptr<RouteCall>& call);
void route_a1111_vaes(const std::shared_ptr<RouteCall>& call);
void route_a1111_upscalers(const std::shared_ptr<RouteCall>& call);
void route_a1111_cmd_flags(const std::shared_ptr<RouteCall>& call);
void route_a1111_interrupt(const std::shared_ptr<RouteCall>& call);
void route_a1111_ping(const std::shared_ptr<RouteCall>& call);
void route_gallery_page(const std::shared_ptr<RouteCall>& call);
void route_gallery_file(const std::shared_ptr<RouteCall>& call);
void route_mark_jobs(const std::shared_ptr<RouteCall>& call);
void route_retry_jobs(const std::shared_ptr<RouteCall>& call);
void route_job_parameters(const std::shared_ptr<RouteCall>& call);
void route_copy_jobs(const std::shared_ptr<RouteCall>& call);
void route_export_assets(const std::shared_ptr<RouteCall>& call);  // asset_export_route.cpp
void route_media_key(const std::shared_ptr<RouteCall>& call);

}  // namespace rgbaq::daemon::http
