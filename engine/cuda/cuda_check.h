#pragma once
// CUDA runtime and cuBLASLt errors as exceptions that name the device, the call and what it needed:
// "CUDA device 0 (NVIDIA H200): cudaMalloc of 2.0 GiB (DiT workspace) failed: out of memory (1.2 GiB free)".
// Every call into the runtime goes through these, so a kernel failure fails the job with a message, not
// a crash. A failure of the device rather than of the call (out of memory, a sticky error that poisons
// the context, a device gone) is an engine::DeviceFault of that kind, so the daemon gives the job back
// and reopens or retires the session; anything else is a CudaError. (None of this has run on a GPU
// yet: it is compiled in CI, and tested only for its probe path on machines without a device.)
#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/device_fault.h"

namespace rgbaq::engine::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "CUDA device 0 (NVIDIA H200)"; "CUDA device 0" when even its name cannot be read.
std::string device_label(int device);
std::string gib_string(size_t bytes);  // "2.00 GiB"

// The kind of device fault a status is, or nullopt for an error of the call itself (a bad argument).
std::optional<DeviceFaultKind> device_fault_kind(cudaError_t status);

// Throws "<device label>: <what> failed: <cuda message>" unless status is cudaSuccess: a DeviceFault
// for a status device_fault_kind() names, else a CudaError.
void check(cudaError_t status, int device, const char* what);
// The same for a cuBLASLt status (an int, so this header does not pull in cublasLt.h).
void check_cublas(int status, int device, const char* what);

// The number of CUDA devices this process can use, or 0 with `why` saying why not (no driver, a driver
// older than the runtime, no device, CUDA_VISIBLE_DEVICES empty).
int visible_devices(std::string* why);

}  // namespace rgbaq::engine::cuda

#define RGBAQ_CUDA_CHECK(call, device) ::rgbaq::engine::cuda::check((call), (device), #call)
