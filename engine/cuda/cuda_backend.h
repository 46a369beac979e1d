#pragma once
// The registry's entry for the CUDA backend (backend_registry.cpp adds it when the build has CUDA).
#include "engine/backend_registry.h"

namespace rgbaq::engine::cuda {

BackendEntry cuda_backend_entry();

}  // namespace rgbaq::engine::cuda
