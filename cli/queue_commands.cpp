#include "cli/queue_commands.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "common/arguments.h"
#include "common/printable_text.h"
#include "cli/asset_export_command.h"
#include "cli/daemon_client.h"
#include "cli/plural.h"
#include "cli/qa_command.h"
#include "cli/run_export.h"
#include "daemon/export_csv.h"
#include "daemon/protocol.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;
using common::parse_u64;
using common::printable;
namespace {

using nlohmann::json;

constexpr int64_t kDefaultJobLimit = 50;  // a screenful or two; --all for everything
constexpr int64_t kJobPage = 10000;        // --all asks in pages, as export does

int64_t positive_id(const std::string& text, const char* what) {
  const auto v = parse_u64(text);
  if (!v || *v == 0) throw UsageError(std::string(what) + " \"" + text + "\" is not a positive integer");
  return static_cast<int64_t>(*v);
}

// `rgbaq mark`'s jobs: ids and ranges (3-9), at most protocol::kMaxJobIdsPerRequest in all.
std::vector<int64_t> job_list(const std::vector<std::string>& words) {
  constexpr uint64_t kMax = protocol::kMaxJobIdsPerRequest;
  std::vector<int64_t> ids;
  const auto room_for = [&](uint64_t more) {  // checked before a range is spelled out
    if (ids.size() + more > kMax) {
      throw UsageError(std::to_string(ids.size() + more) + " jobs are more than one mark takes (" + std::to_string(kMax) +
                       "); mark them in parts");
    }
  };
  for (const std::string& w : words) {
    const auto dash = w.find('-');
    if (dash == std::string::npos || dash == 0) {
      room_for(1);
      ids.push_back(positive_id(w, "job"));
      continue;
    }
    const auto first = parse_u64(w.substr(0, dash)), last = parse_u64(w.substr(dash + 1));
    if (!first || !last || *first == 0 || *first > *last || *last > uint64_t{INT64_MAX}) {
      throw UsageError("job range \"" + w + "\" is not FIRST-LAST with 1 <= FIRST <= LAST");
    }
    if (*last - *first >= kMax) throw UsageError("job range \"" + w + "\" has more than " + std::to_string(kMax) + " jobs");
    room_for(*last - *first + 1);
    for (uint64_t id = *first; id <= *last; ++id) ids.push_back(static_cast<int64_t>(id));
  }
  return ids;
}

std::string duration(double s) {
  const int64_t t = static_cast<int64_t>(s);
  std::ostringstream o;
  if (t >= 3600) o << t / 3600 << "h ";
  if (t >= 60) o << (t / 60) % 60 << "m ";
  o << t % 60 << "s";
  return o.str();
}

std::string counts_line(const json& c) {
  std::ostringstream o;
  o << c.value("queued", 0) << " queued, " << c.value("running", 0) << " running, " << c.value("done", 0) << " done, "
    << c.value("failed", 0) << " failed, " << c.value("canceled", 0) << " canceled";
  return o.str();
}

// `s` on one line, at most `n` bytes of it, made printable (its escapes may make it longer).
std::string clip(const std::string& s, size_t n) {
  std::string one_line = s;
  for (char& c : one_line) c = (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (one_line.size() <= n) return printable(one_line);
  size_t cut = n - 1;
  while (cut > 0 && (static_cast<unsigned char>(one_line[cut]) & 0xC0) == 0x80) --cut;  // whole characters
  return printable(one_line.substr(0, cut)) + "~";
}

// A simple action: one request, an acknowledgement line (or the result as JSON).
int simple(CliContext& ctx, const Arguments& a, const std::string& method, const json& params, const std::string& said) {
  DaemonClient client(ctx.socket);
  const json r = client.call(method, params);
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
  } else {
    ctx.out << said << "\n";
  }
  return 0;
}

// A job's mark as the daemon sent it ("star", "reject"), or `none`.
std::string mark_of(const json& job, const std::string& none) {
  const auto it = job.find("mark");
  return it != job.end() && it->is_string() ? it->get<std::string>() : none;
}

// What `ls jobs` says under a job: its PNG (done), where it will write one (queued, running), its
// error (failed). A canceled job wrote nothing: the path it owned names no image of it.
std::string job_outcome(const json& j) {
  const std::string state = j.value("state", "");
  if (state == "failed") return "error: " + j.value("error", "");
  if (state == "canceled") return "canceled: no image";
  return j.value("output", "");
}

// What `ls jobs` adds after a job's outcome: its alpha check's flags, and which job it re-seeds or is
// re-seeded by ("" for a job not checked yet and in no re-seed).
std::string qa_words(const json& j) {
  std::string words;
  if (const json& qa = j.value("qa", json()); qa.is_object() && qa.contains("flags") && qa["flags"].is_array()) {
    std::string flags;
    for (const auto& f : qa["flags"]) flags += (flags.empty() ? "" : ",") + (f.is_string() ? f.get<std::string>() : f.dump());
    words += "  [" + (flags.empty() ? std::string("ok") : flags) + "]";
  }
  if (const json& r = j.value("replaces", json()); r.is_number_integer()) words += "  re-seeds job " + std::to_string(r.get<int64_t>());
  if (const json& r = j.value("replaced_by", json()); r.is_number_integer()) {
    words += "  re-seeded by job " + std::to_string(r.get<int64_t>());
  }
  return words;
}

// A time of the queue (seconds since the epoch) in local time, to the minute; "-" for none.
std::string local_minute(double seconds) {
  if (seconds <= 0) return "-";
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

// What came of a run end's hook and webhook (protocol run JSON "end"), for `ls runs`; "" when it owed
// neither.
std::string run_end_words(const json& end) {
  if (!end.is_object()) return "";
  const auto text = [](const json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  std::string words;
  if (const json& h = end.value("hook", json()); h.is_object()) {
    const std::string state = text(h, "state");
    words = "hook: " + (state == "done" ? text(h, "outcome")
                        : state == "lost" ? "lost (the daemon stopped while it ran; never run again)"
                                          : state);
  }
  if (const json& w = end.value("webhook", json()); w.is_object()) {
    const std::string state = text(w, "state");
    const int attempts = w.value("attempts", 0);
    const json& log = w.value("log", json::array());
    const std::string last = log.is_array() && !log.empty() && log.back().is_object() ? text(log.back(), "outcome") : "";
    const std::string how = state == "delivered" ? "delivered (" + count_of(attempts, "attempt") + ")"
                            : state == "gave_up" ? "gave up after " + count_of(attempts, "attempt") + " (last: " + last + ")"
                            : state == "owed" && attempts > 0 ? "owed, " + count_of(attempts, "failed attempt") + " (last: " + last +
                                                                    "), next at " + local_minute(w.value("next_at", 0.0))
                                                              : state;
    words += (words.empty() ? "" : "; ") + std::string("webhook: ") + how;
  }
  return words;
}

}  // namespace

int status_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"json"});
  DaemonClient client(ctx.socket);
  const json s = client.call("status");
  // An unhealthy daemon (its queue database failing) exits 1, so scripts and monitors notice.
  const json health = s.value("health", json::object());
  const int code = health.value("ok", true) ? 0 : 1;
  if (a.has("json")) {
    ctx.out << s.dump() << "\n";
    return code;
  }
  const json& c = s["counters"];
  // The cpu engine computes in fp32 only; a cuda daemon says which of its precisions it runs.
  const std::string engine = s.value("engine", ""), precision = s.value("precision", "");
  const std::string engine_text = engine + (engine != "cpu" && !precision.empty() ? ", " + precision : "");
  ctx.out << "rgbaqd " << s.value("version", "?") << " (pid " << s.value("pid", 0) << "), up " << duration(s.value("uptime_s", 0.0))
          << "\nmodel:  " << printable(s.value("model", "")) << " (" << printable(engine_text) << ")\nqueue:  "
          << (s["jobs"].is_object() ? counts_line(s["jobs"]) : std::string("unknown")) << (s["paused"] == true ? "  [paused]" : "")
          << "\n";
  if (s.contains("http") && s["http"].is_object()) ctx.out << "http:   " << s["http"].value("url", "") << "/ (rgbaq http-url)\n";
  if (code != 0) {
    ctx.out << "health: UNHEALTHY for " << duration(health.value("for_s", 0.0)) << ": " << printable(health.value("problem", ""))
            << "\n";
  }
  // This daemon's render workers (one per device, or --workers on the cpu): what each renders, what it
  // has done and how fast, and a device taken out of service.
  if (s.contains("render_workers") && s["render_workers"].is_array()) {
    ctx.out << "render workers:\n";
    for (const json& w : s["render_workers"]) {
      ctx.out << "  " << w.value("label", "?") << " (" << w.value("description", "") << "): ";
      const std::string state = w.value("state", "");
      if (state == "out_of_service") {
        ctx.out << "OUT OF SERVICE: " << w.value("problem", "") << "\n";
        continue;
      }
      if (w["job"].is_number()) {
        ctx.out << "job " << w["job"].get<int64_t>() << ", step " << w.value("step", 0) << "/" << w.value("steps", 0);
      } else {
        ctx.out << "idle";
      }
      char rate[32];
      std::snprintf(rate, sizeof rate, "%.0f", w.value("images_per_hour", 0.0));
      ctx.out << ", " << count_of(w.value("images_done", uint64_t{0}), "image") << " done, " << rate << " images/hour";
      if (w.value("session_restarts", 0) > 0) ctx.out << ", session reopened " << w.value("session_restarts", 0) << "x";
      if (const auto peak = w.value("device_peak_bytes", uint64_t{0}); peak > 0) {  // cuda sessions
        char gib[32];
        std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(peak) / double(uint64_t{1} << 30));
        ctx.out << ", peak device memory " << gib << " GiB";
      }
      ctx.out << "\n";
    }
  } else if (s["current"].is_object()) {  // a daemon from before render workers
    ctx.out << "now:    job " << s["current"].value("job", 0) << ", step " << s["current"].value("step", 0) << "/"
            << s["current"].value("steps", 0) << "\n";
  }
  // Every worker on the queue (this daemon's render workers, other daemons' on this host or others):
  // what each holds, when it last beat.
  if (s.contains("workers") && s["workers"].is_array() && !s["workers"].empty()) {
    ctx.out << "workers on the queue:\n";
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const json& w : s["workers"]) {
      ctx.out << "  " << printable(w.value("host", "?")) << " (pid " << w.value("pid", 0) << ", " << printable(w.value("engine", ""))
              << " on " << printable(w.value("device", "")) << "): " << (w["job"].is_number() ? "job " + std::to_string(w["job"].get<int64_t>()) : std::string("idle"))
              << ", " << count_of(w.value("images_done", uint64_t{0}), "image") << " done, last heartbeat "
              << duration(std::max(0.0, now - w.value("heartbeat_at", now))) << " ago\n";
    }
  }
  ctx.out << "since start: " << count_of(c.value("images_rendered", uint64_t{0}), "image") << " rendered, " << c.value("outputs_reused", 0)
          << " finished outputs reused, " << c.value("encoder_runs", 0) << " encoder runs, embedding cache hits "
          << c.value("cache_memory_hits", 0) << " in memory and " << c.value("cache_disk_hits", 0) << " on disk\n";
  if (const json cache = s.value("encoder_cache", json::object()); cache.contains("disk_budget")) {
    char line[128];
    std::snprintf(line, sizeof line, "embedding cache on disk: %.1f of %.1f MiB, %llu entries\n",
                  cache.value("disk_bytes", 0.0) / (1 << 20), cache.value("disk_budget", 0.0) / (1 << 20),
                  static_cast<unsigned long long>(cache.value("disk_entries", uint64_t{0})));
    ctx.out << line;
  }
  return code;
}

int ls_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {"run", "state", "marked", "qa", "limit", "offset"}, {"json", "all"});
  if (a.positionals().size() != 1 || (a.positionals()[0] != "runs" && a.positionals()[0] != "jobs")) {
    throw UsageError("say what to list: `rgbaq ls runs` or `rgbaq ls jobs [--run R] [--state S]`");
  }
  DaemonClient client(ctx.socket);
  if (a.positionals()[0] == "runs") {
    const json r = client.call("ls_runs", {{"finish_times", true}});
    if (a.has("json")) {
      ctx.out << r.dump() << "\n";
      return 0;
    }
    ctx.out << std::left << std::setw(6) << "RUN" << std::setw(24) << "NAME" << std::right << std::setw(8) << "TOTAL"
            << std::setw(8) << "DONE" << std::setw(8) << "FAILED" << std::setw(10) << "CANCELED" << std::setw(8) << "QUEUED"
            << std::setw(9) << "RUNNING" << std::left << "  " << std::setw(18) << "SUBMITTED" << std::setw(18) << "FINISHED"
            << "OUT\n";
    for (const auto& run : r["runs"]) {
      const json& c = run["counts"];
      ctx.out << std::left << std::setw(6) << run.value("id", 0) << std::setw(24) << clip(run.value("name", ""), 23) << std::right
              << std::setw(8) << run.value("total", 0) << std::setw(8) << c.value("done", 0) << std::setw(8) << c.value("failed", 0)
              << std::setw(10) << c.value("canceled", 0) << std::setw(8) << c.value("queued", 0) << std::setw(9)
              << c.value("running", 0) << std::left
              << "  " << std::setw(18) << local_minute(run.value("created_at", 0.0)) << std::setw(18)
              << local_minute(run.value("finished_at", 0.0)) << printable(run.value("out_dir", "")) << "\n";
      if (const std::string words = run_end_words(run.value("end", json())); !words.empty()) {
        ctx.out << std::string(6, ' ') << printable(words) << "\n";
      }
    }
    return 0;
  }
  json params = json::object();
  if (const auto run = a.get("run")) params["run"] = positive_id(*run, "--run");
  if (const auto state = a.get("state")) params["state"] = *state == "cancelled" ? "canceled" : *state;
  if (const auto marked = a.get("marked")) params["marked"] = *marked;
  if (const auto qa = a.get("qa")) params["qa"] = qa_filter_option(*qa);
  if (a.has("all") && a.has("limit")) throw UsageError("give --limit N or --all, not both");
  const int64_t limit = a.get_int("limit", kDefaultJobLimit);
  const int64_t offset = a.get_int("offset", 0);
  if (limit < 1) throw UsageError("--limit must be 1 or more");
  if (offset < 0) throw UsageError("--offset must be 0 or more");
  json r = {{"jobs", json::array()}};
  bool more = false;
  if (a.has("all")) {
    for (int64_t at = offset;; at += kJobPage) {
      params["limit"] = kJobPage;
      params["offset"] = at;
      const json page = client.call("ls_jobs", params);
      for (const auto& j : page["jobs"]) r["jobs"].push_back(j);
      if (static_cast<int64_t>(page["jobs"].size()) < kJobPage) break;
    }
  } else {
    params["limit"] = limit + 1;  // one more than shown: whether there are more to tell of
    params["offset"] = offset;
    r = client.call("ls_jobs", params);
    more = static_cast<int64_t>(r["jobs"].size()) > limit;
    if (more) r["jobs"].erase(r["jobs"].end() - 1);
  }
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
    return 0;
  }
  ctx.out << std::left << std::setw(8) << "JOB" << std::setw(6) << "RUN" << std::setw(10) << "STATE" << std::setw(8) << "MARK"
          << std::setw(22) << "SEED" << std::setw(11) << "SIZE" << "PROMPT / OUTPUT\n";
  for (const auto& j : r["jobs"]) {
    const std::string size = std::to_string(j.value("width", 0)) + "x" + std::to_string(j.value("height", 0));
    const std::string state = j.value("state", "");
    const std::string mark = mark_of(j, "-");
    ctx.out << std::left << std::setw(8) << j.value("id", 0) << std::setw(6) << j.value("run", 0) << std::setw(10) << state
            << std::setw(8) << mark << std::setw(22) << j.value("seed", uint64_t{0}) << std::setw(11) << size
            << clip(j.value("prompt", ""), 50) << "\n" << std::string(65, ' ') << printable(job_outcome(j)) << qa_words(j) << "\n";
  }
  if (more) {
    ctx.out << "(the first " << limit << " from " << offset << "; more with --offset " << offset + limit
            << ", or --all for every job)\n";
  }
  return 0;
}

int cancel_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {"job"}, {"json"});
  if (const auto job = a.get("job")) {
    if (!a.positionals().empty()) throw UsageError("give a run or --job, not both");
    const int64_t id = positive_id(*job, "--job");
    DaemonClient client(ctx.socket);
    const json r = client.call("cancel", {{"job", id}});
    const std::string state = r.value("state", "");
    // Nothing to cancel in a finished job: say what became of it, and exit 1 (it was not canceled).
    const int code = r.value("affected", 0) == 0 && (state == "done" || state == "failed") ? 1 : 0;
    if (a.has("json")) {
      ctx.out << r.dump() << "\n";
    } else if (r.value("affected", 0) == 0) {
      (code ? ctx.err : ctx.out) << "job " << id << " was already " << printable(state) << (code ? "; nothing to cancel" : "")
                                 << "\n";
    } else {
      ctx.out << "job " << id << (state == "running" ? " will stop at its next step" : " canceled") << "\n";
    }
    return code;
  }
  if (a.positionals().size() != 1) throw UsageError("which run? `rgbaq cancel RUN` or `rgbaq cancel --job JOB`");
  DaemonClient client(ctx.socket);
  const json r = client.call("cancel", {{"run", positive_id(a.positionals()[0], "run")}});
  // A running job is only asked to stop: one already past its last step ends done, not canceled.
  const int64_t stopping = r.value("stopping", int64_t{0});
  ctx.out << (a.has("json") ? r.dump()
                            : "run " + a.positionals()[0] + ": " + count_of(r.value("canceled", int64_t{0}), "job") + " canceled" +
                                  (stopping ? "; " + count_of(stopping, "running job") + " asked to stop at " +
                                                  (stopping == 1 ? "its" : "their") + " next step (one already decoding ends done)"
                                            : ""))
          << "\n";
  return 0;
}

int rm_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"delete-images", "json"});
  if (a.positionals().size() != 1) throw UsageError("which run? `rgbaq rm RUN [--delete-images]`");
  DaemonClient client(ctx.socket);
  const json r = client.call("forget", {{"run", positive_id(a.positionals()[0], "run")}, {"delete_images", a.has("delete-images")}});
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
    return 0;
  }
  ctx.out << "run " << a.positionals()[0] << " forgotten (" << count_of(r.value("jobs", 0), "job") << ")";
  const int64_t images = r.value("images", 0), deleted = r.value("deleted_images", 0);
  if (a.has("delete-images")) {
    ctx.out << "; " << count_of(deleted, "image") << " deleted";
    if (images > deleted) ctx.out << ", " << (images - deleted) << " kept (moved, gone, or no longer its own)";
  } else if (images) {
    ctx.out << (images == 1 ? "; its image stays where it is" : "; its " + count_of(images, "image") + " stay where they are");
  }
  ctx.out << "\n";
  return 0;
}

int retry_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"failed", "canceled", "json"});
  if (a.positionals().size() != 1) throw UsageError("which run? `rgbaq retry RUN [--failed] [--canceled]`");
  DaemonClient client(ctx.socket);
  const int64_t run = positive_id(a.positionals()[0], "run");
  const json r = client.call("retry", {{"run", run}, {"canceled", a.has("canceled")}});
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
    return 0;
  }
  const int64_t requeued = r.value("requeued", int64_t{0});
  ctx.out << "run " << run << ": " << count_of(requeued, "job") << " queued again";
  if (requeued == 0) {
    // Nothing taken: say why, and what would take the jobs a user most likely meant (canceled ones).
    json counts = json::object();
    const json runs = client.call("ls_runs");
    for (const auto& listed : runs["runs"]) {
      if (listed.value("id", int64_t{0}) == run) counts = listed.value("counts", json::object());
    }
    const int64_t canceled = counts.value("canceled", int64_t{0}), failed = counts.value("failed", int64_t{0});
    if (failed == 0 && !a.has("canceled") && canceled > 0) {
      ctx.out << ": it has no failed jobs, and its " << count_of(canceled, "canceled job") << (canceled == 1 ? " stays" : " stay")
              << " canceled (rgbaq retry " << run << " --canceled takes " << (canceled == 1 ? "it" : "them") << ")";
    } else if (failed == 0 && (!a.has("canceled") || canceled == 0)) {
      ctx.out << ": it has no " << (a.has("canceled") ? "failed or canceled" : "failed") << " jobs";
    }
  }
  ctx.out << "\n";
  return 0;
}

int mark_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"star", "reject", "clear", "json"});
  if (a.has("star") + a.has("reject") + a.has("clear") != 1) throw UsageError("give one of --star, --reject or --clear");
  if (a.positionals().empty()) throw UsageError("which jobs? `rgbaq mark JOB... --star|--reject|--clear` (JOB: 7 or 3-9)");
  const std::vector<int64_t> ids = job_list(a.positionals());
  const json mark = a.has("star") ? json("star") : a.has("reject") ? json("reject") : json(nullptr);
  DaemonClient client(ctx.socket);
  json r;
  try {
    r = client.call("mark", {{"jobs", ids}, {"mark", mark}});
  } catch (const DaemonError& e) {
    if (e.code != protocol::error_code::kNotFound) throw;
    ctx.err << "rgbaq mark: " << e.what() << "\n";  // a job that is not there: a failure (1), not a usage error
    return 1;
  }
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
    return 0;
  }
  const uint64_t changed = r.value("marked", uint64_t{0});
  const uint64_t distinct = std::set<int64_t>(ids.begin(), ids.end()).size();
  const uint64_t others = distinct - std::min(changed, distinct);
  const std::string done = a.has("star") ? "starred" : a.has("reject") ? "rejected" : "unmarked";
  ctx.out << count_of(changed, "job") << " " << done;
  if (others > 0) {
    ctx.out << "; the other " << others << (a.has("clear") ? " had no mark" : others == 1 ? " already was" : " already were");
  }
  ctx.out << "\n";
  return 0;
}

int pause_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"json"});
  return simple(ctx, a, "pause", json::object(), "paused: the job in hand finishes, no new one starts");
}

int resume_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"json"});
  return simple(ctx, a, "resume", json::object(), "resumed");
}

int prioritize_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {}, {"json"});
  if (a.positionals().size() != 2) throw UsageError("usage: rgbaq prioritize RUN PRIORITY (higher goes first)");
  int priority = 0;
  try {
    priority = std::stoi(a.positionals()[1]);
  } catch (const std::exception&) {
    throw UsageError("priority \"" + a.positionals()[1] + "\" is not an integer");
  }
  DaemonClient client(ctx.socket);
  const json r = client.call("prioritize", {{"run", positive_id(a.positionals()[0], "run")}, {"priority", priority}});
  ctx.out << (a.has("json") ? r.dump() : "run " + a.positionals()[0] + ": " + count_of(r.value("updated", 0), "job") +
                                             " now at priority " + std::to_string(priority))
          << "\n";
  return 0;
}

int export_command(const std::vector<std::string>& args, CliContext& ctx) {
  if (asks_for_assets(args)) return asset_export_command(args, ctx);  // finished assets into a folder
  std::vector<std::string> words;
  for (const auto& w : args) words.push_back(w == "-o" ? "--output" : w);
  const Arguments a(words, {"format", "output", "marked", "qa"}, {});
  if (a.positionals().size() != 1) throw UsageError("usage: rgbaq export RUN [--format csv|jsonl] [--marked M] [--qa FLAG] [-o FILE]");
  const std::string format = a.get("format").value_or("jsonl");
  if (format != "csv" && format != "jsonl") throw UsageError("--format \"" + format + "\" is not csv or jsonl");
  DaemonClient client(ctx.socket);
  json params = {{"run", positive_id(a.positionals()[0], "run")}};
  if (const auto marked = a.get("marked")) params["marked"] = *marked;
  if (const auto qa = a.get("qa")) params["qa"] = qa_filter_option(*qa);
  // Written as the pages arrive: a run of 100,000 jobs never sits in memory whole. FILE is opened once
  // the daemon has answered, so an export that is refused (no such run) leaves it as it was.
  const auto out = a.get("output");
  std::ofstream file;
  std::ostream* text = &ctx.out;
  const auto begin = [&](const json&) {
    if (out) {
      file.open(*out, std::ios::binary | std::ios::trunc);
      if (!file) throw std::runtime_error(*out + ": cannot write");
      text = &file;
    }
    if (format == "csv") *text << daemon::kExportCsvHeader;
  };
  try {
    for_each_exported_job(client, params, begin, [&](const json& j) {
      if (format == "jsonl") {
        *text << j.dump() << "\n";
        return;
      }
      *text << daemon::export_csv_row(j);
    });
    if (out && !file.flush()) throw std::runtime_error(*out + ": cannot write");
  } catch (...) {
    if (file.is_open()) {  // no half an export left behind as if it were one
      file.close();
      std::error_code ec;
      std::filesystem::remove(*out, ec);
    }
    throw;
  }
  return 0;
}

}  // namespace rgbaq::cli
