#include "cli/submit_command.h"

#include <fstream>
#include <iostream>
#include <sstream>

#include "common/arguments.h"
#include "cli/daemon_client.h"
#include "cli/watch_command.h"
#include "jobs/job_file.h"

namespace rgbaq::cli {

using common::Arguments;
using common::UsageError;

int submit_command(const std::vector<std::string>& args, CliContext& ctx) {
  const Arguments a(args, {"seeds", "size", "count", "priority", "out", "name", "format", "max-jobs", "lora"},
                    {"dry-run", "wait", "skip-duplicates", "json"});
  if (a.positionals().size() != 1) throw UsageError("usage: rgbaq submit FILE|- [--seeds S] [--size SIZE] [--out DIR] ...");
  const std::string path = a.positionals()[0];
  std::string text;
  if (path == "-") {
    std::ostringstream s;
    s << ctx.in.rdbuf();
    text = s.str();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw UsageError(path + ": cannot open");
    std::ostringstream s;
    s << f.rdbuf();
    text = s.str();
  }
  const std::string format = a.get("format").value_or(jobs::format_for_path(path) == jobs::FileFormat::kJsonl ? "jsonl" : "csv");
  if (format != "csv" && format != "jsonl") throw UsageError("--format \"" + format + "\" is not csv or jsonl");

  jobs::ParseOptions options;
  options.defaults.seeds = a.get("seeds");
  options.defaults.size = a.get("size").value_or(options.defaults.size);
  options.defaults.count = a.get_int("count", 1);
  options.defaults.priority = a.get_int("priority", 0);
  options.defaults.lora = a.get("lora");  // for rows that name no LoRA; the daemon checks the names
  options.max_jobs = a.get_u64("max-jobs", jobs::kDefaultMaxJobs);
  if (options.max_jobs < 1 || options.max_jobs > static_cast<uint64_t>(INT64_MAX)) throw UsageError("--max-jobs must be 1 or more");
  options.expand = false;  // the daemon expands; here only the rows are validated and counted
  const std::string file_name = path == "-" ? "<stdin>" : path;
  const auto file = jobs::parse_job_file(text, format == "jsonl" ? jobs::FileFormat::kJsonl : jobs::FileFormat::kCsv, options);
  if (!file.errors.empty()) {
    for (const auto& e : file.errors) ctx.err << e.to_string(file_name) << "\n";
    ctx.err << file.errors.size() << " error" << (file.errors.size() == 1 ? "" : "s") << "; nothing was queued\n";
    return 2;
  }

  nlohmann::json defaults = {{"size", options.defaults.size}, {"count", options.defaults.count},
                             {"priority", options.defaults.priority}};
  if (options.defaults.seeds) defaults["seeds"] = *options.defaults.seeds;
  if (options.defaults.lora) defaults["lora"] = *options.defaults.lora;
  const auto out_dir = std::filesystem::absolute(a.get("out").value_or("renders")).lexically_normal();
  nlohmann::json params = {{"file", text},
                           {"file_name", file_name},
                           {"format", format},
                           {"defaults", defaults},
                           {"out_dir", out_dir.string()},
                           {"skip_duplicates", a.has("skip-duplicates")},
                           {"dry_run", a.has("dry-run")},
                           {"max_jobs", options.max_jobs}};
  if (const auto name = a.get("name")) params["name"] = *name;
  DaemonClient client(ctx.socket);
  nlohmann::json r;
  try {
    r = client.call("submit", params);
  } catch (const DaemonError& e) {
    for (const auto& d : e.details) ctx.err << d.value("text", d.value("message", "")) << "\n";
    throw;
  }
  if (a.has("json")) {
    ctx.out << r.dump() << "\n";
  } else if (a.has("dry-run")) {
    ctx.out << file_name << ": " << r.value("jobs", 0) << " jobs, valid; nothing was queued (--dry-run)\n";
  } else {
    ctx.out << "run " << r.value("run", 0) << ": " << r.value("jobs", 0) << " jobs queued, images to " << out_dir.string();
    if (r.value("skipped", 0)) ctx.out << " (" << r.value("skipped", 0) << " already queued or done, skipped)";
    if (r.value("duplicates_in_file", 0)) ctx.out << " (" << r.value("duplicates_in_file", 0) << " repeated rows left out)";
    ctx.out << "\n";
  }
  if (!a.has("wait") || a.has("dry-run") || r.value("jobs", 0) == 0) return 0;
  return watch_run(client, ctx, r.value("run", int64_t{0}), true);
}

}  // namespace rgbaq::cli
