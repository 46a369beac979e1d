#pragma once
// Device and pinned host memory owned by RAII handles, and the session's allocator: every device
// allocation goes through DeviceArena, which counts the bytes against --gpu-memory and names what an
// allocation was for when it fails. Allocations happen at session open (weights) and when an image
// size is first seen (workspaces), never in the step loop.
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace rgbaq::engine::cuda {

class DeviceArena;

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr_); }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  friend class DeviceArena;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  DeviceArena* arena_ = nullptr;
};

class DeviceArena {
 public:
  // budget_bytes 0: what the device has free at open.
  DeviceArena(int device, size_t budget_bytes);
  // Throws a DeviceFault (out of memory) naming `what`, its size, the budget and the bytes in use when
  // it does not fit.
  DeviceBuffer allocate(size_t bytes, const std::string& what);
  // A buffer at least `bytes` large: `buffer` kept when it is, else replaced (for per-size workspaces).
  void ensure(DeviceBuffer& buffer, size_t bytes, const std::string& what);
  size_t in_use() const { return in_use_; }
  size_t peak() const { return peak_; }
  size_t budget() const { return budget_; }
  int device() const { return device_; }

 private:
  friend class DeviceBuffer;
  int device_;
  size_t budget_, in_use_ = 0, peak_ = 0;
};

// Page-locked host memory (cudaHostAlloc), for copies that overlap compute.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, int device, const std::string& what);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace rgbaq::engine::cuda
