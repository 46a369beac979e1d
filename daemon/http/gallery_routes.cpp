// What the gallery (web/) needs beyond the queue routes: its own files, marks on many jobs at once,
// a retry of chosen jobs, and an image's A1111 parameters text for "copy parameters".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/trusted_folder.h"
#include "daemon/base/private_files.h"
#include "daemon/http/copy_destination.h"
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
// configured roots once every link in it is resolved. The folder is then opened from "/" one component
// at a time without following a link, each component checked as submit checks --out (none that another
// user could change), and every copy is created relative to that descriptor, never through a link: a
// folder swapped for a link after the check takes no copy. A file already there is left as it is.
void route_copy_jobs(const std::shared_ptr<RouteCall>& call) {
  const json body = call->json_body();
  if (!body.contains("jobs") || !body["jobs"].is_array()) throw RequestError(protocol::error_code::kBadRequest, "\"jobs\" must be a list of job ids");
  for (const auto& id : body["jobs"]) {
    if (!id.is_number_integer()) throw RequestError(protocol::error_code::kBadRequest, "\"jobs\" must be a list of job ids");
  }
  const auto& roots = call->context.config.copy_roots;
  call->on_lane(call->context.lanes.media, [body, roots](RequestHandler& h) {
    const std::filesystem::path resolved = copy_destination(body, roots, "copy");
    int dir = -1;
    try {
      dir = common::open_trusted_folder(resolved, output_dir_mode());  // the user's folders: the user's modes
    } catch (const common::FolderError& e) {
      throw RequestError(protocol::error_code::kBadRequest, "cannot copy into " + resolved.string() + ": " + e.what());
    }
    const struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{dir};
    int64_t copied = 0, already = 0;
    json skipped = json::array();
    for (const auto& id : body["jobs"]) {
      std::unique_ptr<ServedOutput> png;
      try {
        png = served_job_output(h, id.get<int64_t>());
      } catch (const RequestError& e) {
        skipped.push_back({{"job", id}, {"reason", e.what()}});
        continue;
      }
      const std::string name = png->path().filename().string();
      const int fd = ::openat(dir, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, output_file_mode());
      if (fd < 0) {
        if (errno == EEXIST) {
          ++already;
        } else {
          skipped.push_back({{"job", id}, {"reason", name + ": " + std::strerror(errno)}});
        }
        continue;
      }
      std::string error;
      try {
        const std::string bytes = png->read();
        for (size_t done = 0; done < bytes.size() && error.empty();) {
          const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
          if (n < 0 && errno == EINTR) continue;
          if (n <= 0) error = std::strerror(errno);
          else done += static_cast<size_t>(n);
        }
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (error.empty() && fchmod(fd, output_file_mode()) != 0) error = std::strerror(errno);  // the daemon's umask is private
      ::close(fd);
      if (!error.empty()) {
        ::unlinkat(dir, name.c_str(), 0);
        skipped.push_back({{"job", id}, {"reason", name + ": " + error}});
        continue;
      }
      ++copied;
    }
    return json({{"copied", copied}, {"already_there", already}, {"skipped", skipped}, {"folder", resolved.string()}});
  });
}

void route_job_parameters(const std::shared_ptr<RouteCall>& call) {
  const auto job = call->id(0, "job");
  call->on_lane(call->context.lanes.media, [job](RequestHandler& h) {
    const auto png = served_job_output(h, job);
    const auto info = storage::read_png_bytes(png->read(), png->path(), false);
    const auto it = info.texts.find("parameters");
    return json({{"parameters", it == info.texts.end() ? "" : it->second}});
  });
}

// A key for the page's <img> elements, which cannot send the token (http_guard.h): it opens the images
// and thumbnails, nothing else, for 12 hours.
void route_media_key(const std::shared_ptr<RouteCall>& call) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const int64_t expires_at = now + 12 * 3600;
  call->respond_json({{"key", call->context.guard.media_key(expires_at)}, {"expires_at", expires_at}});
}

}  // namespace rgbaq::daemon::http
