#include "engine/model/model_quantizer.h"

#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model/int8_blocks.h"
#include "engine/model/model_config.h"
#include "engine/model/model_directory.h"
#include "engine/model/safetensors.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

void write_json(const fs::path& path, const json& doc) {
  std::ofstream out(path);
  out << doc.dump(2) << "\n";
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

std::pair<Tensor, Tensor> quantize(const Tensor& weight) {
  const int64_t rows = weight.dim(0), in = weight.dim(1);
  Tensor q = Tensor::zeros(DType::kI8, {rows, in});
  Tensor scales = Tensor::zeros(DType::kBF16, {rows, int8_scale_columns(in)});
  // A slab of rows at a time, so a 12288 x 4096 weight never needs its whole fp32 copy.
  constexpr int64_t kSlab = 256;
  std::vector<float> wide(static_cast<size_t>(std::min(rows, kSlab) * in));
  const size_t element = dtype_size(weight.dtype());
  for (int64_t r0 = 0; r0 < rows; r0 += kSlab) {
    const int64_t n = std::min(kSlab, rows - r0);
    to_f32(weight.dtype(), static_cast<const uint8_t*>(weight.data()) + static_cast<size_t>(r0 * in) * element, wide.data(),
           static_cast<size_t>(n * in));
    quantize_int8_rows(wide.data(), n, in, static_cast<int8_t*>(q.mutable_data()) + r0 * in,
                       static_cast<uint16_t*>(scales.mutable_data()) + r0 * int8_scale_columns(in));
  }
  return {std::move(q), std::move(scales)};
}

QuantizeResult::Component quantize_component(const fs::path& src_dir, const fs::path& dst_dir,
                                             const std::set<std::string>& linears, const std::string& role) {
  QuantizeResult::Component result;
  result.role = role;
  fs::create_directories(dst_dir);
  json index;
  fs::path index_name;
  for (const auto& entry : fs::directory_iterator(src_dir)) {
    const auto name = entry.path().filename().string();
    if (name.ends_with(".safetensors.index.json")) {
      index = read_json_object(entry.path());
      index_name = name;
    }
  }
  for (const auto& entry : fs::directory_iterator(src_dir)) {
    const auto name = entry.path().filename().string();
    if (name.ends_with(".safetensors.index.json") || name == "config.json") continue;
    if (!name.ends_with(".safetensors")) {
      fs::copy(entry.path(), dst_dir / name, fs::copy_options::recursive);
      continue;
    }
    const SafetensorsFile file = SafetensorsFile::open(entry.path());
    std::vector<std::pair<std::string, Tensor>> out;
    for (const auto& tensor_name : file.names()) {
      Tensor t = file.tensor(tensor_name);
      result.bytes_before += t.nbytes();
      if (linears.count(tensor_name) && t.dtype() != DType::kI8) {
        auto [q, scales] = quantize(t);
        const std::string scale_name = int8_scale_name(tensor_name);
        if (!index.is_null()) index["weight_map"][scale_name] = name;
        result.bytes_after += q.nbytes() + scales.nbytes();
        out.emplace_back(tensor_name, std::move(q));
        out.emplace_back(scale_name, std::move(scales));
        ++result.quantized;
      } else {
        result.bytes_after += t.nbytes();
        out.emplace_back(tensor_name, std::move(t));
      }
    }
    write_safetensors(dst_dir / name, out);
  }
  if (!index.is_null()) write_json(dst_dir / index_name, index);
  json config = read_json_object(src_dir / "config.json");
  config[kQuantizationConfigKey] = quantization_config_entry(result.quantized);
  write_json(dst_dir / "config.json", config);
  return result;
}

}  // namespace

json quantization_config_entry(int64_t quantized_tensors) {
  return {
      {"method", "int8_block32"},
      {"weights", "every Linear weight the graphs read; norms, embeddings, convolutions as stored"},
      {"block_size", kInt8Block},
      {"symmetric", true},
      {"weight_dtype", "int8"},
      {"scale_dtype", "bfloat16"},
      {"scale_tensor", std::string("<weight name>") + kInt8ScaleSuffix},
      {"scale_shape", "[out, ceil(in / 32)]"},
      {"formula", "w = q * scale; scale = bf16(max|w| over the block / 127); q = round_half_even(w / scale)"},
      {"quantized_tensors", quantized_tensors},
  };
}

QuantizeResult quantize_model(const fs::path& src, const fs::path& dst, const std::vector<std::string>& roles) {
  for (const auto& role : roles) {
    if (role != "transformer" && role != "text_encoder") {
      throw std::invalid_argument("component \"" + role + "\" cannot be quantized (transformer, text_encoder)");
    }
  }
  const ModelDirectory model = ModelDirectory::open(src);  // refuses an unusable source before writing anything
  if (fs::exists(dst) && !(fs::is_directory(dst) && fs::is_empty(dst))) {
    throw std::runtime_error(dst.string() + ": already exists and is not empty");
  }
  fs::create_directories(dst);
  std::set<std::string> quantized_folders;
  for (const auto& role : roles) quantized_folders.insert(model.component(role).folder);
  for (const auto& entry : fs::directory_iterator(src)) {
    const auto name = entry.path().filename().string();
    if (quantized_folders.count(name)) continue;
    fs::copy(entry.path(), dst / name, fs::copy_options::recursive);
  }
  QuantizeResult result;
  for (const auto& role : roles) {
    const ComponentSchema schema = role == "transformer"
                                       ? dit_schema(model.dit_config())
                                       : text_encoder_schema(model.text_encoder_config(), model.text_encoder_prefix());
    std::set<std::string> linears;
    for (const auto& spec : schema.tensors)
      if (spec.role == WeightRole::kLinear) linears.insert(spec.name);
    result.components.push_back(
        quantize_component(model.component_dir(role), dst / model.component(role).folder, linears, role));
  }
  ModelDirectory::open(dst);  // the result must pass the same check
  return result;
}

}  // namespace rgbaq::engine
