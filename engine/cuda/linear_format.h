#pragma once
// The forms a Linear weight [out, in] takes on the device, and their bytes, as plain arithmetic (the
// session's fit check, `rgbaq model check` and the host tests use the same numbers the uploads make):
// dense in the GEMM type; int8 with bf16 block scales as stored (engine/int8_blocks.h, --gpu-int8 keep);
// FP8 E4M3 with one fp32 scale per output row (engine/fp8_e4m3.h, --precision fp8).
#include <cstdint>

#include "engine/int8_blocks.h"

namespace rgbaq::engine::cuda {

enum class LinearFormat { kDense, kInt8Blocks, kFp8Rows };

// `e`: bytes an element of the GEMM type (dense only).
inline int64_t linear_weight_bytes(LinearFormat f, int64_t e, int64_t out, int64_t in) {
  switch (f) {
    case LinearFormat::kInt8Blocks: return out * in + out * int8_scale_columns(in) * 2;
    case LinearFormat::kFp8Rows: return out * in + out * 4;
    case LinearFormat::kDense: break;
  }
  return out * in * e;
}

// What a session makes of its Linear weights: fp8 for the big ones (every DiT block's, every encoder
// layer's) when asked; an int8 checkpoint's kept when asked; else dense.
struct LinearFormats {
  bool fp8 = false;
  bool keep_int8 = false;
  LinearFormat of(bool stored_int8, bool big) const {
    if (fp8 && big) return LinearFormat::kFp8Rows;
    return keep_int8 && stored_int8 ? LinearFormat::kInt8Blocks : LinearFormat::kDense;
  }
};

}  // namespace rgbaq::engine::cuda
