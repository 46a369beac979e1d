#pragma once
// The rgbaqd socket protocol, version 1: newline-delimited JSON over a Unix stream socket.
//
//   request   {"v": 1, "id": 7, "method": "status", "params": {...}}
//   response  {"v": 1, "id": 7, "ok": true, "result": {...}}
//             {"v": 1, "id": 7, "ok": false, "error": {"code": "not_found", "message": "...", "details": [...]}}
//   event     {"v": 1, "event": "progress", ...}     (only on a connection that asked to "watch")
//
// Events (fields beyond "v", "event", "job", "run"; a client ignores events and fields it does not know):
//   job_started  prompt, name, seed, width, height, encoder_cache_hit
//   progress     step, steps, width, height, step_s (that step's wall time); or, for a job another
//                worker renders (another host), step, steps, width, height, host: its recorded progress
//   decoding     (after the last step: the VAE decode and the PNG write follow); host for another's job
//   job_done     path, seconds (the image's wall time) | reused; qa (the alpha check's flags: "ok", "cut_off,...")
//   job_reseeded qa, replaced_by (the job queued with the next seed of its row), seed
//   job_failed   error, will_retry        job_canceled        run_done  done, failed, canceled
//
// Methods: ping, status, submit, ls_runs, show_run, ls_jobs, show_job, cancel, retry, retry_jobs, forget, mark,
// pause, resume, prioritize, export, watch.
//   mark        {"jobs": [id, ...], "mark": "star" | "reject" | null, "by"} -> {"marked": jobs whose mark changed};
//               "by" is set by the transport (the socket: "uid N (name)" of the peer), a label only.
//               A job that does not exist: not_found naming the first, and nothing is marked.
//   retry_jobs  {"jobs": [id, ...]} -> {"requeued": N}: the failed and canceled ones back to the queue.
//   forget      {"run", "delete_images"} -> {"run", "jobs", "images", "deleted_images"}: the run leaves the queue
//               (conflict while a job of it is queued or running); its done jobs' PNGs that still hold
//               their own images are deleted with delete_images.
//   ls_jobs and export take "marked": star | reject | none | any (starred or rejected), and "qa": ok (the
//               alpha check found nothing) or a flag (empty, no_alpha, cut_off, fragmented, fake_transparency).
//   submit      "defaults" may have "reseed_on" (flags, "cut_off,empty" or a list) and "reseed_max" (0..1000,
//               default 2), as rows may: a job whose image gets one of the flags gets its row a new job.
//   export      {"run", "marked", "after": job id (default 0), "limit": 1..kMaxExportPageJobs (default
//               kExportPageJobs)} -> {"run": {id, name, out_dir, counts}, "jobs": the next jobs after
//               "after" in id order, "next_after": the id to ask after for the next page, or null at the end}.
//   submit      templates (jobs/prompt_template.h) expand here from what the request carries: "wildcards"
//               {"NAME": "the text of NAME.txt", ...} (the CLI sends the files it read; the daemon reads no
//               client path), "wildcards_dir" (the folder they came from, for messages), "sample" N and
//               "sample_seed" S (N combinations of each template drawn with S), "templates": false (every
//               prompt as written). A dry run's answer has "preview": the first kPreviewJobs jobs as the
//               submit would queue them ({line, prompt, seed, width, height, name, lora, output, template,
//               choices}).
// A job's JSON has "template" (the prompt as written, or null) and "choices" (an object, or null).
// A job's JSON has "qa" (the alpha check, assets/alpha_check.h's JSON, or null until done), "reseed_on"
// (or null), "reseed_max", "replaces" and "replaced_by" (the jobs it re-seeds and is re-seeded by, or null).
// A job's JSON has "mark" (star, reject or null), "marked_at" (unix seconds or null), "marked_by". A malformed or oversized frame costs its connection (after an error response), nothing else.
// Header-only: the client (cli/) and the server (daemon/) share these names and limits, nothing more.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/json_nesting.h"

namespace rgbaq::protocol {

inline constexpr int kVersion = 1;
inline constexpr size_t kMaxFrameBytes = 16u << 20;  // default; a submit carries the whole file (rgbaqd --max-frame-mb)
// JSON nested deeper than this is refused before it is parsed: nlohmann's dump and destructor recurse,
// so a 100,000-deep array would overflow the stack. Real frames nest 4 deep.
inline constexpr int kMaxJsonDepth = 64;
inline constexpr size_t kMaxJobIdsPerRequest = 100000;  // mark, retry_jobs
inline constexpr int64_t kExportPageJobs = 1000, kMaxExportPageJobs = 10000;  // jobs in one export answer
inline constexpr size_t kPreviewJobs = 20;  // the jobs a dry run's answer shows

namespace error_code {
inline constexpr std::string_view kBadRequest = "bad_request";      // not JSON, no method, wrong params
inline constexpr std::string_view kUnsupportedVersion = "unsupported_version";
inline constexpr std::string_view kUnknownMethod = "unknown_method";
inline constexpr std::string_view kInvalidFile = "invalid_file";    // details: [{"line", "column", "field", "message"}]
inline constexpr std::string_view kNotFound = "not_found";
inline constexpr std::string_view kConflict = "conflict";    // the queue's state forbids it now (rm of a run in progress)
inline constexpr std::string_view kFrameTooLarge = "frame_too_large";
inline constexpr std::string_view kInternal = "internal";
inline constexpr std::string_view kTooManyConnections = "too_many_connections";
}  // namespace error_code

// Whether no array or object in `text` nests deeper than `max_depth` (brackets inside strings do not
// count).
inline bool nesting_within(std::string_view text, int max_depth = kMaxJsonDepth) {
  return common::json_too_deep_at(text, max_depth) == std::string_view::npos;
}

}  // namespace rgbaq::protocol
