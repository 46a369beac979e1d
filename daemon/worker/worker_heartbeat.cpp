#include "daemon/worker/worker_heartbeat.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include <spdlog/spdlog.h>

#include "storage/open_queue_store.h"

namespace rgbaq::daemon {
namespace {

std::string boot_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");  // Linux; elsewhere the pid check alone decides
  std::string id;
  std::getline(f, id);
  return id;
}

bool process_alive(int64_t pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

storage::WorkerInfo this_worker(const DaemonConfig& config, const std::string& engine, const std::string& device) {
  storage::WorkerInfo w;
  w.host = config.host_name;
  if (w.host.empty()) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    w.host = name;
  }
  w.boot_id = boot_id();
  w.pid = ::getpid();
  w.engine = engine;
  w.device = device;
  return w;
}

int64_t expire_dead_local_workers(storage::QueueStore& store, const storage::WorkerInfo& me) {
  int64_t jobs = 0;
  for (const auto& w : store.list_workers()) {
    if (w.info.host != me.host) continue;  // another host's workers: only their leases say they are dead
    const bool dead = w.info.boot_id != me.boot_id || w.info.pid == me.pid || !process_alive(w.info.pid);
    if (!dead) continue;
    const int64_t n = store.expire_worker(w.id);
    spdlog::info("worker {} (pid {}) on this host is gone; {} job(s) of it back to recovery", w.id, w.info.pid, n);
    jobs += n;
  }
  return jobs;
}

WorkerHeartbeat::WorkerHeartbeat(const DaemonConfig& config, storage::WorkerInfo info, WorkerState& worker,
                                 DaemonState& state)
    : config_(config),
      info_(std::move(info)),
      worker_(worker),
      state_(state),
      store_(storage::open_queue_store(config.queue_url(), config.store_options())),
      interval_(std::max<int64_t>(100, static_cast<int64_t>(config.lease_s * 1000 / 6))) {
  worker_id_ = store_->register_worker(info_);
  worker_.queue_id = worker_id_.load();
  spdlog::info("{}: registered as worker {} ({} pid {}), lease {} s", worker_.label(), worker_id_.load(), info_.host, info_.pid,
               config.lease_s);
  thread_ = std::thread([this] { loop(); });
}

void WorkerHeartbeat::give_back_leases() {
  std::lock_guard lock(store_mutex_);
  const int64_t ended = store_->expire_worker(worker_id_);
  const auto r = store_->recover();
  worker_id_ = store_->register_worker(info_);
  worker_.queue_id = worker_id_.load();
  spdlog::info("{}: {} lease(s) given back ({} job(s) back in the queue, {} failed); registered again as worker {}",
               worker_.label(), ended, r.requeued, r.failed, worker_id_.load());
  state_.wake_worker();  // the others may take the job at once
}

WorkerHeartbeat::~WorkerHeartbeat() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  try {
    std::lock_guard lock(store_mutex_);
    store_->unregister_worker(worker_id_);
  } catch (const std::exception& e) {
    spdlog::warn("unregistering worker {}: {}", worker_id_.load(), e.what());
  }
}

void WorkerHeartbeat::beat_soon() {
  {
    std::lock_guard lock(mutex_);
    soon_ = true;
  }
  cv_.notify_all();
}

void WorkerHeartbeat::beat() {
  std::lock_guard lock(store_mutex_);
  const auto held = worker_.held_jobs();
  if (!store_->heartbeat(worker_id_, held)) {
    // Silent for a whole lease (a stalled host, a long network cut): its leases may be others' now.
    worker_id_ = store_->register_worker(info_);
    worker_.queue_id = worker_id_.load();
    spdlog::warn("{}: the queue had forgotten this worker; registered again as worker {}", worker_.label(), worker_id_.load());
    return;
  }
  const auto p = worker_.progress();
  const storage::JobProgress progress{p.job, p.step, p.steps, p.steps > 0 && p.step >= p.steps};
  if (progress != recorded_ && std::find(held.begin(), held.end(), p.job) != held.end()) {
    store_->record_progress(worker_id_, {progress});
    recorded_ = progress;
  }
}

void WorkerHeartbeat::loop() {
  auto last_beat = std::chrono::steady_clock::now();
  auto last_recover = std::chrono::steady_clock::time_point{};
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      cv_.wait_until(lock, last_beat + interval_, [&] {
        return done_ || (soon_ && std::chrono::steady_clock::now() - last_beat >= std::chrono::seconds(1));
      });
      if (done_) return;
      soon_ = false;
    }
    try {
      beat();
      last_beat = std::chrono::steady_clock::now();
      // Other workers' expired leases, once an interval: a host that died mid-job loses nothing.
      if (last_beat - last_recover >= interval_) {
        last_recover = last_beat;
        std::lock_guard lock(store_mutex_);
        const auto r = store_->recover();
        if (r.requeued || r.failed) {
          spdlog::info("recovered expired leases: {} job(s) back in the queue, {} failed", r.requeued, r.failed);
          state_.wake_worker();
        }
      }
    } catch (const std::exception& e) {
      last_beat = std::chrono::steady_clock::now();  // tried: the next try after an interval
      spdlog::error("heartbeat to the queue {} failed: {}", store_->location(), e.what());
    }
  }
}

}  // namespace rgbaq::daemon
