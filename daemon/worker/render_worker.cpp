#include "daemon/worker/render_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cassert>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "daemon/base/service_notify.h"
#include "daemon/worker/crash_record.h"
#include "daemon/worker/device_fault_injection.h"
#include "daemon/worker/job_completion.h"
#include "daemon/base/finished_output.h"
#include "daemon/base/lora_folders.h"
#include "daemon/base/render_record.h"
#include "engine/model/model_identity.h"
#include "host/contract_limits.h"
#include "jobs/lora_list.h"
#include "storage/open_queue_store.h"
#include "storage/png_file.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {
namespace {

constexpr size_t kPreferredPrompts = 32;
constexpr size_t kPreferredLoraSets = 8;

}  // namespace

void reserve_largest_render(engine::Session& session) {
  session.graphs().reserve(host::kMaxTextTokens, host::kMaxImageTokens);
}

RenderWorker::RenderWorker(const DaemonConfig& config, engine::Session& session, const std::string& model_identity,
                           const nlohmann::json& components, DaemonState& state, WorkerState& worker, EventHub& events, SharedEncoderCache& encoder_cache,
                           storage::WorkerInfo info)
    : config_(config),
      session_(session),
      model_identity_(model_identity),
      components_(components),
      state_(state),
      worker_(worker),
      events_(events),
      encoder_cache_(encoder_cache),
      heartbeat_(std::make_unique<WorkerHeartbeat>(config, std::move(info), worker, state)),
      store_(storage::open_queue_store(config.queue_url(), config.store_options())),
      writer_(config.queue_url(), config.store_options(), config.pending_outputs_dir(), state, worker, events) {
  worker_.set_description(session_.device_description());
}

void RenderWorker::run() {
  blame_crashes_on_this_thread(worker_.job);
  // A claim that fails (the database locked by another process, unreadable, its disk gone) makes the
  // daemon visibly unhealthy and is retried with backoff; one that keeps failing ends the daemon, so a
  // service manager restarts it or a person sees why, instead of a daemon that says "ready" and does nothing.
  bool failing = false;
  std::chrono::steady_clock::time_point failing_since;
  std::chrono::milliseconds backoff{250};
  while (!state_.stopping() && !worker_.out_of_service()) {
    std::optional<storage::Job> job;
    try {
      job = store_->claim(heartbeat_->worker_id(), {cached_prompts_.begin(), cached_prompts_.end()}, loaded_loras());
      if (job) worker_.hold(job->id);  // from here the heartbeat renews its lease
      if (failing) {
        spdlog::info("the queue database {} works again", store_->location());
        state_.clear_problem();
        sd_notify("STATUS=ready");
        failing = false;
        backoff = std::chrono::milliseconds(250);
      }
    } catch (const std::exception& e) {
      const auto now = std::chrono::steady_clock::now();
      if (!failing) failing_since = now;
      failing = true;
      const std::string problem = "claiming a job from the queue database " + store_->location() + " fails: " + e.what();
      state_.set_problem(problem);
      sd_notify("STATUS=unhealthy: " + problem);
      const auto failing_for = std::chrono::duration_cast<std::chrono::seconds>(now - failing_since);
      spdlog::error("{} (for {} s; retrying in {} ms)", problem, failing_for.count(), backoff.count());
      if (failing_for.count() >= config_.unhealthy_exit_s) {
        throw std::runtime_error(problem + "; it has not recovered in " + std::to_string(failing_for.count()) + " s");
      }
      state_.wait_for_stop(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(8000));
      continue;
    }
    if (!job) {
      state_.wait_for_work(std::chrono::milliseconds(500));
      continue;
    }
    handle(*job);
  }
  writer_.finish();
  if (worker_.out_of_service()) heartbeat_.reset();  // it holds no lease: the queue forgets it now
}

std::vector<std::string> RenderWorker::loaded_loras() const {
  std::vector<std::string> loaded{""};
  for (const std::string& list : recent_loras_) {
    try {
      if (session_.lora_cache().holds_all(lora_requests(config_.lora_dirs, list))) loaded.push_back(list);
    } catch (const std::exception&) {
      // a file gone since: not loaded
    }
  }
  return loaded;
}

bool RenderWorker::reuse_finished_output(const storage::Job& job) {
  if (!std::filesystem::exists(job.output_path)) return false;
  storage::PngImage png;
  try {
    png = storage::read_png_if_size(job.output_path, job.width, job.height);  // another size: never decoded
  } catch (const std::exception&) {
    return false;  // not a finished PNG: render and replace it
  }
  const auto it = png.texts.find("rgbaq");
  const LoraHashesNow lora_sha256 = [&] { return lora_hashes_.of(lora_requests(config_.lora_dirs, job.lora)); };
  // Ours (this job before a crash) only with the job's LoRA set and files; or the same image from another
  // job (a resubmission): same prompt, seed, size, LoRAs and model. Either at the job's size.
  const bool job_size = png.width == job.width && png.height == job.height;
  const bool this_job = storage::job_id_of(png) == job.id;
  const bool ours = job_size && this_job && records_lora_set(png, job.lora, lora_sha256);
  const bool same = holds_image(png, {job.prompt, job.seed, job.width, job.height, model_identity_, job.lora, lora_sha256});
  if (!ours && !same) {
    if (this_job) return false;  // this job's own image, of a LoRA file updated since: render it again
    throw std::runtime_error("output " + job.output_path + " exists and holds another image; move it or submit with another --out");
  }
  // Its alpha check from the file's pixels (decoded: it is the job's size), as the writer's from the same pixels.
  assert(png.rgba.size() == size_t(png.width) * size_t(png.height) * 4);
  const storage::Completion completion =
      job_completion(*store_, job, assets::check_alpha(png.rgba.data(), png.width, png.height), it->second);
  if (!store_->complete(job.id, job.worker_id, completion)) {
    spdlog::warn("job {}: lease lost; its finished PNG {} was found but the job is not recorded done: {}", job.id,
                 job.output_path, lost_lease(*store_, job));
    return true;
  }
  ++state_.counters.outputs_reused;
  spdlog::info("job {}: {} already holds its image; not rendering again (alpha check: {})", job.id, job.output_path,
               completion.qa_flags);
  events_.publish("job_done", {{"job", job.id}, {"run", job.run_id}, {"path", job.output_path}, {"reused", true},
                               {"qa", completion.qa_flags}});
  if (!completion.reseed_candidates.empty()) announce_reseed(*store_, state_, events_, job, completion.qa_flags);
  publish_if_run_finished(*store_, events_, job.run_id);
  return true;
}

void RenderWorker::handle(const storage::Job& job) {
  worker_.job = job.id;
  worker_.step = 0;
  worker_.steps = 0;
  const auto began = std::chrono::steady_clock::now();
  struct InHand {  // however the job ends: its time counts, and the worker holds no job
    WorkerState& w;
    std::chrono::steady_clock::time_point began;
    ~InHand() {
      w.busy_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began).count();
      w.job = -1;
    }
  } in_hand{worker_, began};
  abort_if_test_prompt(job.prompt);  // tests only: a job that crashes the daemon every time
  bool lease_lost = false;  // found at a step: the job is no longer this worker's
  try {
    if (reuse_finished_output(job)) {
      worker_.release(job.id);
      return;
    }
    // The prompt recorded as written; the tokenizer sees it without its <lora:...> tags (in job.lora).
    const engine::RenderRequest request{job.prompt, job.seed, {job.width, job.height},
                                        lora_requests(config_.lora_dirs, job.lora)};
    const auto t0 = std::chrono::steady_clock::now();
    const auto prompt = session_.tokenize(jobs::prompt_text(job.prompt));
    const auto t1 = std::chrono::steady_clock::now();
    const SharedEncoderCache::Lookup lookup = encoder_cache_.get(prompt.ids, [&] { return session_.encode(prompt); });
    const engine::Tensor& embeds = lookup.embeds;
    const bool cache_hit = lookup.cache_hit;
    const auto t2 = std::chrono::steady_clock::now();
    cached_prompts_.push_front(job.prompt_key);
    if (cached_prompts_.size() > kPreferredPrompts) cached_prompts_.pop_back();
    if (!job.lora.empty()) {
      std::erase(recent_loras_, job.lora);
      recent_loras_.push_front(job.lora);
      if (recent_loras_.size() > kPreferredLoraSets) recent_loras_.pop_back();
    }
    events_.publish("job_started", {{"job", job.id}, {"run", job.run_id}, {"prompt", job.prompt}, {"name", job.name},
                                    {"seed", job.seed}, {"width", job.width}, {"height", job.height},
                                    {"encoder_cache_hit", cache_hit}, {"worker", worker_.label()}});
    bool canceled = false;
    auto step_began = std::chrono::steady_clock::now();
    engine::RenderResult result = session_.render_embedded(embeds, request, [&](int done, int total) {
      inject_test_device_fault(worker_.index());  // tests only: a device that fails mid-render
      worker_.step = done;
      worker_.steps = total;
      worker_.set_progress(job.id, done, total);  // the heartbeat records it in the queue for other hosts
      heartbeat_->beat_soon();
      kill_if_test_step(job.prompt, done, [&] { store_->record_progress(job.worker_id, {{job.id, done, total, false}}); });
      // step_s: this step's wall time, so a watcher's ETA comes from measured steps at this size.
      const auto now = std::chrono::steady_clock::now();
      events_.publish("progress", {{"job", job.id}, {"run", job.run_id}, {"step", done}, {"steps", total},
                                   {"width", job.width}, {"height", job.height}, {"worker", worker_.label()},
                                   {"step_s", std::chrono::duration<double>(now - step_began).count()}});
      step_began = now;
      if (done == total) events_.publish("decoding", {{"job", job.id}, {"run", job.run_id}});
      if (state_.stopping()) return false;
      // Still ours? A host that stalled past its lease (stopped, swapped out) may find the job given to
      // another worker: it stops rendering it (the writer's fenced complete is what guarantees the rest).
      const auto hold = store_->step_hold(job.id, job.worker_id);
      lease_lost = hold == storage::QueueStore::StepHold::kLost;
      canceled = hold == storage::QueueStore::StepHold::kCancelRequested;
      stop_if_test_step(job.prompt, done);  // tests only: a host that stalls here
      return !canceled && !lease_lost;
    });
    worker_.device_peak_bytes = session_.device_peak_bytes();
    FinishedRender render;
    render.job = job;
    render.width = result.size.width;
    render.height = result.size.height;
    render.metadata = describe_render(request, result, config_.model_dir, config_.components, model_identity_,
                                      session_.backend_name(), session_.precision());
    render.components = components_;
    render.rgba = std::move(result.rgba);
    // The worker tokenized and encoded (or found the embeddings) itself: its own clock for those.
    storage::RenderMetadata& m = render.metadata;
    m.tokenize_s = std::chrono::duration<double>(t1 - t0).count();
    m.encode_s = std::chrono::duration<double>(t2 - t1).count();
    m.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.encoder_cache_hit = cache_hit;
    m.job_id = job.id;
    m.run_id = job.run_id;
    m.template_text = job.template_text;
    m.choices_json = job.choices_json;
    m.host = job.host;
    m.device = worker_.device();
    m.worker = worker_.index();
    writer_.enqueue(std::move(render));  // the writer releases the job once it is recorded
    return;
  } catch (const engine::DeviceFault& fault) {
    device_fault(job, fault);
    return;
  } catch (const engine::RenderCanceled&) {
    if (lease_lost) {
      spdlog::warn("job {}: lease lost; stopped rendering it at step {}: {}", job.id, worker_.step.load(), lost_lease(*store_, job));
    } else if (state_.stopping()) {
      if (store_->requeue(job.id, job.worker_id)) {
        spdlog::info("job {} returned to the queue for shutdown", job.id);
      } else {
        spdlog::warn("job {}: lease lost; not returned to the queue for shutdown: {}", job.id, lost_lease(*store_, job));
      }
    } else if (store_->finish_canceled(job.id, job.worker_id)) {
      ++state_.counters.jobs_canceled;
      events_.publish("job_canceled", {{"job", job.id}, {"run", job.run_id}});
      publish_if_run_finished(*store_, events_, job.run_id);
    } else {
      spdlog::warn("job {}: lease lost; its cancel is not recorded: {}", job.id, lost_lease(*store_, job));
    }
  } catch (const engine::RenderNotFinite& e) {
    try {
      report_failure(*store_, state_, events_, job, std::string(e.what()) + " (not retried: the same job overflows again)",
                     storage::Failure::kPermanent);
    } catch (const std::exception& store_error) {
      spdlog::error("job {} failed ({}), and recording that failed too: {}", job.id, e.what(), store_error.what());
    }
  } catch (const std::exception& e) {
    try {
      report_failure(*store_, state_, events_, job, e.what());
    } catch (const std::exception& store_error) {
      // The queue refuses even the failure (its server gone for longer than a reconnect): the job stays
      // running there until its lease, no longer renewed, runs out and recovery requeues it. The
      // daemon stays up; the claim loop reports the queue's health.
      spdlog::error("job {} failed ({}), and recording that failed too: {}", job.id, e.what(), store_error.what());
    }
  }
  worker_.release(job.id);
}

void RenderWorker::device_fault(const storage::Job& job, const engine::DeviceFault& fault) {
  ++worker_.device_faults;
  spdlog::error("{}: job {}: the device failed ({}): {}", worker_.label(), job.id, engine::device_fault_kind_name(fault.kind()),
                fault.what());
  // Back to the queue as an interruption, as for a host that died: not the job's fault, so no attempt
  // spent. The writer's jobs are recorded first, since every lease of this worker ends.
  try {
    writer_.wait_idle();
    heartbeat_->give_back_leases();
    events_.publish("job_interrupted", {{"job", job.id}, {"run", job.run_id}, {"worker", worker_.label()},
                                        {"error", fault.what()}});
  } catch (const std::exception& e) {
    // Not renewed from here, its lease runs out and recovery takes the job back.
    spdlog::error("{}: job {}: giving it back failed ({}); it returns to the queue when its lease runs out", worker_.label(),
                  job.id, e.what());
  }
  worker_.release(job.id);
  std::string outcome = std::string(engine::device_fault_kind_name(fault.kind())) + ": " + fault.what() + "; job " +
                        std::to_string(job.id) + " given back";
  if (fault.poisons_session()) {
    try {
      refuse_test_reopen(worker_.index());  // tests only: a device that stays gone
      session_.reopen_backend();
      reserve_largest_render(session_);
      ++worker_.session_restarts;
      worker_.set_description(session_.device_description());
      outcome += "; session opened again";
      spdlog::info("{}: session opened again on {}", worker_.label(), session_.device_description());
    } catch (const std::exception& e) {
      const std::string why = "its device failed (" + std::string(fault.what()) + ") and its session could not be opened again: " +
                              e.what() + " (restart rgbaqd once the device is back)";
      worker_.set_out_of_service(why);
      outcome += "; out of service";
      spdlog::critical("{}: out of service: {}", worker_.label(), why);
      sd_notify("STATUS=degraded: " + worker_.label() + " out of service: " + why);
      events_.publish("worker_out_of_service", {{"worker", worker_.label()}, {"error", why}});
    }
  }
  worker_.set_last_fault(outcome);
}

}  // namespace rgbaq::daemon
