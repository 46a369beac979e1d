#include "engine/cuda/cuda_check.h"

#include <cublasLt.h>

#include <cstdio>

#include "engine/cuda/cublaslt_library.h"

namespace rgbaq::engine::cuda {

std::string device_label(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();  // clear it: the label must not leave an error behind
    return "CUDA device " + std::to_string(device);
  }
  return "CUDA device " + std::to_string(device) + " (" + prop.name + ")";
}

std::string gib_string(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

std::optional<DeviceFaultKind> device_fault_kind(cudaError_t status) {
  switch (status) {
    case cudaErrorMemoryAllocation:
      return DeviceFaultKind::kOutOfMemory;
    // Sticky: the context refuses all further work ("the process must be terminated and relaunched").
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorHardwareStackError:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
      return DeviceFaultKind::kContextPoisoned;
    // The device itself is not there (or not usable) any more.
    case cudaErrorNoDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorInitializationError:
    case cudaErrorDeviceUninitialized:
    case cudaErrorSystemNotReady:
    case cudaErrorUnknown:
      return DeviceFaultKind::kDeviceLost;
    default:
      return std::nullopt;
  }
}

void check(cudaError_t status, int device, const char* what) {
  if (status == cudaSuccess) return;
  std::string message = device_label(device) + ": " + what + " failed: " + cudaGetErrorString(status);
  if (status == cudaErrorMemoryAllocation) {
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) == cudaSuccess) {
      message += " (" + gib_string(free_bytes) + " free of " + gib_string(total) + ")";
    }
  }
  if (status == cudaErrorInsufficientDriver) message += " (the driver is older than CUDA runtime " + std::to_string(CUDART_VERSION) + " needs)";
  cudaGetLastError();
  if (const auto kind = device_fault_kind(status)) throw DeviceFault(*kind, message);
  throw CudaError(message);
}

void check_cublas(int status, int device, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message = device_label(device) + ": " + what + " failed: cuBLASLt status " + std::to_string(status);
  if (const CublasLt* lt = cublaslt_if_loaded()) message += std::string(" (") + lt->status_string(static_cast<cublasStatus_t>(status)) + ")";
  if (status == CUBLAS_STATUS_ALLOC_FAILED) throw DeviceFault(DeviceFaultKind::kOutOfMemory, message);
  // A kernel that failed to run: the runtime's sticky error behind it poisons the context.
  if (status == CUBLAS_STATUS_EXECUTION_FAILED) throw DeviceFault(DeviceFaultKind::kContextPoisoned, message);
  throw CudaError(message);
}

int visible_devices(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    int driver = 0;
    cudaDriverGetVersion(&driver);
    cudaGetLastError();
    if (why) {
      if (driver == 0) {
        *why = "no CUDA device visible (no NVIDIA driver is loaded)";
      } else if (status == cudaErrorInsufficientDriver) {
        *why = "no usable CUDA device: the driver supports CUDA " + std::to_string(driver / 1000) + "." +
               std::to_string(driver % 1000 / 10) + ", this build needs " + std::to_string(CUDART_VERSION / 1000) + "." +
               std::to_string(CUDART_VERSION % 1000 / 10) + " (update the driver)";
      } else {
        *why = std::string("no CUDA device visible (") + cudaGetErrorString(status) + ")";
      }
    }
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device visible (the driver reports none)";
  return count;
}

}  // namespace rgbaq::engine::cuda
