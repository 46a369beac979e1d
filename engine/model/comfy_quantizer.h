#pragma once
// `rgbaq model quantize SRC DST --format int8-convrot|fp8-scaled`: each chosen component of the model
// directory SRC as one ComfyUI-layout safetensors file, DST/<role>.safetensors (transformer.safetensors,
// text_encoder.safetensors), ready for `--dit FILE` / `--text-encoder FILE` here and for ComfyUI's
// models/diffusion_models and models/text_encoders. The tensors are the ones the graphs read, named as
// ComfyUI names them (the DiT's with the "model.diffusion_model." prefix ComfyUI's save path writes; each
// name checked to read back through engine/model/comfy_keys.h); each Linear weight the weight
// schema names is written quantized as ComfyUI writes it (comfy/ops.py's Linear state_dict,
// engine/model/comfy_quant.h for the reading side):
// - int8-convrot: M.weight I8 [out, in] = round(W R / s), M.weight_scale F32 [out, 1] (one per row),
//   M.comfy_quant U8 = json.dumps({"format": "int8_tensorwise", "convrot": True, "convrot_groupsize": G}).
//   W R is computed in float64 (exact for bf16 weights, so the file does not depend on a summation order)
//   and kept as fp32, then quantized by ComfyUI's row rule (engine/model/convrot.h). A Linear whose input
//   width G does not divide stays as stored (as ComfyUI's converters leave them).
// - fp8-scaled: M.weight F8_E4M3, M.weight_scale F32 [] (one per tensor: max|W| / 448),
//   M.comfy_quant = json.dumps({"format": "float8_e4m3fn"}).
// The header's __metadata__ gets _quantization_metadata = json.dumps({"format_version": "1.0",
// "layers": {M: config}}) with M without the key prefix (ComfyUI adds its model prefix when it reads
// them). JSON as Python's json.dumps writes it (", " and ": " separators, keys in insertion order).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/model_quantizer.h"
#include "engine/model/weight_schema.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine {

enum class ComfyFormat { kInt8ConvRot, kFp8Scaled };
// "int8-convrot" | "fp8-scaled"; throws std::invalid_argument naming the value.
ComfyFormat parse_comfy_format(const std::string& name);
const char* comfy_format_name(ComfyFormat format);

struct ComfyQuantizeOptions {
  ComfyFormat format = ComfyFormat::kInt8ConvRot;
  int convrot_group = 256;  // int8-convrot: a power of four >= 4
  std::vector<std::string> roles{"transformer", "text_encoder"};
};

// Throws std::invalid_argument for a role other than transformer / text_encoder or a group that is not a
// power of four; std::runtime_error naming the file at fault (an unusable source, a DST that exists and is
// not an empty directory, I/O). Each file is checked by reading it back as a component before returning.
// One component's tensors (those `schema` names, read from `weights`) as one ComfyUI file at `file`, its
// Linears quantized as above; `role` is "transformer" or "text_encoder". quantize_model_comfy() is this
// for each role of a model directory, each result then read back; benchmarks call it on weights of
// their own.
QuantizeResult::Component write_comfy_component(const WeightStore& weights, const ComponentSchema& schema,
                                                const std::string& role, const std::filesystem::path& file,
                                                const ComfyQuantizeOptions& options);

QuantizeResult quantize_model_comfy(const std::filesystem::path& src, const std::filesystem::path& dst,
                                    const ComfyQuantizeOptions& options);

}  // namespace rgbaq::engine
