#pragma once
// Block int8 weights, the contract's int8lin form: each row of a Linear weight [out, in] is cut into
// blocks of 32 consecutive input values; a block stores one bf16 scale s = bf16(max|w| / 127) and
// int8 values q = round_half_even(w / s) clamped to [-127, 127], so w ~= q * s. When `in` is not a
// multiple of 32 the last block of each row holds the remaining in % 32 values (scales have
// ceil(in / 32) columns). An all-zero block has scale 0 and values 0.
//
// On disk (rgbaq model quantize): the int8 values replace WEIGHT (dtype I8, shape [out, in]) and the
// scales are the tensor WEIGHT + "_scale" (BF16, [out, ceil(in / 32)]) in the same file.
#include <cstdint>
#include <string>

namespace rgbaq::engine {

constexpr int64_t kInt8Block = 32;
inline constexpr const char* kInt8ScaleSuffix = "_scale";

inline int64_t int8_scale_columns(int64_t in) { return (in + kInt8Block - 1) / kInt8Block; }
inline std::string int8_scale_name(const std::string& weight_name) { return weight_name + kInt8ScaleSuffix; }

// w [rows, in] fp32 -> q [rows, in] and scales [rows, int8_scale_columns(in)] (bf16 bits).
void quantize_int8_rows(const float* w, int64_t rows, int64_t in, int8_t* q, uint16_t* scales);

// q, scales as above -> out [rows, in] fp32 (q * s, exact in fp32).
void dequantize_int8_rows(const int8_t* q, const uint16_t* scales, int64_t rows, int64_t in, float* out);

}  // namespace rgbaq::engine
