#pragma once
// DiT blocks that do not fit on the device, streamed from page-locked host memory: every block's
// linears packed once into one pinned buffer (each part from a multiple of 256 bytes), two device slots,
// and a copy stream that loads block i + 1 while block i computes (copy-ahead). Events order it: a
// copy into a slot waits for the compute that last read that slot; compute waits for its block's copy.
// Never run on a GPU yet.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "engine/cuda/device_memory.h"

namespace rgbaq::engine::cuda {

class BlockStreamer {
 public:
  // blocks[i][j]: the host bytes of part j of block i (every block the same part sizes).
  BlockStreamer(DeviceArena& arena, const std::vector<std::vector<std::vector<uint8_t>>>& blocks, cudaStream_t compute);
  ~BlockStreamer();
  BlockStreamer(const BlockStreamer&) = delete;
  BlockStreamer& operator=(const BlockStreamer&) = delete;

  // Block i's part addresses on the device, once compute may read them (issues the copy ahead of i + 1).
  const std::vector<const void*>& begin_block(int i);
  // Compute has been given all its work on block i's slot.
  void end_block(int i);
  size_t pinned_bytes() const { return pinned_.bytes(); }

 private:
  void issue_copy(int i);

  int device_;
  cudaStream_t compute_, copy_ = nullptr;
  std::vector<size_t> offsets_;  // of each part inside a block
  size_t block_bytes_ = 0;
  int blocks_ = 0;
  PinnedBuffer pinned_;
  DeviceBuffer slots_[2];
  int loaded_[2] = {-1, -1};
  std::vector<const void*> parts_[2];  // each slot's part addresses
  cudaEvent_t copied_[2] = {nullptr, nullptr}, used_[2] = {nullptr, nullptr};
};

}  // namespace rgbaq::engine::cuda
