#include "daemon/api/job_submission.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <set>
#include <cstring>
#include <limits>
#include <map>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/printable_text.h"
#include "common/trusted_folder.h"
#include "daemon/base/finished_output.h"
#include "daemon/base/lora_folders.h"
#include "daemon/protocol.h"
#include "daemon/api/request_handler.h"
#include "daemon/api/replaced_outputs.h"
#include "daemon/api/request_params.h"
#include "jobs/lora_list.h"
#include "jobs/output_name.h"
#include "jobs/wildcard_set.h"
#include "storage/png_file.h"

namespace rgbaq::daemon {
namespace {

using jobs::WildcardSet;
using nlohmann::json;

json file_error_details(const std::vector<jobs::FileError>& errors, const std::string& file_name) {
  json details = json::array();
  for (const auto& e : errors) {
    details.push_back({{"line", e.line}, {"column", e.column}, {"field", e.field}, {"message", e.message},
                       {"text", e.to_string(file_name)}});
  }
  return details;
}

// Refuses an output directory that can never be written (a file where a directory must be, no write
// permission), so its jobs are not queued, rendered and failed one by one: the nearest existing
// ancestor must be a directory this daemon (the client's own uid) may create entries in. And one that
// another user could swap for a link elsewhere (common/trusted_folder.h): every existing component
// this user's or root's, none writable by another user unless sticky.
void check_output_dir(const std::filesystem::path& out_dir) {
  std::filesystem::path at = out_dir;
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {
    if ((errno != ENOENT && errno != ENOTDIR) || at == at.root_path()) {
      throw RequestError(protocol::error_code::kBadRequest, "output directory " + out_dir.string() + ": " + at.string() + ": " + std::strerror(errno));
    }
    at = at.parent_path();
  }
  const auto refuse = [&](const std::string& why) {
    throw RequestError(protocol::error_code::kBadRequest,
                       "output directory " + out_dir.string() + " cannot be written: " + at.string() + " " + why);
  };
  if (!S_ISDIR(st.st_mode)) refuse("is not a directory");
  if (::access(at.c_str(), W_OK | X_OK) != 0) refuse(std::string("cannot be written to (") + std::strerror(errno) + ")");
  try {
    ::close(common::open_trusted_folder(at));
  } catch (const common::FolderError& e) {
    throw RequestError(protocol::error_code::kBadRequest, "output directory " + out_dir.string() + " is not safe to write into: " + e.what());
  }
}

std::filesystem::path resolve_output_dir(const std::filesystem::path& out_dir) {
  try {
    return common::resolve_folder(out_dir);
  } catch (const common::FolderError& e) {
    throw RequestError(protocol::error_code::kBadRequest, "output directory " + out_dir.string() + ": " + e.what());
  }
}

// What the file at a job's output path holds, as the worker will judge it when it claims the job.
// kAbsent: no file at all (the path is free again when its owner is finished or forgotten).
enum class ExistingOutput { kAbsent, kNone, kSameImage, kOtherImage };
ExistingOutput existing_output(const storage::NewJob& job, const std::string& model_identity,
                               const std::vector<std::filesystem::path>& lora_dirs, LoraFileHashes& hashes) {
  struct stat st {};
  if (::stat(job.output_path.c_str(), &st) != 0) return errno == ENOENT ? ExistingOutput::kAbsent : ExistingOutput::kNone;
  storage::PngImage png;
  try {
    png = storage::read_png_info(job.output_path);
  } catch (const std::exception&) {
    return ExistingOutput::kNone;  // not a finished PNG: the worker renders and replaces it
  }
  const LoraHashesNow lora_sha256 = [&] { return hashes.of(lora_requests(lora_dirs, job.lora)); };
  try {
    const bool same = holds_image(png, {job.prompt, job.seed, job.width, job.height, model_identity, job.lora, lora_sha256});
    return same ? ExistingOutput::kSameImage : ExistingOutput::kOtherImage;
  } catch (const std::exception&) {
    return ExistingOutput::kNone;  // a LoRA file unreadable now: the worker judges it when it claims the job
  }
}

std::string plural(uint64_t n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The submit's "wildcards": {"NAME": "the text of NAME.txt", ...} as the client read them, and
// "wildcards_dir", the folder it read them from (named in messages, never read here).
WildcardSet wildcards_param(const json& params) {
  std::map<std::string, std::string> texts;
  if (const json* w = find_param(params, "wildcards")) {
    if (!w->is_object()) bad_param("wildcards", "must be an object: {\"NAME\": \"the text of NAME.txt\", ...}");
    for (const auto& [name, text] : w->items()) {
      if (!jobs::is_wildcard_name(name)) {
        bad_param("wildcards", "\"" + common::printable(name) + "\" is no wildcard name (letters, digits, '_', '-', '/' between parts)");
      }
      if (!text.is_string()) bad_param("wildcards", "\"" + name + "\" must be a string (the file's text)");
      if (text.get_ref<const std::string&>().size() > jobs::kMaxWildcardFileBytes) {
        bad_param("wildcards", "\"" + name + "\" is over " + std::to_string(jobs::kMaxWildcardFileBytes >> 20) + " MiB");
      }
      texts.emplace(name, text.get<std::string>());
    }
  }
  return WildcardSet::from_texts(std::move(texts), text_param(params, "wildcards_dir", ""));
}

// "sample_seed": an integer in [0, 2^64).
uint64_t sample_seed_param(const json& params) {
  const json* seed = find_param(params, "sample_seed");
  if (!seed) bad_param("sample_seed", "is required with sample (the seed of the draw)");
  if (!seed->is_number_unsigned() && !(seed->is_number_integer() && seed->get<int64_t>() >= 0)) {
    bad_param("sample_seed", "must be an integer in 0..18446744073709551615");
  }
  return seed->get<uint64_t>();
}

// The first kPreviewJobs jobs as the submit would queue them: what `submit --dry-run` shows.
json preview_jobs(const jobs::JobFile& file, const std::filesystem::path& out_dir) {
  json preview = json::array();
  jobs::for_each_job(file, [&](const jobs::JobSpec& spec) {
    if (preview.size() >= protocol::kPreviewJobs) return;
    const storage::NewJob j = to_queue_row(spec, out_dir);
    preview.push_back({{"line", j.line}, {"prompt", j.prompt}, {"seed", j.seed}, {"width", j.width}, {"height", j.height},
                       {"name", j.name}, {"lora", j.lora}, {"output", j.output_path},
                       {"template", j.template_text.empty() ? json(nullptr) : json(j.template_text)},
                       {"choices", j.choices_json.empty() ? json(nullptr) : json::parse(j.choices_json)}});
  });
  return preview;
}

}  // namespace

json submit_job_file(storage::QueueStore& store, const engine::Session& session, const std::string& model_identity,
                     const json& params, const SubmitLimits& limits) {
  const json* file_text = find_param(params, "file");
  if (!file_text || !file_text->is_string()) bad_param("file", "is required (a string)");
  const auto file_name = text_param(params, "file_name", "-");
  const auto format = text_param(params, "format", "csv");
  const std::filesystem::path typed_out_dir = text_param(params, "out_dir", "");
  if (typed_out_dir.empty()) bad_param("out_dir", "is required");
  if (!typed_out_dir.is_absolute()) throw RequestError(protocol::error_code::kBadRequest, "out_dir must be an absolute path");
  if (format != "csv" && format != "jsonl") throw RequestError(protocol::error_code::kBadRequest, "format must be csv or jsonl");
  const json* defaults_param = find_param(params, "defaults");
  const json defaults = defaults_param ? *defaults_param : json::object();
  if (!defaults.is_object()) bad_param("defaults", "must be an object");
  jobs::ParseOptions options;
  options.expand = false;  // expanded batch by batch below
  if (const json* seeds = find_param(defaults, "seeds")) {
    if (!seeds->is_string()) bad_param("defaults.seeds", "must be a string");
    options.defaults.seeds = seeds->get<std::string>();
  }
  options.defaults.size = text_param(defaults, "size", options.defaults.size, "defaults.");
  if (const json* lora = find_param(defaults, "lora")) {
    if (!lora->is_string()) bad_param("defaults.lora", "must be a string (name:weight;name:weight)");
    options.defaults.lora = lora->get<std::string>();
  }
  // Re-seeding (issue 40): the flags as "cut_off,empty" or ["cut_off", "empty"]; the file's parse checks
  // each name (an unknown one is an error of the field --reseed-on).
  if (const json* reseed_on = find_param(defaults, "reseed_on")) {
    const bool strings = reseed_on->is_array() && std::all_of(reseed_on->begin(), reseed_on->end(), [](const json& f) { return f.is_string(); });
    if (!reseed_on->is_string() && !strings) bad_param("defaults.reseed_on", "must be a string (cut_off,empty) or a list of flag names");
    if (reseed_on->is_string()) {
      options.defaults.reseed_on = reseed_on->get<std::string>();
    } else {
      for (const json& f : *reseed_on) options.defaults.reseed_on += (options.defaults.reseed_on.empty() ? "" : ",") + f.get<std::string>();
    }
  }
  options.defaults.reseed_max = static_cast<int>(
      int_param(defaults, "reseed_max", options.defaults.reseed_max, 0, jobs::kMaxReseedMax, "defaults."));
  options.check_lora = [&](const std::string& name) { return lora_file_problem(limits.lora_dirs, name, session.dit_config()); };
  options.defaults.count =
      static_cast<int>(int_param(defaults, "count", options.defaults.count, 1, std::numeric_limits<int>::max(), "defaults."));
  options.defaults.priority = static_cast<int>(
      int_param(defaults, "priority", options.defaults.priority, jobs::kMinPriority, jobs::kMaxPriority, "defaults."));
  const auto max_jobs = static_cast<uint64_t>(int_param(params, "max_jobs", static_cast<int64_t>(limits.max_jobs), 1,
                                                        std::numeric_limits<int64_t>::max()));
  if (max_jobs > limits.max_jobs) {
    bad_param("max_jobs", "asks for " + std::to_string(max_jobs) + " jobs; this daemon takes at most " +
                              std::to_string(limits.max_jobs) + " in one submit (rgbaqd --max-jobs-per-submit)");
  }
  options.max_jobs = max_jobs;
  options.check_prompt = [&](const std::string& prompt) -> std::string {
    try {
      session.tokenize(prompt);  // refuses an over-long prompt by its byte count before tokenising
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  // Templates expand here from what the submit carries: the wildcard files' texts the client read
  // (this daemon reads no client path), the sample's size and seed.
  WildcardSet wildcards = wildcards_param(params);
  options.wildcards = &wildcards;
  options.templates = bool_param(params, "templates", true);
  if (find_param(params, "sample")) {
    options.sample = static_cast<uint64_t>(int_param(params, "sample", 1, 1, std::numeric_limits<int64_t>::max()));
    options.sample_seed = sample_seed_param(params);
  }
  const auto file = jobs::parse_job_file(file_text->get_ref<const std::string&>(),
                                         format == "jsonl" ? jobs::FileFormat::kJsonl : jobs::FileFormat::kCsv, options);
  if (!file.errors.empty()) {
    throw RequestError(protocol::error_code::kInvalidFile,
                       std::to_string(file.errors.size()) + " error" + (file.errors.size() == 1 ? "" : "s") + " in " +
                           file_name + "; nothing was queued",
                       file_error_details(file.errors, file_name));
  }
  json result = {{"jobs", file.job_count}, {"duplicates_in_file", file.duplicates_skipped}};
  // Resolved once, here: the jobs' paths name the folder as the file system does (a symlink the user
  // typed followed now, never at write time), so two names of one folder own their outputs as one.
  const std::filesystem::path out_dir = resolve_output_dir(typed_out_dir);
  if (bool_param(params, "dry_run")) {
    result["dry_run"] = true;
    result["preview"] = preview_jobs(file, out_dir);
    return result;
  }
  check_output_dir(out_dir);
  storage::RunOptions run;
  run.name = text_param(params, "name", std::filesystem::path(file_name).stem().string());
  run.out_dir = out_dir.string();
  run.skip_duplicates = bool_param(params, "skip_duplicates");
  const bool replace = bool_param(params, "replace");
  std::set<std::string_view> prompts;  // the run's prompt count, for its listings
  for (const auto& row : file.rows) prompts.insert(row.prompt);
  json run_options = {{"file", file_name}, {"defaults", defaults}, {"out_dir", out_dir.string()},
                     {"skip_duplicates", run.skip_duplicates}, {"prompts", prompts.size()}};
  if (options.sample) run_options["sample"] = {{"size", *options.sample}, {"seed", options.sample_seed}};
  run.options_json = run_options.dump();
  const int64_t run_id = store.begin_run(run);
  storage::SubmitResult total;
  uint64_t reusable = 0;
  std::vector<jobs::FileError> taken_by_files;  // outputs where a PNG of another image already is
  std::vector<std::string> to_move;             // those, with --replace: moved aside before the run is published
  std::chrono::steady_clock::duration longest{};
  LoraFileHashes lora_hashes;  // each LoRA file hashed once for the submit's many outputs
  try {
    std::vector<storage::NewJob> batch;
    batch.reserve(limits.batch_jobs);
    auto flush = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = store.append_jobs(run_id, run, batch);
      const auto held = std::chrono::steady_clock::now() - t0;
      longest = std::max(longest, held);
      total.inserted += r.inserted;
      total.skipped += r.skipped;
      total.taken_over += r.taken_over;
      batch.clear();
      // SQLite's busy handler polls: a writer waiting for the lock (the output writer, a claim) gets it
      // only if the lock stays free for a while. Leave it free as long as the batch held it.
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(held, std::chrono::milliseconds(50)));
    };
    jobs::for_each_job(file, [&](const jobs::JobSpec& spec) {
      batch.push_back(to_queue_row(spec, out_dir));
      const ExistingOutput existing = existing_output(batch.back(), model_identity, limits.lora_dirs, lora_hashes);
      reusable += existing == ExistingOutput::kSameImage;
      batch.back().may_take_over = replace || existing == ExistingOutput::kAbsent;
      if (existing == ExistingOutput::kOtherImage && replace) {
        to_move.push_back(batch.back().output_path);
      } else if (existing == ExistingOutput::kOtherImage && taken_by_files.size() < 20) {
        taken_by_files.push_back({spec.line, 0, "", "output " + batch.back().output_path + " is already there and holds another "
                                  "image; move it, give the row its own name, submit with another --out, or with --replace "
                                  "(the image is moved to replaced/ beside it)"});
      }
      if (batch.size() == limits.batch_jobs) flush();
    });
    if (!batch.empty()) flush();
    if (!taken_by_files.empty()) {
      store.discard_run(run_id);
      throw RequestError(protocol::error_code::kInvalidFile,
                         plural(taken_by_files.size(), "output path is", "output paths are") + " taken by existing files in " +
                             file_name + "; nothing was queued",
                         file_error_details(taken_by_files, file_name));
    }
    if (total.inserted == 0 && total.skipped > 0) {
      // --skip-duplicates left nothing to do: no empty run in the listings.
      store.discard_run(run_id);
      result["run"] = nullptr;
      result["jobs"] = 0;
      result["skipped"] = total.skipped;
      result["reusable"] = 0;
      return result;
    }
    // Still pending, so no worker can write these paths yet: the old images move first.
    for (const std::string& path : to_move) {
      const auto moved = move_aside(path);
      spdlog::info("run {}: {} moved aside to {} (--replace)", run_id, common::printable(path), common::printable(moved.string()));
    }
    store.publish_run(run_id, total.inserted);
  } catch (const RequestError&) {
    throw;
  } catch (const storage::OutputClashError& e) {
    store.discard_run(run_id);
    std::vector<jobs::FileError> errors;
    for (const auto& c : e.clashes()) {
      const std::string run_n = "run " + std::to_string(c.owner_run);
      std::string m = "output " + c.path + " already belongs to another image (" +
                      (c.owner_run == run_id ? std::string("another row of this file") : run_n) + ")";
      if (c.owner_run == run_id) {
        m += "; give the row its own name, or submit with another --out";
      } else if (c.owner_active) {
        m += ", queued or running there, so not even --replace takes it; wait for " + run_n + ", or cancel it (rgbaq cancel " +
             std::to_string(c.owner_run) + "), give the row its own name, or submit with another --out";
      } else {
        m += "; give the row its own name, submit with another --out, or with --replace (its image is moved to "
             "replaced/ beside it)";
      }
      errors.push_back({c.line, 0, "", m});
    }
    throw RequestError(protocol::error_code::kInvalidFile,
                       plural(errors.size(), "output path clash", "output path clashes") + " in " +
                           file_name + "; nothing was queued",
                       file_error_details(errors, file_name));
  } catch (...) {
    try {
      store.discard_run(run_id);
    } catch (const std::exception&) {
      // the next start's recovery removes the pending run
    }
    throw;
  }
  spdlog::info("run {}: {} jobs inserted in batches of {}, the longest write transaction {:.1f} ms", run_id, total.inserted,
               limits.batch_jobs, std::chrono::duration<double, std::milli>(longest).count());
  result["run"] = run_id;
  result["jobs"] = total.inserted;
  result["skipped"] = total.skipped;
  result["reusable"] = reusable;
  result["taken_over"] = total.taken_over;
  result["moved_aside"] = to_move.size();
  return result;
}

}  // namespace rgbaq::daemon
