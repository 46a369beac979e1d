#include "engine/cuda/device_memory.h"

#include <utility>

#include "engine/cuda/cuda_check.h"

namespace rgbaq::engine::cuda {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(arena_, o.arena_);
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_) {
    cudaFree(ptr_);  // no throw from a destructor path; a failed free leaves nothing to recover
    if (arena_) arena_->in_use_ -= bytes_;
  }
  ptr_ = nullptr;
  bytes_ = 0;
  arena_ = nullptr;
}

DeviceArena::DeviceArena(int device, size_t budget_bytes) : device_(device), budget_(budget_bytes) {
  if (budget_ == 0) {
    size_t free_bytes = 0, total = 0;
    RGBAQ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total), device);
    budget_ = free_bytes;
  }
}

DeviceBuffer DeviceArena::allocate(size_t bytes, const std::string& what) {
  DeviceBuffer b;
  if (bytes == 0) return b;
  if (in_use_ + bytes > budget_) {
    throw DeviceFault(DeviceFaultKind::kOutOfMemory, device_label(device_) + ": " + what + " needs " + gib_string(bytes) +
                                                         " more, " + gib_string(in_use_) + " of the " + gib_string(budget_) +
                                                         " budget (--gpu-memory) are in use");
  }
  check(cudaMalloc(&b.ptr_, bytes), device_, ("cudaMalloc of " + gib_string(bytes) + " (" + what + ")").c_str());
  b.bytes_ = bytes;
  b.arena_ = this;
  in_use_ += bytes;
  if (in_use_ > peak_) peak_ = in_use_;
  return b;
}

void DeviceArena::ensure(DeviceBuffer& buffer, size_t bytes, const std::string& what) {
  if (buffer.bytes() >= bytes) return;
  buffer.reset();
  buffer = allocate(bytes, what);
}

PinnedBuffer::PinnedBuffer(size_t bytes, int device, const std::string& what) : bytes_(bytes) {
  check(cudaHostAlloc(&ptr_, bytes, cudaHostAllocDefault), device,
        ("cudaHostAlloc of " + gib_string(bytes) + " pinned host memory (" + what + ")").c_str());
}

PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
  }
  return *this;
}

}  // namespace rgbaq::engine::cuda
