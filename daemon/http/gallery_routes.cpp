// What the gallery (web/) needs beyond the queue routes: its own files, marks on many jobs at once,
// a retry of chosen jobs, and an image's A1111 parameters text for "copy parameters".
#include "daemon/base/private_files.h"
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

// Copies the chosen jobs' PNGs into `folder` (made if need be), which must lie under one of the
// configured roots once every link in it is resolved; a file already there is left as it is.
void route_copy_jobs(const std::shared_ptr<RouteCall>& call) {
  const json body = call->json_body();
  if (!body.contains("folder") || !body["folder"].is_string() || body["folder"].get<std::string>().empty()) {
    throw RequestError(protocol::error_code::kBadRequest, "\"folder\" is required (an absolute path)");
  }
  const std::filesystem::path folder = body["folder"].get<std::string>();
  if (!folder.is_absolute()) throw RequestError(protocol::error_code::kBadRequest, "\"folder\" must be an absolute path");
  if (!body.contains("jobs") || !body["jobs"].is_array()) throw RequestError(protocol::error_code::kBadRequest, "\"jobs\" must be a list of job ids");
  const auto& roots = call->context.config.copy_roots;
  call->on_lane(call->context.lanes.media, [body, folder, roots](RequestHandler& h) {
    std::error_code ec;
    const auto resolved = std::filesystem::weakly_canonical(folder, ec);
    const auto under = [&](const std::filesystem::path& p) {
      for (const auto& root : roots) {
        const auto r = std::filesystem::weakly_canonical(root, ec);
        const auto rel = p.lexically_relative(r);
        if (!rel.empty() && *rel.begin() != "..") return true;
      }
      return false;
    };
    if (ec || !under(resolved)) {
      std::string allowed;
      for (const auto& r : roots) allowed += (allowed.empty() ? "" : ", ") + r.string();
      throw RequestError(protocol::error_code::kBadRequest, "folder " + folder.string() + " is not under a folder the gallery may copy into (" +
                                                                (allowed.empty() ? std::string("none") : allowed) + "; rgbaqd --copy-root DIR)");
    }
    try {
      create_output_dirs(resolved);  // the user's folders: the user's umask, not the daemon's private one
    } catch (const std::exception& e) {
      throw RequestError(protocol::error_code::kBadRequest, std::string("cannot make the folder: ") + e.what());
    }
    // Made now: resolve again, so a link planted meanwhile cannot point the copies elsewhere.
    if (!under(std::filesystem::canonical(resolved, ec)) || ec) throw RequestError(protocol::error_code::kBadRequest, "folder " + folder.string() + " moved");
    int64_t copied = 0, already = 0;
    json skipped = json::array();
    for (const auto& id : body["jobs"]) {
      if (!id.is_number_integer()) throw RequestError(protocol::error_code::kBadRequest, "\"jobs\" must be a list of job ids");
      const json job = h.handle("show_job", {{"job", id}});
      if (job.value("state", "") != "done") {
        skipped.push_back({{"job", id}, {"reason", "not done"}});
        continue;
      }
      const std::filesystem::path source = job.value("output", "");
      const auto target = resolved / source.filename();
      if (std::filesystem::exists(target, ec)) {
        ++already;
        continue;
      }
      if (!std::filesystem::copy_file(source, target, std::filesystem::copy_options::skip_existing, ec) || ec) {
        skipped.push_back({{"job", id}, {"reason", ec ? ec.message() : "not copied"}});
        continue;
      }
      std::filesystem::permissions(target, static_cast<std::filesystem::perms>(output_file_mode()), ec);
      ++copied;
    }
    return json({{"copied", copied}, {"already_there", already}, {"skipped", skipped}, {"folder", resolved.string()}});
  });
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
