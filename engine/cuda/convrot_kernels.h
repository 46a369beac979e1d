#pragma once
// The W8A8 pieces of a ConvRot Linear on the device (--gpu-int8 w8a8): the fused pass that rotates each
// input row (group Hadamard, engine/model/convrot.h) and quantizes it to int8 with one scale a row, and
// the epilogue that scales the int32 product into the fp32 stream. Their schedule and per-element math
// are convrot_rows.h's (the host tests run its twin); shapes are refused by w8a8_plan.h. Never run on a GPU yet.
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/cuda/gemm.h"

namespace rgbaq::engine::cuda {

// x [rows, cols] (`type`: bf16 or fp32, contiguous) -> codes [rows, cols] and scales [rows]: x R_group
// quantized per row, as convrot_rotate_rows + quantize_rows_int8 on the widened x, bit for bit.
// Throws std::invalid_argument (naming the shape) for a group that is not a power of four dividing cols,
// or a row too wide for the device's shared memory.
void convrot_quantize_rows(const void* x, ElementType type, int64_t rows, int64_t cols, int group, int8_t* codes,
                           float* scales, int device, cudaStream_t s);

// y[r, o] = acc[r, o] x_scales[r] w_scales[o] (+ beta y[r, o] when beta != 0; y is not read when it is
// 0), y and acc [rows, out] contiguous: convrot_rows.h's w8a8_output.
void w8a8_epilogue(const int32_t* acc, const float* x_scales, const float* w_scales, int64_t rows, int64_t out, float* y,
                   float beta, cudaStream_t s);

}  // namespace rgbaq::engine::cuda
