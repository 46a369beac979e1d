#include "engine/cuda/block_streamer.h"

#include <cstring>
#include <stdexcept>

#include "engine/cuda/block_schedule.h"
#include "engine/cuda/cuda_check.h"

namespace rgbaq::engine::cuda {

BlockStreamer::BlockStreamer(DeviceArena& arena, const std::vector<std::vector<std::vector<uint8_t>>>& blocks,
                             cudaStream_t compute)
    : device_(arena.device()), compute_(compute), blocks_(static_cast<int>(blocks.size())) {
  if (blocks.empty()) throw std::logic_error("BlockStreamer: no blocks");
  for (const auto& part : blocks[0]) {
    offsets_.push_back(block_bytes_);
    block_bytes_ += (part.size() + 255) / 256 * 256;
  }
  pinned_ = PinnedBuffer(block_bytes_ * blocks.size(), device_, "DiT blocks staged for streaming");
  auto* host = static_cast<uint8_t*>(pinned_.get());
  for (size_t i = 0; i < blocks.size(); ++i) {
    if (blocks[i].size() != offsets_.size()) throw std::logic_error("BlockStreamer: blocks differ in their parts");
    for (size_t j = 0; j < blocks[i].size(); ++j) {  // formats are per tensor: a mixed checkpoint must not overrun a part
      if (blocks[i][j].size() != blocks[0][j].size()) throw std::logic_error("BlockStreamer: blocks differ in their parts' sizes");
    }
    for (size_t j = 0; j < blocks[i].size(); ++j) {
      std::memcpy(host + i * block_bytes_ + offsets_[j], blocks[i][j].data(), blocks[i][j].size());
    }
  }
  for (int s = 0; s < 2; ++s) {
    slots_[s] = arena.allocate(block_bytes_, "a streamed DiT block's slot");
    for (size_t off : offsets_) parts_[s].push_back(static_cast<const uint8_t*>(slots_[s].get()) + off);
    RGBAQ_CUDA_CHECK(cudaEventCreateWithFlags(&copied_[s], cudaEventDisableTiming), device_);
    RGBAQ_CUDA_CHECK(cudaEventCreateWithFlags(&used_[s], cudaEventDisableTiming), device_);
  }
  RGBAQ_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking), device_);
}

BlockStreamer::~BlockStreamer() {
  if (copy_) {
    cudaStreamSynchronize(copy_);
    cudaStreamDestroy(copy_);
  }
  for (int s = 0; s < 2; ++s) {
    if (copied_[s]) cudaEventDestroy(copied_[s]);
    if (used_[s]) cudaEventDestroy(used_[s]);
  }
}

void BlockStreamer::issue_copy(int i) {
  const int slot = i % 2;
  // The slot's previous block must be done before it is overwritten (an unrecorded event: no wait).
  RGBAQ_CUDA_CHECK(cudaStreamWaitEvent(copy_, used_[slot], 0), device_);
  RGBAQ_CUDA_CHECK(cudaMemcpyAsync(slots_[slot].get(), static_cast<const uint8_t*>(pinned_.get()) + size_t(i) * block_bytes_,
                                   block_bytes_, cudaMemcpyHostToDevice, copy_),
                   device_);
  RGBAQ_CUDA_CHECK(cudaEventRecord(copied_[slot], copy_), device_);
  loaded_[slot] = i;
}

const std::vector<const void*>& BlockStreamer::begin_block(int i) {
  const int slot = i % 2;
  if (loaded_[slot] != i) issue_copy(i);
  RGBAQ_CUDA_CHECK(cudaStreamWaitEvent(compute_, copied_[slot], 0), device_);
  // Copy ahead: the next block (block 0 after the last, when the slots alternate across the wrap).
  const int next = copy_ahead_block(i, blocks_);
  if (next >= 0 && loaded_[next % 2] != next) issue_copy(next);
  return parts_[slot];
}

void BlockStreamer::end_block(int i) { RGBAQ_CUDA_CHECK(cudaEventRecord(used_[i % 2], compute_), device_); }

}  // namespace rgbaq::engine::cuda
