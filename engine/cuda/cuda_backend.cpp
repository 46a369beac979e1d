#include "engine/cuda/cuda_backend.h"

#include "engine/cuda/cuda_check.h"
#include "engine/cuda/cuda_graphs.h"

namespace rgbaq::engine::cuda {

BackendEntry cuda_backend_entry() {
  return {"cuda",
          [](const EngineOptions& o, std::string* why) {
            const int count = visible_devices(why);
            if (count == 0) return false;
            if (o.device >= count) {
              if (why) *why = "device " + std::to_string(o.device) + " asked for, " + std::to_string(count) + " visible";
              return false;
            }
            return true;
          },
          [](const ModelDirectory& model, const EngineOptions& o) -> std::unique_ptr<Graphs> {
            return std::make_unique<CudaGraphs>(model, o);
          },
          [](std::string* why) { return visible_devices(why); },
          [](int device) {
            RGBAQ_CUDA_CHECK(cudaSetDevice(device), device);
            size_t free_bytes = 0, total = 0;
            RGBAQ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total), device);
            return DeviceMemory{free_bytes, total};
          }};
}

}  // namespace rgbaq::engine::cuda
