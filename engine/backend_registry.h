#pragma once
// The backends a build knows, behind one name each: "cpu" always, "cuda" when the build found the CUDA
// toolkit. "auto" resolves to cuda when a CUDA device is visible, else cpu.
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/engine_options.h"
#include "engine/graphs.h"
#include "engine/model/model_directory.h"

namespace rgbaq::engine {

// A backend that exists but cannot run here (no device, not built): callers turn it into a usage
// error (rgbaqd exits 2), not a crash.
class BackendUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a device (or the machine, for the cpu) has in memory, in bytes.
struct DeviceMemory {
  uint64_t free = 0, total = 0;
};

struct BackendEntry {
  std::string name;
  // Whether the backend can run on this machine; when not, `why` says what is missing.
  std::function<bool(const EngineOptions& options, std::string* why)> usable;
  std::function<std::unique_ptr<Graphs>(const ModelDirectory& model, const EngineOptions& options)> open;
  // The devices this backend can use here (cuda: the visible CUDA devices; 0 with `why` when none);
  // empty for a backend that has no devices to choose (cpu).
  std::function<int(std::string* why)> device_count;
  // Device `device`'s memory as it is now (cuda: cudaMemGetInfo; cpu: the machine's available and
  // total memory). Throws a DeviceFault when the device cannot be asked.
  std::function<DeviceMemory(int device)> device_memory;
};

// Every backend this build has (cpu first).
const std::vector<BackendEntry>& backends();

// The entry for `name` ("auto" resolved as above). Throws std::invalid_argument for an unknown name,
// BackendUnavailable for a known one that cannot run here (naming the reason).
const BackendEntry& resolve_backend(const EngineOptions& options);

// The names of the backends usable here, for messages and tests.
std::vector<std::string> usable_backend_names(const EngineOptions& options = {});

}  // namespace rgbaq::engine
