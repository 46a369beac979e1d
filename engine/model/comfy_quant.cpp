#include "engine/model/comfy_quant.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_limits.h"
#include "engine/model/convrot.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;

// A module's configuration is a handful of fields: bounded well above that, before parsing.
constexpr common::JsonLimits kConfigLimits{kComfyQuantMaxBytes, 8, 4096};
// _quantization_metadata names every quantized layer: a few thousand in a real DiT and text encoder.
constexpr common::JsonLimits kMetadataLimits{8u << 20, 8, 1u << 18};

[[noreturn]] void fail(const std::string& where, const std::string& what) { throw std::runtime_error(where + ": " + what); }

std::string tensor_where(const SafetensorsFile& file, const std::string& name) {
  return file.path().string() + ": tensor \"" + name + "\"";
}

json parse_bounded(std::string_view text, const common::JsonLimits& limits, const std::string& where) {
  try {
    common::check_json_limits(text, limits, "JSON");
  } catch (const std::runtime_error& e) {
    fail(where, e.what());
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(where, std::string("is not JSON: ") + e.what());
  }
}

// The scales as fp32 values, from F32, BF16 or F16.
std::vector<float> scale_values(const Tensor& t, const std::string& where) {
  if (t.dtype() != DType::kF32 && t.dtype() != DType::kBF16 && t.dtype() != DType::kF16) {
    fail(where, "dtype " + std::string(dtype_name(t.dtype())) + " is not a floating-point scale (F32, BF16, F16)");
  }
  std::vector<float> v = t.to_f32_vector();
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]) || v[i] <= 0.0f) {
      fail(where, "value " + std::to_string(v[i]) + " at index " + std::to_string(i) +
                      " is not a finite positive scale");
    }
  }
  return v;
}

// A _quantization_metadata layer's module as the file names it: the layer itself (ComfyUI's
// convert_old_quants keys the state dict's names), or, when a writer left the file's key prefix off
// (model.diffusion_model. ...), the one module whose name ends with it.
std::string module_in_file(const SafetensorsFile& file, const std::vector<std::string>& names, const std::string& layer,
                           const std::string& where) {
  if (file.contains(layer + ".weight")) return layer;
  const std::string tail = "." + layer + ".weight";
  std::string found;
  for (const std::string& name : names) {
    if (!name.ends_with(tail)) continue;
    if (!found.empty()) fail(where, "names no tensor \"" + layer + ".weight\" and several end with it (" + found + ", " + name + ")");
    found = name;
  }
  if (found.empty()) fail(where, "names a layer whose weight \"" + layer + ".weight\" the file does not hold");
  return found.substr(0, found.size() - std::string_view(".weight").size());
}

bool is_scalar(const Shape& s) { return shape_numel(s) == 1 && (s.empty() || s == Shape{1} || s == Shape{1, 1}); }

}  // namespace

std::string comfy_quant_label(const ComfyQuant& quant) {
  switch (quant.quant) {
    case WeightQuant::kInt8ConvRot: return "int8-convrot G" + std::to_string(quant.convrot_group);
    case WeightQuant::kNone: return "int8-rows (widened to f32)";
    default: return weight_quant_name(quant.quant);
  }
}

ComfyQuant comfy_quant_from_json(const json& config, const std::string& where) {
  if (!config.is_object()) fail(where, "is not a JSON object: " + config.dump().substr(0, 80));
  const auto format_it = config.find("format");
  if (format_it == config.end() || !format_it->is_string()) fail(where, "field \"format\" is missing or not a string");
  ComfyQuant q;
  q.format = format_it->get<std::string>();
  if (q.format == "float8_e4m3fn") {
    q.quant = WeightQuant::kFp8Scaled;
    return q;
  }
  if (q.format != "int8_tensorwise") {
    fail(where, "field \"format\": \"" + q.format + "\" is not a format rgbaq reads (int8_tensorwise with convrot, float8_e4m3fn)");
  }
  const auto convrot_it = config.find("convrot");
  if (convrot_it != config.end() && !convrot_it->is_boolean()) fail(where, "field \"convrot\" is not true or false");
  if (convrot_it == config.end() || !convrot_it->get<bool>()) {
    q.quant = WeightQuant::kNone;  // plain row int8: widened at load (writers use it where G does not divide the width)
    return q;
  }
  const auto group_it = config.find("convrot_groupsize");
  if (group_it == config.end() || !group_it->is_number_integer()) {
    fail(where, "field \"convrot_groupsize\" is missing or not an integer");
  }
  const int64_t group = group_it->get<int64_t>();
  if (group < 4 || group > kMaxConvRotWidth || !is_convrot_group(group)) {
    fail(where, "field \"convrot_groupsize\": " + std::to_string(group) + " is not a power of four >= 4");
  }
  q.quant = WeightQuant::kInt8ConvRot;
  q.convrot_group = static_cast<int>(group);
  return q;
}

std::map<std::string, ComfyQuant> read_comfy_quant(const SafetensorsFile& file) {
  std::map<std::string, ComfyQuant> out;
  const auto meta = file.metadata().find("_quantization_metadata");
  if (meta != file.metadata().end()) {
    const std::string where = file.path().string() + ": __metadata__ field \"_quantization_metadata\"";
    const json doc = parse_bounded(meta->second, kMetadataLimits, where);
    if (!doc.is_object()) fail(where, "is not a JSON object");
    const auto layers = doc.find("layers");
    if (layers == doc.end() || !layers->is_object()) fail(where, "field \"layers\" is missing or not an object");
    const std::vector<std::string> names = file.names();
    for (const auto& [module, config] : layers->items()) {
      const std::string layer_where = where + " layers[\"" + module + "\"]";
      out[module_in_file(file, names, module, layer_where)] = comfy_quant_from_json(config, layer_where);
    }
  }
  for (const std::string& name : file.names()) {
    if (!name.ends_with(kComfyQuantSuffix)) continue;
    const std::string where = tensor_where(file, name);
    const Tensor t = file.tensor(name);
    if (t.dtype() != DType::kU8 || t.rank() != 1) {
      fail(where, "is " + std::string(dtype_name(t.dtype())) + " " + shape_string(t.shape()) + ", expected U8 [bytes] of JSON");
    }
    if (t.nbytes() == 0 || t.nbytes() > kComfyQuantMaxBytes) {
      fail(where, "holds " + std::to_string(t.nbytes()) + " bytes; a comfy_quant is 1 to " + std::to_string(kComfyQuantMaxBytes));
    }
    const std::string_view text(static_cast<const char*>(t.data()), t.nbytes());
    const std::string module = name.substr(0, name.size() - kComfyQuantSuffix.size());
    out[module] = comfy_quant_from_json(parse_bounded(text, kConfigLimits, where), where);
  }
  return out;
}

Tensor comfy_quant_weight(const SafetensorsFile& file, const std::string& module, const ComfyQuant& quant) {
  const std::string weight_name = module + ".weight", scale_name = module + ".weight_scale";
  const std::string format = " (" + quant.format + " module \"" + module + "\")";
  if (!file.contains(weight_name)) fail(file.path().string(), "tensor \"" + weight_name + "\" is missing" + format);
  if (!file.contains(scale_name)) fail(file.path().string(), "tensor \"" + scale_name + "\" is missing" + format);
  const Tensor weight = file.tensor(weight_name);
  const std::string weight_where = tensor_where(file, weight_name);
  const DType want = quant.quant == WeightQuant::kFp8Scaled ? DType::kF8E4M3 : DType::kI8;
  if (weight.dtype() != want || weight.rank() != 2 || weight.dim(0) == 0 || weight.dim(1) == 0) {
    fail(weight_where, "is " + std::string(dtype_name(weight.dtype())) + " " + shape_string(weight.shape()) + ", expected " +
                           std::string(dtype_name(want)) + " [out, in]" + format);
  }
  const int64_t out = weight.dim(0), in = weight.dim(1);
  if (quant.quant == WeightQuant::kInt8ConvRot && in % quant.convrot_group != 0) {
    fail(weight_where, "field \"convrot_groupsize\": " + std::to_string(quant.convrot_group) + " does not divide the width " +
                           std::to_string(in) + format);
  }
  // The int8 products accumulate in int32 lanes: 65536 inputs at most (engine/cpu/int8_gemm.h), refused
  // here at open rather than at the first render.
  if (quant.quant == WeightQuant::kInt8ConvRot && in > kMaxConvRotWidth) {
    fail(weight_where, "is " + shape_string(weight.shape()) + ": an int8 Linear takes at most " +
                           std::to_string(kMaxConvRotWidth) + " inputs" + format);
  }
  const Tensor scale = file.tensor(scale_name);
  const std::string scale_where = tensor_where(file, scale_name);
  const Shape& s = scale.shape();
  const bool per_row = s == Shape{out} || s == Shape{out, 1};
  if (!per_row && !is_scalar(s)) {
    fail(scale_where, "has shape " + shape_string(s) + ", expected [" + std::to_string(out) + "], [" + std::to_string(out) +
                          ", 1] or one scale" + format);
  }
  std::vector<float> values = scale_values(scale, scale_where);
  if (quant.quant != WeightQuant::kFp8Scaled && values.size() == 1) values.assign(static_cast<size_t>(out), values[0]);
  const Shape scale_shape{static_cast<int64_t>(values.size())};
  if (quant.quant == WeightQuant::kFp8Scaled && file.contains(module + ".input_scale")) {
    const std::string where = tensor_where(file, module + ".input_scale");
    const Tensor input_scale = file.tensor(module + ".input_scale");
    if (!is_scalar(input_scale.shape())) {
      fail(where, "has shape " + shape_string(input_scale.shape()) + ", expected one scale" + format);
    }
    scale_values(input_scale, where);
  }
  if (quant.quant == WeightQuant::kNone) {  // int8_tensorwise without ConvRot: q * s, exact in fp32
    std::vector<float> w(static_cast<size_t>(out * in));
    const auto* q = static_cast<const int8_t*>(weight.data());
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) w[static_cast<size_t>(o * in + i)] = static_cast<float>(q[o * in + i]) * values[o];
    return Tensor::from_f32({out, in}, std::move(w));
  }
  return Tensor::with_scales(weight, Tensor::from_f32(scale_shape, std::move(values)), quant.quant, quant.convrot_group);
}

std::vector<std::string> comfy_quant_companions(const std::string& weight_name) {
  if (!weight_name.ends_with(".weight")) return {};
  const std::string module = weight_name.substr(0, weight_name.size() - 7);
  return {module + ".weight_scale", module + ".input_scale", module + std::string(kComfyQuantSuffix)};
}

}  // namespace rgbaq::engine
