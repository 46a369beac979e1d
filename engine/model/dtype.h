#pragma once
// Element types a checkpoint may store, and their conversions to the fp32 the engine computes in.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace rgbaq::engine {

// kF8E4M3: FP8 E4M3 "fn" codes (engine/model/fp8_e4m3.h); kU8: raw bytes (ComfyUI's comfy_quant JSON).
enum class DType : uint8_t { kF32, kBF16, kF16, kI8, kF8E4M3, kU8 };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                      // safetensors spelling: "F32", "BF16", "F8_E4M3", ...
std::optional<DType> parse_dtype(std::string_view name);   // nullopt for types the engine does not read

inline float bf16_to_f32(uint16_t v) {
  const uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Round to nearest even, as torch's .to(torch.bfloat16); NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

float f16_to_f32(uint16_t v);

// Widens n elements of `src` (stored as `type`) to fp32.
void to_f32(DType type, const void* src, float* dst, size_t n);

}  // namespace rgbaq::engine
