#include "engine/model/comfy_quantizer.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model/comfy_keys.h"
#include "engine/model/component_files.h"
#include "engine/model/convrot.h"
#include "engine/model/fp8_e4m3.h"
#include "engine/model/model_directory.h"
#include "engine/model/safetensors.h"
#include "engine/model/weight_schema.h"
#include "engine/model/weight_store.h"

namespace rgbaq::engine {
namespace {

namespace fs = std::filesystem;

// Python's json.dumps of a flat or nested object of strings, integers and booleans: ", " and ": ",
// keys in insertion order.
std::string python_json(const nlohmann::ordered_json& v) {
  if (!v.is_object()) return v.dump();
  std::string s = "{";
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it != v.begin()) s += ", ";
    s += nlohmann::json(it.key()).dump() + ": " + python_json(it.value());
  }
  return s + "}";
}

nlohmann::ordered_json comfy_quant_config(ComfyFormat format, int group) {
  nlohmann::ordered_json config;
  if (format == ComfyFormat::kInt8ConvRot) {
    config["format"] = "int8_tensorwise";
    config["convrot"] = true;
    config["convrot_groupsize"] = group;
  } else {
    config["format"] = "float8_e4m3fn";
  }
  return config;
}

Tensor u8_tensor(const std::string& bytes) {
  Tensor t = Tensor::zeros(DType::kU8, {static_cast<int64_t>(bytes.size())});
  std::memcpy(t.mutable_data(), bytes.data(), bytes.size());
  return t;
}

// The key prefix ComfyUI's own save path gives the component (model_base.py's state_dict_for_saving:
// "model.diffusion_model." for the DiT); a text encoder file (models/text_encoders) holds Hugging Face's
// names as they are. engine/model/comfy_keys.h reads both back.
std::string comfy_key_prefix(ComfyComponent component) {
  return component == ComfyComponent::kDit ? "model.diffusion_model." : "";
}

// One Linear weight w [rows, cols] (fp32) -> ConvRot codes q and row scales; `group` (checked by the
// caller) divides cols.
void convrot_quantize_weight(const float* w, int64_t rows, int64_t cols, int group, int8_t* q, float* scales) {
  std::vector<double> row(static_cast<size_t>(cols));
  std::vector<float> rotated(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    std::copy(w + r * cols, w + (r + 1) * cols, row.begin());
    for (int64_t g = 0; g < cols; g += group) convrot::rotate_group(row.data() + g, group);  // in float64
    std::copy(row.begin(), row.end(), rotated.begin());
    quantize_rows_int8(rotated.data(), 1, cols, cols, q + r * cols, scales + r);  // as the activations are
  }
}

}  // namespace

QuantizeResult::Component write_comfy_component(const WeightStore& weights, const ComponentSchema& schema,
                                                const std::string& role, const fs::path& file,
                                                const ComfyQuantizeOptions& options) {
  struct {
    QuantizeResult::Component result;
    fs::path file;
  } w;
  w.result.role = role;
  w.file = file;
  const ComfyComponent component = comfy_component_of_role(role);
  const std::string prefix = comfy_key_prefix(component);
  const std::string config = python_json(comfy_quant_config(options.format, options.convrot_group));
  std::vector<std::pair<std::string, Tensor>> out;
  nlohmann::ordered_json layers = nlohmann::ordered_json::object();
  for (const WeightSpec& spec : schema.tensors) {
    Tensor t = weights.require(spec.name, spec.shape);  // an rgbaq int8 source comes with its block scales
    w.result.bytes_before += t.nbytes() + (t.scales() ? t.scales()->nbytes() : 0);
    const std::string name = prefix + spec.name;
    if (comfy_key_to_engine(component, name) != spec.name) {  // written names must read back as the same tensors
      throw std::logic_error("comfy_keys does not map " + name + " back to " + spec.name);
    }
    const bool linear = spec.role == WeightRole::kLinear && t.rank() == 2;
    const bool convrot = options.format == ComfyFormat::kInt8ConvRot;
    if (!linear || (convrot && t.dim(1) % options.convrot_group != 0)) {
      if (t.quant() != WeightQuant::kNone) t = Tensor::from_f32(t.shape(), t.to_f32_vector());  // rgbaq's int8 blocks
      w.result.bytes_after += t.nbytes();
      out.emplace_back(name, std::move(t));
      continue;
    }
    const int64_t rows = t.dim(0), cols = t.dim(1);
    const std::vector<float> wide = t.to_f32_vector();
    const std::string module = name.substr(0, name.size() - std::string(".weight").size());
    if (convrot) {
      Tensor q = Tensor::zeros(DType::kI8, {rows, cols});
      std::vector<float> scales(static_cast<size_t>(rows));
      convrot_quantize_weight(wide.data(), rows, cols, options.convrot_group, static_cast<int8_t*>(q.mutable_data()),
                              scales.data());
      out.emplace_back(name, std::move(q));
      out.emplace_back(module + ".weight_scale", Tensor::from_f32({rows, 1}, std::move(scales)));
    } else {
      Tensor q = Tensor::zeros(DType::kF8E4M3, {rows, cols});
      float scale = 1;  // one for the whole tensor: the weight as one row
      fp8::quantize_rows(wide.data(), 1, rows * cols, static_cast<uint8_t*>(q.mutable_data()), &scale);
      out.emplace_back(name, std::move(q));
      out.emplace_back(module + ".weight_scale", Tensor::from_f32({}, {scale}));
    }
    out.emplace_back(module + ".comfy_quant", u8_tensor(config));
    for (size_t i = out.size() - 3; i < out.size(); ++i) w.result.bytes_after += out[i].second.nbytes();
    layers[module.substr(prefix.size())] = comfy_quant_config(options.format, options.convrot_group);
    ++w.result.quantized;
  }
  nlohmann::ordered_json metadata;
  metadata["format_version"] = "1.0";
  metadata["layers"] = std::move(layers);
  write_safetensors(w.file, out, {{"_quantization_metadata", python_json(metadata)}});
  return w.result;
}

ComfyFormat parse_comfy_format(const std::string& name) {
  if (name == "int8-convrot") return ComfyFormat::kInt8ConvRot;
  if (name == "fp8-scaled") return ComfyFormat::kFp8Scaled;
  throw std::invalid_argument("format \"" + name + "\" is not int8-convrot or fp8-scaled");
}

const char* comfy_format_name(ComfyFormat format) {
  return format == ComfyFormat::kInt8ConvRot ? "int8-convrot" : "fp8-scaled";
}

QuantizeResult quantize_model_comfy(const fs::path& src, const fs::path& dst, const ComfyQuantizeOptions& options) {
  for (const auto& role : options.roles) {
    if (role != "transformer" && role != "text_encoder") {
      throw std::invalid_argument("component \"" + role + "\" cannot be quantized (transformer, text_encoder)");
    }
  }
  if (options.format == ComfyFormat::kInt8ConvRot && !is_convrot_group(options.convrot_group)) {
    throw std::invalid_argument("ConvRot group " + std::to_string(options.convrot_group) + " is not a power of four >= 4");
  }
  const ModelDirectory model = ModelDirectory::open(src);  // refuses an unusable source before writing anything
  if (fs::exists(dst) && !(fs::is_directory(dst) && fs::is_empty(dst))) {
    throw std::runtime_error(dst.string() + ": already exists and is not empty");
  }
  fs::create_directories(dst);
  QuantizeResult result;
  for (const auto& role : options.roles) {
    const fs::path file = dst / (role + ".safetensors");
    const ComponentSchema schema = role == "transformer"
                                       ? dit_schema(model.dit_config())
                                       : text_encoder_schema(model.text_encoder_config(), model.text_encoder_prefix());
    result.components.push_back(write_comfy_component(model.open_weights(role), schema, role, file, options));
    open_component_file(role, file);  // the result must read back, every module checked
  }
  return result;
}

}  // namespace rgbaq::engine
