// The asset export over HTTP (issue 40): the gallery's "export assets to…" on a selection, or a run's
// jobs by the filters the CLI takes, written on the daemon's side into a folder under a --copy-root
// (daemon/http/copy_destination.h), as the gallery's copy is. The stage is assets/asset_export.h, as
// `rgbaq export RUN --assets DIR` runs it; the images are read as the image routes serve them
// (served_job_output: only a done job's own PNG).
#include "assets/asset_export.h"
#include "daemon/base/private_files.h"
#include "daemon/http/copy_destination.h"
#include "daemon/http/http_api.h"
#include "daemon/protocol.h"
#include "storage/png_file.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon::http {
namespace {

using nlohmann::json;

RequestError bad_request(const std::string& message) { return RequestError(protocol::error_code::kBadRequest, message); }

// The job `job` as an export source: its pixels read when the stage asks for them.
assets::AssetSource job_source(RequestHandler& h, const json& job) {
  const int64_t id = job.value("id", int64_t{0});
  return {id, job.value("prompt", ""), job.value("seed", uint64_t{0}), job.value("output", ""), [&h, id]() {
            const auto png = served_job_output(h, id);
            storage::PngImage image = storage::read_png_bytes(png->read(), png->path());
            assets::RgbaImage pixels;
            pixels.width = image.width;
            pixels.height = image.height;
            pixels.rgba = std::move(image.rgba);
            return pixels;
          }};
}

// The sources a request names: {"jobs": [id, ...]} (each as it is; one that is not done is skipped with
// the reason), or {"run", "marked", "state", "qa"} read a page at a time as `rgbaq export` reads them.
std::vector<assets::AssetSource> sources_of(RequestHandler& h, const json& body, json& about) {
  std::vector<assets::AssetSource> sources;
  if (body.contains("jobs")) {
    about = {{"jobs", body["jobs"]}};
    for (const auto& id : body["jobs"]) {
      json job;
      try {
        job = h.handle("show_job", {{"job", id}});
      } catch (const RequestError& e) {
        const std::string why = e.what();
        sources.push_back({id.get<int64_t>(), "", 0, "", [why]() -> assets::RgbaImage { throw std::runtime_error(why); }});
        continue;
      }
      sources.push_back(job_source(h, job));
    }
    return sources;
  }
  const auto text = [&](const char* key) -> std::optional<std::string> {
    if (!body.contains(key)) return std::nullopt;
    if (!body[key].is_string()) throw bad_request(std::string("\"") + key + "\" must be a string");
    return body[key].get<std::string>();
  };
  std::string state = text("state").value_or("done");  // only a done job has an image
  if (state == "cancelled") state = "canceled";
  if (!storage::parse_state(state)) throw bad_request("state \"" + state + "\" is not one of queued, running, done, failed, canceled");
  json params = {{"run", body["run"]}, {"limit", protocol::kExportPageJobs}};
  if (const auto marked = text("marked")) params["marked"] = *marked;
  if (const auto qa = text("qa")) params["qa"] = *qa;  // the core checks it, as ls_jobs does
  about = {{"run", body["run"]}, {"marked", text("marked").value_or("")}, {"state", state}, {"qa", text("qa").value_or("")}};
  for (int64_t after = 0;;) {
    params["after"] = after;
    const json page = h.handle("export", params);
    for (const auto& job : page["jobs"]) {
      if (job.value("state", "") == state) sources.push_back(job_source(h, job));
    }
    if (!page["next_after"].is_number_integer()) return sources;
    after = page["next_after"].get<int64_t>();
  }
}

}  // namespace

// POST /api/v1/jobs/export-assets {"folder", "jobs" | "run" (+ "marked", "state", "qa"), "trim", "pad",
// "premultiplied", "format", "sizes", "atlas", "atlas_max"} -> the export's summary
// (assets::asset_export_summary).
void route_export_assets(const std::shared_ptr<RouteCall>& call) {
  const json body = call->json_body();
  const bool by_jobs = body.contains("jobs"), by_run = body.contains("run");
  if (by_jobs == by_run) throw bad_request("name the images by \"jobs\" (a list of job ids) or by \"run\" (with \"marked\", \"state\", \"qa\")");
  if (by_jobs) {
    if (!body["jobs"].is_array() || body["jobs"].size() > protocol::kMaxJobIdsPerRequest) {
      throw bad_request("\"jobs\" must be a list of at most " + std::to_string(protocol::kMaxJobIdsPerRequest) + " job ids");
    }
    for (const auto& id : body["jobs"]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 1) throw bad_request("\"jobs\" must be a list of job ids");
    }
  }
  assets::AssetExportOptions options;
  try {
    options = assets::asset_export_options_from_json(body);
  } catch (const std::invalid_argument& e) {
    throw bad_request(e.what());
  }
  const auto& roots = call->context.config.copy_roots;
  call->on_lane(call->context.lanes.bulk, [body, options, roots](RequestHandler& h) {
    const std::filesystem::path resolved = copy_destination(body, roots, "export");
    json about;
    const auto sources = sources_of(h, body, about);
    try {
      assets::ExportFolder folder(resolved, output_dir_mode(), output_file_mode());
      return assets::asset_export_summary(assets::export_assets(sources, options, folder, about, assets::OptionNames::kJson), folder.path());
    } catch (const assets::ExportFolderError& e) {
      throw bad_request(e.what());
    } catch (const std::invalid_argument& e) {
      throw bad_request(e.what());
    }
  });
}

}  // namespace rgbaq::daemon::http
