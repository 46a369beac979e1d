#pragma once
// ComfyUI's quantized Linear checkpoints (comfy/ops.py, comfy/quant_ops.py, QUANTIZATION.md): a module M
// is quantized when the file holds M.comfy_quant, a U8 tensor whose bytes are a JSON object
// {"format": ..., ...}, or when the header's __metadata__._quantization_metadata (a JSON string
// {"format_version": ..., "layers": {M: {"format": ...}}}) names it. rgbaq reads two formats:
// - "int8_tensorwise" with "convrot": true and "convrot_groupsize": G (stable-diffusion.cpp's
//   docs/int8_convrot.md): M.weight I8 [out, in] holding round(W R / s), M.weight_scale one F32 scale a
//   row ([out] or ComfyUI's [out, 1]; one scale for the tensor is the same scale on every row);
//   Without "convrot" (or false), the plain row-wise int8 a ConvRot writer leaves where G does not
//   divide the width: M.weight q and row scales s, widened at load to the fp32 q * s (exact);
// - "float8_e4m3fn": M.weight F8_E4M3 [out, in], M.weight_scale one scale (per tensor) or one a row;
//   M.input_scale (the activations' static scale, for fp8 GEMMs) is accepted and not used on the CPU.
// Everything is checked at open, naming the file, the tensor and the field: the JSON (at most 64 KiB,
// an object), the format, the group (a power of four >= 4 dividing the width), the weight's dtype and
// shape, the scales' dtype, shape and values (finite and positive).
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/model/safetensors.h"
#include "engine/model/tensor.h"

namespace rgbaq::engine {

inline constexpr size_t kComfyQuantMaxBytes = 64 * 1024;
inline constexpr std::string_view kComfyQuantSuffix = ".comfy_quant";

struct ComfyQuant {
  std::string format;  // as the file spells it: "int8_tensorwise", "float8_e4m3fn"
  // kInt8ConvRot, kFp8Scaled, or kNone for int8_tensorwise without ConvRot (widened at load)
  WeightQuant quant = WeightQuant::kNone;
  int convrot_group = 0;
};

// "int8-convrot G256", "fp8-scaled", "int8-rows (widened to f32)": how `rgbaq model check` names it.
std::string comfy_quant_label(const ComfyQuant& quant);

// One module's configuration (the parsed JSON object); `where` names it in errors ("FILE: tensor
// \"M.comfy_quant\"").
ComfyQuant comfy_quant_from_json(const nlohmann::json& config, const std::string& where);

// The quantized modules of `file`, by module name as the file spells it (M, without ".weight").
std::map<std::string, ComfyQuant> read_comfy_quant(const SafetensorsFile& file);

// M.weight with its scales attached (Tensor::with_scales; scales widened to F32, a per-tensor int8 scale
// repeated on every row), or for row int8 without ConvRot an owned F32 q * s; every check above done.
// Throws std::runtime_error naming the tensor and field.
Tensor comfy_quant_weight(const SafetensorsFile& file, const std::string& module, const ComfyQuant& quant);

// The tensors a quantized module carries beside its weight "M.weight": M.weight_scale, M.input_scale,
// M.comfy_quant (the names, present or not).
std::vector<std::string> comfy_quant_companions(const std::string& weight_name);

}  // namespace rgbaq::engine
