#pragma once
// The owner's hook (--on-run-done) run once for each run end the queue owes one (issue 41). A run's end
// is recorded, owing its hook, in the transaction that ends the run; this thread claims owed hooks
// (one daemon gets each, also on a shared PostgreSQL queue), having written the run's manifest and
// awaited its last PNGs before the claim, runs the command (daemon/hooks/hook_process.h) at once and
// records how it ended on the run end. Off the render path: a hook that hangs costs its time limit on
// this thread only. A hook claimed when the daemon dies is never run again (the next start's recovery
// records it "lost"): exactly once, but for a daemon that dies in the instant between the claim's
// commit and the fork, which leaves it not run (at most once).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/base/daemon_config.h"
#include "daemon/base/event_hub.h"
#include "daemon/hooks/run_end_watch.h"
#include "storage/queue_store.h"

namespace rgbaq::daemon::hooks {

// What describes the run to its hook, as environment variables {name, value}: RGBAQ_RUN, RGBAQ_RUN_NAME,
// RGBAQ_OUT, RGBAQ_DONE, RGBAQ_FAILED, RGBAQ_CANCELED, RGBAQ_MANIFEST, and RGBAQ_SOCKET (this daemon's
// socket, for a hook that calls rgbaq). `run` is nullopt for a run forgotten since it ended (its name
// and folder then empty).
std::vector<std::pair<std::string, std::string>> run_hook_variables(const storage::RunEnd& end, const std::optional<storage::Run>& run,
                                                                    const std::string& manifest, const DaemonConfig& config);

class RunHookRunner {
 public:
  // Opens its own connection to the queue (throws what the store throws) and starts its thread
  // (daemon/hooks/run_end_watch.h: at once, at each run end this daemon sees, every two seconds).
  // `worker_id` gives a registration of this daemon in the queue that lives as long as it does (0: none
  // yet, nothing is claimed); a hook claimed under it that outlives it is recorded "lost".
  RunHookRunner(const DaemonConfig& config, EventHub& events, std::function<int64_t()> worker_id);
  // Stops the thread; a hook still running is left to run alone (the next start records it "lost").
  ~RunHookRunner() = default;
  RunHookRunner(const RunHookRunner&) = delete;
  RunHookRunner& operator=(const RunHookRunner&) = delete;

 private:
  // What a hook needs before it starts: its run (nullopt: forgotten) and manifest, or why it cannot run.
  struct PreparedHook {
    int64_t run_id = 0;
    std::optional<storage::Run> run;
    std::filesystem::path manifest;
    std::string error;  // "" when it can run
  };

  void run_owed_hooks();
  PreparedHook prepare_hook(const storage::RunEnd& end, std::optional<storage::Run> run);
  void run_hook(const storage::RunEnd& end, const PreparedHook& prepared);

  const DaemonConfig& config_;
  std::function<int64_t()> worker_id_;
  std::unique_ptr<storage::QueueStore> store_;
  RunEndWatch watch_;  // last: its thread uses the members above, and is joined before they go
};

}  // namespace rgbaq::daemon::hooks
