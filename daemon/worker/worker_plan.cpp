#include "daemon/worker/worker_plan.h"

#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include "common/arguments.h"
#include "engine/lora_cache.h"

namespace rgbaq::daemon {

std::vector<WorkerPlan> plan_workers(const DaemonConfig& config, const std::string& backend, int visible_devices,
                                     int hardware_threads) {
  auto listed = parse_device_list(config.devices);
  if (!listed && config.device_set) listed = std::vector<int>{config.device};  // --device N: that one
  std::vector<int> devices;  // cuda ordinals; empty for cpu workers
  if (backend == "cuda") {
    if (config.workers != 1) {
      throw common::UsageError("--workers is for the cpu engine; with cuda, --devices names one worker per device "
                               "(a device listed twice runs two sessions on it)");
    }
    if (listed) {
      for (const int d : *listed) {
        if (d >= visible_devices) {
          throw common::UsageError((config.devices.empty() ? "--device" : "--devices " + config.devices) + ": device " + std::to_string(d) + " is not visible (" +
                                   std::to_string(visible_devices) + " CUDA device" + (visible_devices == 1 ? "" : "s") +
                                   ": 0.." + std::to_string(visible_devices - 1) + ")");
        }
      }
      devices = *listed;
    } else {
      for (int d = 0; d < std::min(visible_devices, kMostWorkers); ++d) devices.push_back(d);
    }
    if (devices.empty()) throw common::UsageError("the cuda engine sees no CUDA device to render on");
  } else if (!config.devices.empty()) {  // (--device, a knob of cuda's, the cpu ignores as it always has)
    throw common::UsageError("--devices " + config.devices + " is for the cuda engine, and this daemon runs the " + backend +
                             " engine" + (config.engine == "auto" ? " (--engine auto found no CUDA device)" : "") +
                             "; on the cpu, --workers N runs N workers");
  }
  const int count = devices.empty() ? config.workers : static_cast<int>(devices.size());
  const engine::EngineOptions base = config.engine_options();
  std::map<std::string, std::shared_ptr<engine::LoraCache>> lora_caches;  // one per device
  std::vector<WorkerPlan> plans;
  for (int i = 0; i < count; ++i) {
    WorkerPlan p;
    p.index = i;
    p.options = base;
    p.options.backend = backend;
    if (devices.empty()) {
      p.device = "cpu";
      // All the hardware threads for each of several workers would have them fight over the cores.
      if (config.threads == 0 && count > 1) p.options.threads = std::max(1, hardware_threads / count);
    } else {
      p.options.device = devices[static_cast<size_t>(i)];
      p.device = "cuda:" + std::to_string(p.options.device);
    }
    auto& cache = lora_caches[p.device];
    if (!cache) cache = std::make_shared<engine::LoraCache>(config.lora_cache_mb << 20);
    p.options.lora_cache = cache;
    plans.push_back(std::move(p));
  }
  return plans;
}

std::vector<WorkerPlan> plan_workers(const DaemonConfig& config) {
  engine::EngineOptions options = config.engine_options();
  options.device = 0;  // `auto` takes cuda when any device is visible; which ones, the plan checks
  const engine::BackendEntry& backend = engine::resolve_backend(options);
  int visible = 0;
  if (backend.device_count) {
    std::string why;
    visible = backend.device_count(&why);
  }
  return plan_workers(config, backend.name, visible, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string gib_text(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

void share_device_memory(std::vector<WorkerPlan>& plans, uint64_t cpu_session_bytes,
                         const std::function<engine::DeviceMemory(const WorkerPlan&)>& memory_of) {
  std::map<std::string, std::vector<WorkerPlan*>> by_device;
  for (auto& p : plans) by_device[p.device].push_back(&p);
  constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
  for (auto& [device, sessions] : by_device) {
    const engine::DeviceMemory memory = memory_of(*sessions.front());
    const uint64_t k = sessions.size();
    const std::string workers = std::to_string(k) + (k == 1 ? " worker" : " workers");
    if (sessions.front()->options.backend == "cpu") {
      const uint64_t need = k * cpu_session_bytes;
      if (need > memory.free) {
        throw MemoryDoesNotFit("cpu: " + workers + " need " + gib_text(need) + " (" + gib_text(cpu_session_bytes) +
                               " each: weights copied and work buffers at 1024x1024) and the machine has " +
                               gib_text(memory.free) + " available of " + gib_text(memory.total) + "; run fewer --workers");
      }
      continue;
    }
    const double asked_gib = sessions.front()->options.gpu_memory_gib;
    if (asked_gib > 0) {
      const auto asked = static_cast<uint64_t>(asked_gib * kGib);
      if (k * asked > memory.free) {
        throw MemoryDoesNotFit(device + ": " + workers + " of --gpu-memory " + gib_text(asked) + " need " +
                               gib_text(k * asked) + " and the device has " + gib_text(memory.free) + " free of " +
                               gib_text(memory.total) + "; list it fewer times in --devices or lower --gpu-memory");
      }
    } else if (k > 1) {
      for (WorkerPlan* p : sessions) p->options.gpu_memory_gib = static_cast<double>(memory.free / k) / kGib;
    }
  }
}

}  // namespace rgbaq::daemon
