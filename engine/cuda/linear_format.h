#pragma once
// The forms a Linear weight [out, in] takes on the device, and their bytes, as plain arithmetic (the
// session's fit check, `rgbaq model check` and the host tests use the same numbers the uploads make):
// dense in the GEMM type; int8 with bf16 block scales as stored (engine/model/int8_blocks.h, --gpu-int8 keep);
// FP8 E4M3 with one fp32 scale per output row (engine/model/fp8_e4m3.h, --precision fp8); a ConvRot
// file's int8 with its fp32 row scales as stored, run as W8A8 (w8a8_plan.h, --gpu-int8 w8a8).
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/model/int8_blocks.h"

namespace rgbaq::engine::cuda {

enum class LinearFormat { kDense, kInt8Blocks, kFp8Rows, kInt8ConvRot };

// `e`: bytes an element of the GEMM type (dense only).
inline int64_t linear_weight_bytes(LinearFormat f, int64_t e, int64_t out, int64_t in) {
  switch (f) {
    case LinearFormat::kInt8Blocks: return out * in + out * int8_scale_columns(in) * 2;
    case LinearFormat::kFp8Rows:
    case LinearFormat::kInt8ConvRot: return out * in + out * 4;
    case LinearFormat::kDense: break;
  }
  return out * in * e;
}

// The device bytes that making one fp8 Linear holds beside its result while it runs
// (WeightSource::fp8_rows): an int8 weight's values and block scales with their fp32 dequantization, or
// the stored values uploaded as they are (bf16; anything else widened to fp32). Random weights are made
// in bf16 (`stored_bf16`).
inline int64_t fp8_staging_bytes(bool stored_int8, bool stored_bf16, int64_t out, int64_t in) {
  if (stored_int8) return out * in + out * int8_scale_columns(in) * 2 + out * in * 4;
  return out * in * (stored_bf16 ? 2 : 4);
}

// Throws, naming `what`, when cuBLASLt's FP8 GEMM cannot take a Linear [out, in]: its rows (in E4M3
// bytes) and the fp32 output rows must start 16-byte aligned.
inline void check_fp8_shape(int64_t out, int64_t in, const std::string& what) {
  const std::string problem = in % 16 != 0  ? "its " + std::to_string(in) + " inputs are not a multiple of 16"
                              : out % 4 != 0 ? "its " + std::to_string(out) + " outputs are not a multiple of 4"
                                             : "";
  if (!problem.empty()) {
    throw std::invalid_argument(what + " [" + std::to_string(out) + ", " + std::to_string(in) +
                                "] cannot be an fp8 Linear: " + problem + " (use bf16)");
  }
}

// What a session makes of its Linear weights: a ConvRot one kept and run as W8A8 when asked (else
// widened, (q s) R, as Tensor::to_f32_vector gives it); fp8 for the big ones (every DiT block's, every
// encoder layer's) when asked; an int8 checkpoint's kept when asked; else dense.
struct LinearFormats {
  bool fp8 = false;
  bool keep_int8 = false;
  bool w8a8 = false;
  LinearFormat of(bool stored_int8, bool big, bool stored_convrot = false) const {
    if (stored_convrot && w8a8) return LinearFormat::kInt8ConvRot;
    if (fp8 && big) return LinearFormat::kFp8Rows;
    return keep_int8 && stored_int8 ? LinearFormat::kInt8Blocks : LinearFormat::kDense;
  }
};

}  // namespace rgbaq::engine::cuda
