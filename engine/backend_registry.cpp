#include "engine/backend_registry.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "engine/cpu/cpu_graphs.h"
#if RGBAQ_HAVE_CUDA
#include "engine/cuda/cuda_backend.h"
#endif

namespace rgbaq::engine {
namespace {

// The machine's memory: Linux's MemAvailable (what can be had without swapping: free memory plus the
// page cache that can be dropped) and MemTotal; elsewhere the physical pages.
DeviceMemory machine_memory() {
  DeviceMemory m;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string key;
    uint64_t kib = 0;
    fields >> key >> kib;
    if (key == "MemAvailable:") m.free = kib << 10;
    if (key == "MemTotal:") m.total = kib << 10;
  }
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (m.total == 0) m.total = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * page;
  if (m.free == 0) m.free = m.total;
  return m;
}

std::vector<BackendEntry> make_backends() {
  std::vector<BackendEntry> all;
  all.push_back({"cpu", [](const EngineOptions&, std::string*) { return true; },
                 [](const ModelDirectory& model, const EngineOptions& o) -> std::unique_ptr<Graphs> {
                   return std::make_unique<cpu::CpuGraphs>(model, o.threads);
                 },
                 {},
                 [](int) { return machine_memory(); }});
#if RGBAQ_HAVE_CUDA
  all.push_back(cuda::cuda_backend_entry());
#endif
  return all;
}

std::string names_of(const std::vector<BackendEntry>& all) {
  std::string s;
  for (const auto& b : all) s += (s.empty() ? "" : ", ") + b.name;
  return s;
}

}  // namespace

const std::vector<BackendEntry>& backends() {
  static const std::vector<BackendEntry> all = make_backends();
  return all;
}

namespace {

const BackendEntry& resolve_by_name(const EngineOptions& options) {
  const auto& all = backends();
  if (options.backend == "auto") {
    for (const auto& b : all) {
      std::string why;
      if (b.name == "cuda" && b.usable(options, &why)) return b;
    }
    return all.front();  // cpu
  }
  for (const auto& b : all) {
    if (b.name != options.backend) continue;
    std::string why;
    if (!b.usable(options, &why)) throw BackendUnavailable("engine \"" + b.name + "\" cannot run here: " + why);
    return b;
  }
  if (options.backend == "cuda") {
    throw BackendUnavailable("engine \"cuda\" is not in this build: CMake did not find the CUDA toolkit "
                             "(configure with -DRGBAQ_CUDA=ON to require it); this build has: " + names_of(all));
  }
  throw std::invalid_argument("engine \"" + options.backend + "\" is not one of auto, " + names_of(all));
}

}  // namespace

const BackendEntry& resolve_backend(const EngineOptions& options) {
  const BackendEntry& b = resolve_by_name(options);
  if (options.random_weights && b.name != "cuda") {
    throw std::invalid_argument("random weights are the cuda engine's (speed measurements on a hollow model); engine \"" +
                                b.name + "\" reads the model's own");
  }
  if (options.precision == Precision::kFp8 && b.name != "cuda") {
    throw std::invalid_argument("precision fp8 is the cuda engine's (FP8 tensor cores, sm_89 and later); engine \"" +
                                b.name + "\" computes in fp32");
  }
  if (options.gpu_int8 == GpuInt8::kW8A8 && b.name != "cuda") {
    throw std::invalid_argument("--gpu-int8 w8a8 is the cuda engine's (int8 GEMMs on the device); engine \"" + b.name +
                                "\" runs a ConvRot file's Linears as W8A8 always");
  }
  return b;
}

std::vector<std::string> usable_backend_names(const EngineOptions& options) {
  std::vector<std::string> names;
  for (const auto& b : backends()) {
    std::string why;
    if (b.usable(options, &why)) names.push_back(b.name);
  }
  return names;
}

}  // namespace rgbaq::engine
