#include "daemon/worker/output_writer.h"

#include <sys/stat.h>

#include <cerrno>

#include <spdlog/spdlog.h>

#include "common/trusted_folder.h"
#include "daemon/base/private_files.h"
#include "daemon/base/render_record.h"
#include "daemon/worker/crash_record.h"
#include "daemon/worker/job_completion.h"
#include "daemon/worker/pending_outputs.h"
#include "storage/open_queue_store.h"
#include "storage/png_file.h"

namespace rgbaq::daemon {

void publish_if_run_finished(storage::QueueStore& store, EventHub& events, int64_t run_id) {
  const auto c = store.counts(run_id);
  using storage::JobState;
  if (c[static_cast<int>(JobState::kQueued)] + c[static_cast<int>(JobState::kRunning)] != 0) return;
  kill_if_test_run_end();
  events.publish("run_done", {{"run", run_id},
                              {"done", c[static_cast<int>(JobState::kDone)]},
                              {"failed", c[static_cast<int>(JobState::kFailed)]},
                              {"canceled", c[static_cast<int>(JobState::kCanceled)]}});
}

void report_failure(storage::QueueStore& store, DaemonState& state, EventHub& events, const storage::Job& job,
                    const std::string& reason, storage::Failure failure) {
  const auto now = store.fail(job.id, job.worker_id, reason, failure);
  if (!now) {
    spdlog::warn("job {}: lease lost; its failure is not recorded ({}): {}", job.id, reason, lost_lease(store, job));
    return;
  }
  state.counters.jobs_failed += *now == storage::JobState::kFailed;
  spdlog::error("job {} failed{}: {}", job.id, *now == storage::JobState::kQueued ? " (it will be tried again)" : "", reason);
  events.publish("job_failed", {{"job", job.id}, {"run", job.run_id}, {"error", reason},
                                {"will_retry", *now == storage::JobState::kQueued}});
  publish_if_run_finished(store, events, job.run_id);
}

std::string lost_lease(storage::QueueStore& store, const storage::Job& job) {
  const std::string lease = "worker " + std::to_string(job.worker_id) + "'s lease";
  try {
    const auto now = store.job(job.id);
    if (!now) return lease + " ended; the job is no longer in the queue";
    if (now->state == storage::JobState::kRunning && now->worker_id != job.worker_id) {
      return lease + " ran out and recovery gave the job to worker " + std::to_string(now->worker_id) + " (" +
             now->worker + "), now on attempt " + std::to_string(now->attempts);
    }
    return lease + " ended; the job is now " + std::string(storage::state_name(now->state)) +
           (now->state == storage::JobState::kDone ? " (rendered by " + now->host + ")" : "");
  } catch (const std::exception& e) {
    return lease + " ended; reading the job failed: " + e.what();
  }
}

storage::Failure write_failure_kind(std::error_code cause) {
  if (cause.category() != std::generic_category() && cause.category() != std::system_category()) {
    return storage::Failure::kRetry;
  }
  switch (cause.value()) {
    case ENOENT:        // the folder is gone (and could not be made again)
    case ENOTDIR:       // a part of the path is a file
    case EISDIR:        // the output path is a folder
    case EROFS:         // a read-only file system
    case EACCES:        // the folder refuses this user
    case EPERM:
    case ENAMETOOLONG:
    case ELOOP:         // a symlink loop in the path
      return storage::Failure::kPermanent;
    default:  // ENOSPC, EDQUOT, EIO, EMFILE, ENFILE, ENOMEM, ESTALE...: may pass; retries are bounded anyway
      return storage::Failure::kRetry;
  }
}

OutputWriter::OutputWriter(const std::string& queue_url, const storage::StoreOptions& options,
                           std::filesystem::path pending_dir, DaemonState& state, WorkerState& worker, EventHub& events)
    : store_(storage::open_queue_store(queue_url, options)),
      pending_dir_(std::move(pending_dir)),
      state_(state),
      worker_(worker),
      events_(events),
      thread_([this] { loop(); }) {}

OutputWriter::~OutputWriter() { finish(); }

void OutputWriter::enqueue(FinishedRender render) {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return pending_.size() + (busy_ ? 1 : 0) < 2; });
  pending_.push_back(std::move(render));
  cv_.notify_all();
}

void OutputWriter::wait_idle() {
  std::unique_lock lock(mutex_);
  cv_.wait(lock, [&] { return pending_.empty() && !busy_; });
}

void OutputWriter::finish() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void OutputWriter::loop() {
  for (;;) {
    FinishedRender render;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return !pending_.empty() || done_; });
      if (pending_.empty()) return;
      render = std::move(pending_.front());
      pending_.pop_front();
      busy_ = true;
    }
    // The thread's boundary: nothing thrown here may reach std::terminate (an SQLite busy or disk-full
    // error while recording the outcome).
    try {
      write(render);
    } catch (const std::exception& e) {
      record_failure(render.job, e.what());
    }
    worker_.release(render.job.id);  // recorded (or not recordable): its lease is no longer renewed
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

void OutputWriter::record_failure(const storage::Job& job, const std::string& reason, storage::Failure failure) {
  try {
    report_failure(*store_, state_, events_, job, reason, failure);
  } catch (const std::exception& e) {
    // The store refuses even the failure: the job stays running in it until its lease (no longer
    // renewed) runs out and recovery returns it to the queue. The daemon stays up.
    spdlog::error("job {}: {}; recording the failure failed too ({}); it stays running until its lease runs out",
                  job.id, reason, e.what());
  }
}

void OutputWriter::write(FinishedRender& r) {
  const storage::Job& job = r.job;
  const auto folder = std::filesystem::path(job.output_path).parent_path();
  auto cannot_write = [&](const std::string& reason, std::error_code cause) {
    const auto kind = write_failure_kind(cause);
    record_failure(job, kind == storage::Failure::kPermanent ? reason + " (not retried: trying again cannot fix this)" : reason,
                   kind);
  };
  std::optional<storage::PendingPng> png;
  std::optional<assets::AlphaCheck> check;
  nlohmann::json qa;
  try {
    // The alpha check, once, from the pixels written: into the PNG's rgbaq chunk and the queue.
    check = assets::check_alpha(r.rgba.data(), r.width, r.height);
    qa = assets::alpha_check_json(*check);
    // The folder as resolved at submit, opened a component at a time, none a symbolic link and none
    // another user could change, so nobody can redirect the write (made with the user's umask, not the
    // data directory's).
    const int dfd = common::open_trusted_folder(folder, output_dir_mode());
    // An image is no more open than its folder: in one only its owner may enter (the data directory's
    // api-renders, 0700) others could not read it anyway, and the data directory's start-up check would
    // find it 0644 and tighten it, every start.
    mode_t mode = output_file_mode();
    struct stat folder_stat {};
    if (::fstat(dfd, &folder_stat) == 0) {
      if ((folder_stat.st_mode & S_IXGRP) == 0) mode &= ~mode_t{070};
      if ((folder_stat.st_mode & S_IXOTH) == 0) mode &= ~mode_t{007};
    }
    png.emplace(dfd, job.output_path, r.rgba.data(), r.width, r.height, png_texts_with_qa(r.metadata, qa, r.components), mode);
  } catch (const common::FolderError& e) {
    const bool refused = e.code() == std::errc::operation_not_permitted || e.code() == std::errc::too_many_symbolic_link_levels;
    cannot_write(job.output_path + (refused ? ": refusing its folder " : ": cannot make its folder ") + folder.string() + ": " + e.what(),
                 e.code());
    return;
  } catch (const storage::PngWriteError& e) {
    cannot_write(e.what(), e.code());
    return;
  } catch (const std::exception& e) {
    record_failure(job, e.what());
    return;
  }
  // Recorded done first (fenced by the lease), renamed into place only then: a worker that stalled past
  // its lease and lost the job never replaces the PNG of the worker that finished it. The note lets a
  // start after a crash between the two finish the rename (pending_outputs.h).
  const std::string metadata = metadata_json_with_qa(r.metadata, qa, r.components);
  // A failure reading the row's seeds costs the re-seed only (logged), never the finished PNG.
  const storage::Completion completion = job_completion(*store_, job, *check, metadata);
  std::optional<PendingOutputNote> note;
  try {
    note.emplace(pending_dir_, job.id, job.output_path, png->temp_name(), metadata);
    if (!store_->complete(job.id, job.worker_id, completion)) {
      spdlog::warn("job {}: lease lost; its PNG is not put at {} (its temporary is removed) nor the job recorded done: {}",
                   job.id, job.output_path, lost_lease(*store_, job));
      return;
    }
  } catch (const std::exception& e) {
    // Whether the store recorded it is unknown (a connection lost at the commit): the temporary and its
    // note stay for the next start to settle; this attempt fails with the reason.
    if (note) {
      note->keep();
      png->keep();
    }
    record_failure(job, std::string("recording the finished job failed: ") + e.what());
    return;
  }
  kill_if_test_completed(job.prompt);  // tests only: a stop between the commit and the rename
  try {
    png->commit();
  } catch (const storage::PngWriteError& e) {
    note->keep();  // recorded done: the next start tries the rename again
    png->keep();
    spdlog::error("job {} is recorded done but its PNG could not be put in place ({}); the next start of rgbaqd tries again",
                  job.id, e.what());
    return;
  }
  ++state_.counters.images_rendered;
  ++worker_.images_done;
  spdlog::info("job {} done: {} ({}; alpha check: {})", job.id, job.output_path, worker_.label(), completion.qa_flags);
  events_.publish("job_done", {{"job", job.id}, {"run", job.run_id}, {"path", job.output_path},
                               {"seconds", r.metadata.total_s}, {"qa", completion.qa_flags}});
  if (!completion.reseed_candidates.empty()) announce_reseed(*store_, state_, events_, job, completion.qa_flags);
  publish_if_run_finished(*store_, events_, job.run_id);
}

}  // namespace rgbaq::daemon
