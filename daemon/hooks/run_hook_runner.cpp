#include "daemon/hooks/run_hook_runner.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "daemon/hooks/hook_process.h"
#include "daemon/hooks/run_manifest.h"
#include "storage/open_queue_store.h"

namespace rgbaq::daemon::hooks {
namespace {

constexpr auto kPoll = std::chrono::seconds(2);
constexpr auto kOutputWait = std::chrono::seconds(5);  // for the run's last PNGs to be renamed into place
constexpr size_t kMostLoggedBytes = 1u << 20;          // of one hook's output; the rest stays in its file

std::filesystem::path hook_output_dir(const DaemonConfig& config) { return config.data_dir / "logs" / "hooks"; }

// The oldest end owed a hook as the runs' latest ends tell, read without claiming it. An owed end that
// is not its run's latest, or a forgotten run's, is found by the claim alone.
std::optional<std::pair<storage::RunEnd, storage::Run>> peek_owed_hook(storage::QueueStore& store) {
  std::optional<std::pair<storage::RunEnd, storage::Run>> oldest;
  for (auto& run : store.list_runs()) {
    if (!run.last_end || run.last_end->hook_state != "owed") continue;
    if (!oldest || run.last_end->id < oldest->first.id) oldest.emplace(*run.last_end, std::move(run));
  }
  return oldest;
}

// Fault injection for tests only: RGBAQ_TEST_SIGKILL_BEFORE_HOOK_CLAIM SIGKILLs the daemon where an owed
// hook's manifest is written and its PNGs awaited, and the hook is not claimed yet.
void kill_if_test_hook_prepared() {
  if (std::getenv("RGBAQ_TEST_SIGKILL_BEFORE_HOOK_CLAIM")) ::kill(::getpid(), SIGKILL);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> run_hook_variables(const storage::RunEnd& end, const std::optional<storage::Run>& run,
                                                                    const std::string& manifest, const DaemonConfig& config) {
  return {{"RGBAQ_RUN", std::to_string(end.run_id)},
          {"RGBAQ_RUN_NAME", run ? run->name : ""},
          {"RGBAQ_OUT", run ? run->out_dir : ""},
          {"RGBAQ_DONE", std::to_string(end.done)},
          {"RGBAQ_FAILED", std::to_string(end.failed)},
          {"RGBAQ_CANCELED", std::to_string(end.canceled)},
          {"RGBAQ_MANIFEST", manifest},
          {"RGBAQ_SOCKET", config.socket_path.string()}};
}

RunHookRunner::RunHookRunner(const DaemonConfig& config, EventHub& events, std::function<int64_t()> worker_id)
    : config_(config),
      worker_id_(std::move(worker_id)),
      store_(storage::open_queue_store(config.queue_url(), config.store_options())),
      watch_("rgbaqd-hooks", events, kPoll, [this] { run_owed_hooks(); }) {
  watch_.start();
}

void RunHookRunner::run_owed_hooks() {
  while (!watch_.stopping()) {
    const int64_t worker = worker_id_();
    if (worker == 0) return;
    // Prepared before the claim: a daemon killed while it writes the manifest or awaits the PNGs leaves
    // the hook owed, run after its restart. The manifest is replaced by rename: writing it twice is harmless.
    std::optional<PreparedHook> prepared;
    std::optional<storage::RunEnd> end;
    try {
      if (const auto owed = peek_owed_hook(*store_)) {
        prepared = prepare_hook(owed->first, owed->second);
        kill_if_test_hook_prepared();
      }
      end = store_->claim_run_hook(worker, ::getpid());
    } catch (const std::exception& e) {
      spdlog::warn("run hooks: claiming the next owed hook failed (tried again in {} s): {}", kPoll.count(), e.what());
      return;
    }
    if (!end) return;
    // Another end than the one peeked at (another daemon's claim came first, an end the peek cannot
    // see): prepared after its claim, the longer window of an at-most-once hook.
    if (!prepared || prepared->run_id != end->run_id) prepared = prepare_hook(*end, std::nullopt);
    run_hook(*end, *prepared);
  }
}

RunHookRunner::PreparedHook RunHookRunner::prepare_hook(const storage::RunEnd& end, std::optional<storage::Run> run) {
  PreparedHook p{.run_id = end.run_id, .run = std::move(run)};
  try {
    if (!p.run) p.run = store_->run(end.run_id);
    // A PNG is renamed into place just after its job is recorded done: the run's last may still be on its way.
    const RunManifest manifest = write_run_manifest(*store_, end.run_id, config_.manifests_dir(), end.ended_at - 60);
    p.manifest = manifest.path;
    const auto missing = await_outputs(manifest.missing_outputs, kOutputWait);
    if (!missing.empty()) {
      spdlog::warn("hook of run {}: {} done job(s) have no output file (the first: {}); the hook runs all the same", end.run_id,
                   missing.size(), missing.front().string());
    }
    std::filesystem::create_directories(hook_output_dir(config_));
  } catch (const std::exception& e) {
    p.error = e.what();
  }
  return p;
}

void RunHookRunner::run_hook(const storage::RunEnd& end, const PreparedHook& prepared) {
  const std::string who = "hook of run " + std::to_string(end.run_id);
  const auto output = hook_output_dir(config_) / ("run-" + std::to_string(end.run_id) + "-end-" + std::to_string(end.id) + ".log");
  std::string outcome;
  bool keep_output = false;
  try {
    if (!prepared.error.empty()) throw std::runtime_error(prepared.error);
    HookProcess process(config_.on_run_done, hook_environment(run_hook_variables(end, prepared.run, prepared.manifest.string(), config_)),
                        output);
    spdlog::info("run {} ended ({} done, {} failed, {} canceled): its hook runs as pid {} (limit {} s)", end.run_id, end.done,
                 end.failed, end.canceled, process.pid(), config_.hook_timeout_s);
    size_t logged = 0;
    const auto on_line = [&](const std::string& line) {
      if (logged >= kMostLoggedBytes) return;
      logged += line.size() + 1;
      if (logged < kMostLoggedBytes) {
        spdlog::info("{} | {}", who, line);
      } else {
        keep_output = true;
        spdlog::warn("{}: more than {} KiB of output; the rest is in {}", who, kMostLoggedBytes >> 10, output.string());
      }
    };
    const auto ended = process.wait(std::chrono::seconds(config_.hook_timeout_s), on_line, [this] { return watch_.stopping(); });
    if (!ended) {
      spdlog::warn("{} (pid {}) goes on alone: the daemon is stopping; the next start records it lost, never to run again "
                   "(its output: {})", who, process.pid(), output.string());
      return;
    }
    outcome = *ended;
  } catch (const std::exception& e) {
    outcome = std::string("not run: ") + e.what();
  }
  if (outcome == "exit 0") {
    spdlog::info("{}: {}", who, outcome);
  } else {
    spdlog::warn("{}: {}", who, outcome);
  }
  if (!keep_output) {
    std::error_code ec;
    std::filesystem::remove(output, ec);
  }
  // The outcome is known: recorded however long the queue takes to answer again.
  while (!watch_.stopping()) {
    try {
      if (!store_->finish_run_hook(end.id, outcome)) spdlog::warn("{}: its end {} no longer awaits an outcome", who, end.id);
      return;
    } catch (const std::exception& e) {
      spdlog::warn("{}: recording its outcome failed (tried again in {} s): {}", who, kPoll.count(), e.what());
      watch_.pause(kPoll);
    }
  }
}

}  // namespace rgbaq::daemon::hooks
