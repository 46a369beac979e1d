#pragma once
// BlockStreamer's schedule, plain C++ so the host tests can walk it without a GPU: block i lives in
// slot i % 2; while block i computes, the next block to run is copied into the other slot.
namespace rgbaq::engine::cuda {

// The block to copy ahead while block i of `blocks` computes, or -1. After the last block the next
// pass starts at 0: it is copied ahead only when it lands in the other slot (an even count), since
// with an odd count block 0 shares the last block's slot.
inline int copy_ahead_block(int i, int blocks) {
  if (i + 1 < blocks) return i + 1;
  return blocks % 2 == 0 ? 0 : -1;
}

}  // namespace rgbaq::engine::cuda
