#include "daemon/api/request_handler.h"

#include <unistd.h>

#include <limits>

#include "daemon/api/job_submission.h"
#include "daemon/api/replaced_outputs.h"
#include "daemon/api/request_params.h"
#include "daemon/protocol.h"
#include "jobs/job_file.h"
#include "jobs/qa_flags.h"
#include "storage/open_queue_store.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {
namespace {

using nlohmann::json;
using storage::JobState;

constexpr size_t kMaxMarkedByBytes = 256;

// Ids are positive; a row count or offset is not negative (SQLite reads LIMIT -1 as no limit).
constexpr int64_t kMaxId = std::numeric_limits<int64_t>::max();

int64_t run_param(storage::QueueStore& store, const json& params) {
  const auto id = required_int_param(params, "run", 1, kMaxId);
  if (!store.run(id)) throw RequestError(protocol::error_code::kNotFound, "there is no run " + std::to_string(id));
  return id;
}

// A list of 1..protocol::kMaxJobIdsPerRequest job ids, each a JSON integer above 0 (not 3.0, not "3").
std::vector<int64_t> job_ids_param(const json& params, const char* key) {
  const auto it = params.find(key);
  const std::string name = std::string("param \"") + key + "\"";
  if (it == params.end() || it->is_null()) throw RequestError(protocol::error_code::kBadRequest, name + " (a list of job ids) is required");
  if (!it->is_array()) throw RequestError(protocol::error_code::kBadRequest, name + " must be a list of job ids");
  if (it->empty() || it->size() > protocol::kMaxJobIdsPerRequest) {
    throw RequestError(protocol::error_code::kBadRequest, name + " has " + std::to_string(it->size()) + " ids; give 1 to " +
                                                              std::to_string(protocol::kMaxJobIdsPerRequest));
  }
  std::vector<int64_t> ids;
  ids.reserve(it->size());
  for (const json& v : *it) {
    const bool ok = v.is_number_unsigned() ? v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= uint64_t{INT64_MAX}
                                           : v.is_number_integer() && v.get<int64_t>() > 0;
    if (!ok) {
      std::string shown = v.dump();
      if (shown.size() > 40) shown = shown.substr(0, 40) + "...";
      throw RequestError(protocol::error_code::kBadRequest, name + "[" + std::to_string(ids.size()) + "] (" + shown +
                                                                ") is not a job id (a positive integer)");
    }
    ids.push_back(v.get<int64_t>());
  }
  return ids;
}

// The "mark" a request sets: "star", "reject", or null to clear; the key must be there.
storage::Mark mark_param(const json& params) {
  const auto it = params.find("mark");
  if (it == params.end()) throw RequestError(protocol::error_code::kBadRequest, "param \"mark\" is required: \"star\", \"reject\", or null to clear");
  if (it->is_null()) return storage::Mark::kNone;
  const auto mark = it->is_string() ? storage::parse_mark(it->get<std::string>()) : std::nullopt;
  if (!mark) throw RequestError(protocol::error_code::kBadRequest, "mark " + it->dump() + " is not \"star\", \"reject\" or null");
  return *mark;
}

// The "marked" filter of a listing: star, reject, none (unmarked) or any (starred or rejected).
std::optional<storage::MarkFilter> marked_param(const json& params) {
  if (!params.contains("marked") || params["marked"].is_null()) return std::nullopt;
  const auto s = text_param(params, "marked", "");
  const auto filter = storage::parse_mark_filter(s);
  if (!filter) throw RequestError(protocol::error_code::kBadRequest, "marked \"" + s + "\" is not one of star, reject, none, any");
  return filter;
}

// The "qa" filter of a listing: a flag of the alpha check (jobs whose check has it) or "ok" (jobs whose
// check found nothing).
std::optional<std::string> qa_param(const json& params) {
  if (!params.contains("qa") || params["qa"].is_null()) return std::nullopt;
  const auto s = text_param(params, "qa", "");
  const auto filter = jobs::parse_qa_filter(s);
  if (!filter) throw RequestError(protocol::error_code::kBadRequest, "qa \"" + s + "\" is not ok or one of " + jobs::qa_flag_names());
  return filter;
}

}  // namespace

json counts_json(const storage::StateCounts& c) {
  json j = json::object();
  for (int s = 0; s < storage::kJobStates; ++s) j[std::string(storage::state_name(static_cast<JobState>(s)))] = c[s];
  return j;
}

json run_end_json(const storage::RunEnd& e) {
  json hook = nullptr, webhook = nullptr;
  const auto time_or_null = [](double t) { return t > 0 ? json(t) : json(nullptr); };
  if (!e.hook_state.empty()) {
    hook = {{"state", e.hook_state},
            {"outcome", e.hook_outcome.empty() ? json(nullptr) : json(e.hook_outcome)},
            {"started_at", time_or_null(e.hook_started_at)},
            {"finished_at", time_or_null(e.hook_finished_at)}};
  }
  if (!e.webhook_state.empty()) {
    webhook = {{"state", e.webhook_state},
               {"attempts", e.webhook_attempts},
               {"next_at", e.webhook_state == "owed" ? json(e.webhook_next_at) : json(nullptr)},
               {"log", json::parse(e.webhook_log_json, nullptr, false)}};
  }
  return {{"id", e.id},         {"run", e.run_id},   {"ended_at", e.ended_at}, {"done", e.done},
          {"failed", e.failed}, {"canceled", e.canceled}, {"hook", hook},   {"webhook", webhook}};
}

json run_json(const storage::Run& r) {
  return {{"id", r.id}, {"name", r.name}, {"out_dir", r.out_dir}, {"created_at", r.created_at},
          {"total", r.total()}, {"counts", counts_json(r.counts)}, {"options", json::parse(r.options_json, nullptr, false)},
          {"end", r.last_end ? run_end_json(*r.last_end) : json(nullptr)}};
}

json job_json(const storage::Job& j, bool with_metadata) {
  json out = {{"id", j.id},         {"run", j.run_id},           {"prompt", j.prompt},   {"seed", j.seed},
              {"width", j.width},   {"height", j.height},        {"name", j.name},       {"priority", j.priority}, {"lora", j.lora},
              {"state", storage::state_name(j.state)}, {"attempts", j.attempts}, {"error", j.error},
              {"output", j.output_path}, {"created_at", j.created_at}, {"started_at", j.started_at},
              {"finished_at", j.finished_at}, {"host", j.host}};
  // A template's expansion: the prompt as written and what this job chose (null for a plain prompt).
  out["template"] = j.template_text.empty() ? json(nullptr) : json(j.template_text);
  out["choices"] = j.choices_json.empty() ? json(nullptr) : json::parse(j.choices_json, nullptr, false);
  const bool marked = j.mark != storage::Mark::kNone;
  out["mark"] = marked ? json(storage::mark_name(j.mark)) : json(nullptr);
  out["marked_at"] = marked ? json(j.marked_at) : json(nullptr);
  out["marked_by"] = marked && !j.marked_by.empty() ? json(j.marked_by) : json(nullptr);
  // The alpha check of its image (null until it is done), and re-seeding: what re-seeds it, and the job it
  // re-seeds and the job re-seeding it (null: none).
  out["qa"] = j.qa_json.empty() ? json(nullptr) : json::parse(j.qa_json, nullptr, false);
  out["reseed_on"] = j.reseed_on.empty() ? json(nullptr) : json(j.reseed_on);
  out["reseed_max"] = j.reseed_max;
  out["replaces"] = j.replaces ? json(j.replaces) : json(nullptr);
  out["replaced_by"] = j.replaced_by ? json(j.replaced_by) : json(nullptr);
  if (j.state == JobState::kRunning) {  // as its worker, on whichever host, last recorded it
    out["step"] = j.step;
    out["steps"] = j.steps;
    out["decoding"] = j.decoding;
  }
  // The worker that rendered it, as its record says: the host above, its device and the daemon's worker.
  const json metadata = j.metadata_json.empty() ? json(nullptr) : json::parse(j.metadata_json, nullptr, false);
  const bool recorded = metadata.is_object();
  out["device"] = recorded && metadata.contains("device") ? metadata["device"] : json(nullptr);
  out["worker"] = recorded && metadata.contains("worker") ? metadata["worker"] : json(nullptr);
  if (with_metadata) {
    out["metadata"] = metadata;
    out["errors"] = json::parse(j.errors_json, nullptr, false);
  }
  return out;
}

RequestHandler::RequestHandler(const DaemonConfig& config, const engine::Session& session, std::string model_identity,
                               DaemonState& state)
    : config_(config),
      session_(session),
      model_identity_(std::move(model_identity)),
      state_(state),
      store_(storage::open_queue_store(config.queue_url(), config.store_options())) {}

json RequestHandler::handle(const std::string& method, const json& params) {
  if (!params.is_object()) throw RequestError(protocol::error_code::kBadRequest, "params must be an object");
  if (method == "ping") return {{"pong", true}};
  if (method == "status") return status();
  if (method == "submit") return submit(params);
  if (method == "export") return export_run(params);
  if (method == "ls_runs") {
    json runs = json::array();
    // When each finished run ended, for `rgbaq ls runs` only (it reads every job; watch polls ls_runs).
    const auto finished = bool_param(params, "finish_times") ? store_->finish_times() : std::map<int64_t, double>{};
    for (const auto& r : store_->list_runs()) {
      runs.push_back(run_json(r));
      if (const auto it = finished.find(r.id); it != finished.end()) runs.back()["finished_at"] = it->second;
    }
    return {{"runs", runs}};
  }
  if (method == "show_run") return run_json(*store_->run(run_param(*store_, params)));
  if (method == "show_job") {
    const auto id = required_int_param(params, "job", 1, kMaxId);
    const auto job = store_->job(id);
    if (!job) throw RequestError(protocol::error_code::kNotFound, "there is no job " + std::to_string(id));
    return job_json(*job, true);
  }
  if (method == "ls_jobs") {
    std::optional<int64_t> run;
    if (params.contains("run")) run = run_param(*store_, params);
    std::optional<JobState> state;
    if (auto s = text_param(params, "state", ""); !s.empty()) {
      if (s == "cancelled") s = "canceled";  // both spellings are in use
      state = storage::parse_state(s);
      if (!state) throw RequestError(protocol::error_code::kBadRequest, "state \"" + s + "\" is not one of queued, running, done, failed, canceled (or cancelled)");
    }
    const auto marked = marked_param(params);
    json jobs = json::array();
    const int64_t limit = int_param(params, "limit", 1000, 0, kMaxId), offset = int_param(params, "offset", 0, 0, kMaxId);
    for (const auto& j : store_->list_jobs(
             {.run = run, .state = state, .marked = marked, .qa_flag = qa_param(params), .limit = limit, .offset = offset})) {
      jobs.push_back(job_json(j, false));
    }
    return {{"jobs", jobs}};
  }
  if (method == "cancel") {
    if (params.contains("job")) {
      const auto id = required_int_param(params, "job", 1, kMaxId);
      if (!store_->job(id)) throw RequestError(protocol::error_code::kNotFound, "there is no job " + std::to_string(id));
      const bool affected = store_->cancel_job(id);
      // The state after the request: a finished job says so, for the client to tell the user.
      const auto job = store_->job(id);
      return {{"affected", affected ? 1 : 0}, {"state", job ? storage::state_name(job->state) : "unknown"}};
    }
    const auto n = store_->cancel_run(run_param(*store_, params));
    return {{"affected", n.total()}, {"canceled", n.canceled}, {"stopping", n.stopping}};
  }
  if (method == "forget") {
    const int64_t run = run_param(*store_, params);
    const bool delete_images = bool_param(params, "delete_images");
    const auto f = store_->forget_run(run);
    if (!f.found) throw RequestError(protocol::error_code::kNotFound, "there is no run " + std::to_string(run));
    if (f.active > 0) {
      throw RequestError(protocol::error_code::kConflict,
                         "run " + std::to_string(run) + " still has " + std::to_string(f.active) +
                             (f.active == 1 ? " job" : " jobs") + " queued or running; cancel it first (rgbaq cancel " +
                             std::to_string(run) + "), then rgbaq rm " + std::to_string(run));
    }
    if (f.owed_hooks > 0) {
      throw RequestError(protocol::error_code::kConflict,
                         "run " + std::to_string(run) + " has ended, but its --on-run-done hook or webhook is still owed "
                         "or under way; forgetting the run now would drop them. Try rgbaq rm " + std::to_string(run) +
                             " again once they have run (an rgbaqd started with --on-run-done or --webhook runs them)");
    }
    // The queue forgot the run first: an image deleted after that cannot belong to a job the queue still has.
    int64_t deleted = 0;
    if (delete_images) {
      for (const auto& image : f.images) deleted += delete_own_image(image.path, image.job);
    }
    return {{"run", run}, {"jobs", f.jobs}, {"images", f.images.size()}, {"deleted_images", deleted}};
  }
  if (method == "retry") {
    const auto n = store_->retry(run_param(*store_, params), bool_param(params, "canceled"));
    state_.wake_worker();
    return {{"requeued", n}};
  }
  if (method == "retry_jobs") {
    const auto n = store_->retry_jobs(job_ids_param(params, "jobs"));
    state_.wake_worker();
    return {{"requeued", n}};
  }
  if (method == "mark") {
    const auto jobs = job_ids_param(params, "jobs");
    const auto mark = mark_param(params);
    // Who, as the transport names them (the socket: the peer's uid; HTTP: "http"): a label, not a login.
    const auto by = text_param(params, "by", "");
    if (by.size() > kMaxMarkedByBytes) {
      throw RequestError(protocol::error_code::kBadRequest, "param \"by\" is longer than " + std::to_string(kMaxMarkedByBytes) + " bytes");
    }
    try {
      return {{"marked", store_->set_marks(jobs, mark, by)}};
    } catch (const storage::NoSuchJobError& e) {
      throw RequestError(protocol::error_code::kNotFound, std::string(e.what()) + "; no job was marked");
    }
  }
  if (method == "pause" || method == "resume") {
    store_->set_paused(method == "pause");
    state_.wake_worker();
    return {{"paused", method == "pause"}};
  }
  if (method == "prioritize") {
    const auto run = run_param(*store_, params);
    return {{"updated", store_->prioritize_run(
        run, static_cast<int>(required_int_param(params, "priority", jobs::kMinPriority, jobs::kMaxPriority)))}};
  }
  throw RequestError(protocol::error_code::kUnknownMethod, "unknown method \"" + method + "\"");
}

json RequestHandler::submit(const json& params) {
  // A shared queue's outputs are written by whichever host renders them: the folder must already be
  // there (on a shared file system), not made by the first host to finish an image.
  if (storage::parse_queue_url(config_.queue_url()).kind == storage::QueueKind::kPostgres && params.contains("out_dir") &&
      params["out_dir"].is_string() && !std::filesystem::is_directory(params["out_dir"].get<std::string>())) {
    throw RequestError(protocol::error_code::kBadRequest,
                       "out_dir " + params["out_dir"].get<std::string>() + " does not exist on this host; with a queue shared "
                       "by many hosts the output folder must be a folder on a shared file system, the same path on every host");
  }
  json result = submit_job_file(*store_, session_, model_identity_, params,
                                {.max_jobs = config_.max_jobs_per_submit, .lora_dirs = config_.lora_dirs});
  state_.wake_worker();
  return result;
}

json RequestHandler::status() {
  const auto& c = state_.counters;
  const auto now = std::chrono::steady_clock::now();
  const double uptime = std::chrono::duration<double>(now - state_.started).count();
  // This daemon's render workers; "current" is the first one's job in hand, for clients that know one.
  json current = nullptr, render_workers = json::array();
  std::string engine_device;
  for (const auto& w : state_.workers()) {
    const int64_t id = w->job;
    const auto out_of_service = w->out_of_service();
    json entry = {{"index", w->index()},
                  {"label", w->label()},
                  {"device", w->device()},
                  {"description", w->description()},
                  {"worker_id", w->queue_id.load()},
                  {"state", out_of_service ? "out_of_service" : id >= 0 ? "rendering" : "idle"},
                  {"job", id >= 0 ? json(id) : json(nullptr)},
                  {"step", id >= 0 ? w->step.load() : 0},
                  {"steps", id >= 0 ? w->steps.load() : 0},
                  {"images_done", w->images_done.load()},
                  {"images_per_hour", w->images_per_hour()},
                  {"device_peak_bytes", w->device_peak_bytes.load()},
                  {"device_faults", w->device_faults.load()},
                  {"session_restarts", w->session_restarts.load()},
                  {"last_fault", w->last_fault()}};
    if (out_of_service) entry["problem"] = *out_of_service;
    if (id >= 0 && current.is_null()) current = {{"job", id}, {"step", entry["step"]}, {"steps", entry["steps"]}};
    if (engine_device.empty()) engine_device = entry["description"];
    render_workers.push_back(std::move(entry));
  }
  auto health = state_.health();
  // Status answers even when the store does not: that is when a person needs it most.
  json paused = nullptr, jobs = nullptr, workers = nullptr, last_end = nullptr;
  try {
    paused = store_->paused();
    jobs = counts_json(store_->counts());
    // Every daemon rendering from this queue, on any host.
    workers = json::array();
    for (const auto& w : store_->list_workers()) {
      workers.push_back({{"id", w.id}, {"host", w.info.host}, {"pid", w.info.pid}, {"engine", w.info.engine},
                         {"device", w.info.device}, {"job", w.job > 0 ? json(w.job) : json(nullptr)},
                         {"heartbeat_at", w.heartbeat_at}, {"started_at", w.started_at}, {"images_done", w.images_done}});
    }
    if (!config_.on_run_done.empty() || !config_.webhook.empty()) {
      // The newest run end's hook and webhook (`rgbaq ls runs` shows each run's last).
      std::optional<storage::RunEnd> newest;
      for (const auto& r : store_->list_runs()) {
        if (r.last_end && (!newest || r.last_end->id > newest->id)) newest = r.last_end;
      }
      if (newest) last_end = run_end_json(*newest);
    }
  } catch (const std::exception& e) {
    if (health.problem.empty()) {
      health.problem = "reading the queue database " + store_->location() + " fails: " + e.what();
      health.since = now;
    }
  }
  json health_json = {{"ok", health.problem.empty()}};
  if (!health.problem.empty()) {
    health_json["problem"] = health.problem;
    health_json["for_s"] = std::chrono::duration<double>(now - health.since).count();
  }
  return {{"version", storage::kRgbaqVersion},
          {"protocol", protocol::kVersion},
          {"pid", getpid()},
          {"uptime_s", uptime},
          {"model", config_.model_dir.string()},
          {"model_identity", model_identity_},
          {"engine", session_.backend_name()},
          {"precision", session_.precision()},
          {"engine_device", engine_device},
          {"socket", config_.socket_path.string()},
          {"http", state_.http_url.empty() ? json(nullptr) : json({{"url", state_.http_url}})},
          {"data_dir", config_.data_dir.string()},
          {"queue", store_->location()},
          {"health", health_json},
          {"paused", paused},
          {"stopping", state_.stopping()},
          // Whether run ends run a hook and send a webhook (never the command or the URL: they are the owner's).
          {"run_ends", {{"hook", !config_.on_run_done.empty()}, {"webhook", !config_.webhook.empty()}, {"last", last_end}}},
          {"counters",
           {{"images_rendered", c.images_rendered.load()},
            {"outputs_reused", c.outputs_reused.load()},
            {"encoder_runs", c.encoder_runs.load()},
            {"cache_memory_hits", c.cache_memory_hits.load()},
            {"cache_disk_hits", c.cache_disk_hits.load()},
            {"cache_corrupt", c.cache_corrupt.load()},
            {"jobs_failed", c.jobs_failed.load()},
            {"jobs_canceled", c.jobs_canceled.load()}}},
          {"encoder_cache",
           {{"disk_bytes", c.cache_disk_bytes.load()}, {"disk_budget", c.cache_disk_budget.load()}, {"disk_entries", c.cache_disk_entries.load()}}},
          {"jobs", jobs},
          {"workers", workers},
          {"render_workers", render_workers},
          {"current", current}};
}

json RequestHandler::export_run(const json& params) {
  const auto run = run_param(*store_, params);
  const auto marked = marked_param(params);
  // One page a request, never the whole run (100,000 jobs as one document took ~500 MiB): by id, not
  // offset, so a job marked or unmarked meanwhile moves no other job between pages.
  const int64_t after = int_param(params, "after", 0, 0, kMaxId);
  // A request without "limit" comes from a client that reads one answer only (an rgbaq older than this
  // daemon): it gets the run whole up to a page's bound, and past it a refusal, never a silent part.
  const bool pages = params.contains("limit");
  const int64_t limit = pages ? int_param(params, "limit", protocol::kExportPageJobs, 1, protocol::kMaxExportPageJobs)
                              : protocol::kMaxExportPageJobs + 1;
  auto page = store_->list_jobs({.run = run, .marked = marked, .qa_flag = qa_param(params), .after_id = after, .limit = limit});
  if (!pages && int64_t(page.size()) == limit) {
    throw RequestError(protocol::error_code::kBadRequest,
                       "run " + std::to_string(run) + " has more than " + std::to_string(protocol::kMaxExportPageJobs) +
                           " jobs, and this client does not read an export in pages (\"limit\"): use the rgbaq of this "
                           "rgbaqd's version");
  }
  json jobs = json::array();
  for (const auto& j : page) jobs.push_back(job_json(j, true));
  const auto r = store_->run(run);
  return {{"run", {{"id", r->id}, {"name", r->name}, {"out_dir", r->out_dir}, {"counts", counts_json(r->counts)}}},
          {"jobs", std::move(jobs)},
          {"next_after", int64_t(page.size()) == limit ? json(page.back().id) : json(nullptr)}};
}

}  // namespace rgbaq::daemon
