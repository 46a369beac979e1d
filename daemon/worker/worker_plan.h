#pragma once
// Which render workers a daemon starts: one per --devices entry on the cuda engine (every visible device
// by default, a device listed twice running two sessions), or --workers on the cpu engine; each with its
// own engine options (its device, its threads, its share of the device's memory, the LoRA cache of its
// device). And the check at start that their sessions fit their devices' memory.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "daemon/base/daemon_config.h"
#include "engine/backend_registry.h"
#include "engine/engine_options.h"

namespace rgbaq::daemon {

struct WorkerPlan {
  int index = 0;
  std::string device;             // "cpu", "cuda:0"
  engine::EngineOptions options;  // the backend resolved, its device and threads
};

// From the configuration, the backend --engine resolved to ("cpu", "cuda") and, for cuda, the devices
// visible; `hardware_threads` is shared out between cpu workers when --threads is 0. Workers on one
// device share one LoRA cache. Throws common::UsageError naming the flag for what cannot be:
// --workers with cuda, --devices with cpu, a device that is not visible.
std::vector<WorkerPlan> plan_workers(const DaemonConfig& config, const std::string& backend, int visible_devices,
                                     int hardware_threads);

// The same for this machine: --engine resolved by the registry (BackendUnavailable passes through; a
// --devices list makes `auto` look for CUDA devices), the devices and threads it has.
std::vector<WorkerPlan> plan_workers(const DaemonConfig& config);

// The workers' sessions do not fit their device: rgbaqd refuses to start (exit 2) with this message.
class MemoryDoesNotFit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Shares each device's memory out between its workers and checks that they fit, naming the device,
// the sessions and the numbers when not (MemoryDoesNotFit).
//   cpu: each session's own bytes (`cpu_session_bytes`: the weights it copies and its largest work
//   buffers; the mapped weight files are pages every session shares) times the workers must fit the
//   machine's available memory.
//   cuda: a device's sessions take --gpu-memory each, which together must fit its free memory, or an
//   equal share of it (set in their options); whether a session's weights and largest workspace fit
//   its share is known once it opens (engine::Graphs::reserve).
// `memory_of(plan)` is the plan's device's memory now.
void share_device_memory(std::vector<WorkerPlan>& plans, uint64_t cpu_session_bytes,
                         const std::function<engine::DeviceMemory(const WorkerPlan&)>& memory_of);

// "1.50 GiB".
std::string gib_text(uint64_t bytes);

}  // namespace rgbaq::daemon
