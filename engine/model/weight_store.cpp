#include "engine/model/weight_store.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/model/int8_blocks.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_files.h"

namespace rgbaq::engine {

WeightStore WeightStore::open(const std::filesystem::path& dir) {
  WeightStore store;
  store.dir_ = dir;
  if (!std::filesystem::is_directory(dir)) throw std::runtime_error(dir.string() + ": not a directory");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  const WeightFiles chosen = choose_weight_files(std::move(names), dir.string());

  if (!chosen.index.empty()) {
    const auto index_path = dir / chosen.index;
    const nlohmann::json index = read_json_object(index_path);
    if (!index.contains("weight_map") || !index["weight_map"].is_object()) {
      throw std::runtime_error(index_path.string() + ": no weight_map object");
    }
    std::map<std::string, size_t> shard_index;
    for (const auto& [tensor, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) throw std::runtime_error(index_path.string() + ": weight_map[\"" + tensor + "\"] is not a file name");
      const auto shard_name = shard.get<std::string>();
      if (!is_shard_file_name(shard_name)) {
        throw std::runtime_error(index_path.string() + ": shard \"" + shard_name + "\" is not a file in " + dir.string());
      }
      auto it = shard_index.find(shard_name);
      if (it == shard_index.end()) {
        if (!std::filesystem::exists(dir / shard_name)) {
          throw std::runtime_error(index_path.string() + ": shard " + shard_name + " (holding \"" + tensor + "\") is missing");
        }
        store.files_.push_back(SafetensorsFile::open(dir / shard_name));
        it = shard_index.emplace(shard_name, store.files_.size() - 1).first;
      }
      if (!store.files_[it->second].contains(tensor)) {
        throw std::runtime_error(index_path.string() + ": tensor \"" + tensor + "\" is not in its shard " + shard_name);
      }
      store.file_of_[tensor] = {it->second, tensor};
    }
    store.check_comfy_quant();
    return store;
  }

  if (chosen.files.empty()) throw std::runtime_error(dir.string() + ": no *.safetensors weights");
  for (const auto& name : chosen.files) store.add_file(SafetensorsFile::open(dir / name), nullptr);
  store.check_comfy_quant();
  return store;
}

WeightStore WeightStore::open_file(const std::filesystem::path& file, const TensorRename& rename) {
  WeightStore store;
  store.dir_ = file;
  store.add_file(SafetensorsFile::open(file), rename);
  store.check_comfy_quant();
  return store;
}

void WeightStore::add_file(SafetensorsFile file, const TensorRename& rename) {
  files_.push_back(std::move(file));
  const SafetensorsFile& added = files_.back();
  for (const auto& file_name : added.names()) {
    std::string name = file_name;
    if (rename) {
      const auto renamed = rename(file_name);
      if (!renamed) {
        throw std::runtime_error(added.path().string() + ": tensor \"" + file_name +
                                 "\" is not a tensor of this component (unknown name; engine/model/comfy_keys.cpp "
                                 "lists the names read)");
      }
      name = *renamed;
    }
    const auto [it, inserted] = file_of_.emplace(name, Located{files_.size() - 1, file_name});
    if (!inserted) {
      const auto& other = it->second;
      throw std::runtime_error(dir_.string() + ": tensor \"" + name + "\" is given twice: as \"" + other.file_name + "\" in " +
                               files_[other.file].path().filename().string() + " and as \"" + file_name + "\" in " +
                               added.path().filename().string());
    }
  }
}

void WeightStore::check_comfy_quant() {
  for (size_t i = 0; i < files_.size(); ++i) {
    const auto modules = read_comfy_quant(files_[i]);
    if (modules.empty()) continue;
    std::map<std::string, std::string> engine_name;  // this file's names -> the engine's
    for (const auto& [name, where] : file_of_)
      if (where.file == i) engine_name[where.file_name] = name;
    for (const auto& [module, quant] : modules) {
      comfy_quant_weight(files_[i], module, quant);  // every check, now: throws naming the tensor and field
      const auto weight = engine_name.find(module + ".weight");
      if (weight == engine_name.end()) {
        throw std::runtime_error(files_[i].path().string() + ": tensor \"" + module +
                                 ".weight\" is quantized but not listed in the shard index");
      }
      quant_[weight->second] = {i, module, quant};
    }
  }
}

const ComfyQuant* WeightStore::comfy_quant(const std::string& name) const {
  const auto it = quant_.find(name);
  return it == quant_.end() ? nullptr : &it->second.quant;
}

Tensor WeightStore::get(const std::string& name) const {
  const auto it = file_of_.find(name);
  if (it == file_of_.end()) throw std::runtime_error(dir_.string() + ": tensor \"" + name + "\" is missing");
  return files_[it->second.file].tensor(it->second.file_name);
}

const std::filesystem::path& WeightStore::file_of(const std::string& name) const {
  const auto it = file_of_.find(name);
  if (it == file_of_.end()) throw std::runtime_error(dir_.string() + ": tensor \"" + name + "\" is missing");
  return files_[it->second.file].path();
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  out.reserve(file_of_.size());
  for (const auto& [name, where] : file_of_) out.push_back(name);
  return out;
}

std::set<long> WeightStore::block_numbers(const std::string& prefix) const {
  std::set<long> blocks;
  for (auto it = file_of_.lower_bound(prefix); it != file_of_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    const std::string& name = it->first;
    const size_t end = name.find_first_not_of("0123456789", prefix.size());
    if (end == prefix.size() || end == std::string::npos || name[end] != '.' || end - prefix.size() > 6) continue;
    blocks.insert(std::stol(name.substr(prefix.size(), end - prefix.size())));
  }
  return blocks;
}

Tensor WeightStore::require(const std::string& name, const Shape& shape) const {
  Tensor t = get(name);
  const auto file = file_of(name).string();
  if (const auto q = quant_.find(name); q != quant_.end()) {
    t = comfy_quant_weight(files_[q->second.file], q->second.module, q->second.quant);
  }
  if (t.shape() != shape) {
    throw std::runtime_error(file + ": tensor \"" + name + "\" has shape " + shape_string(t.shape()) + ", expected " +
                             shape_string(shape));
  }
  if (t.quant() != WeightQuant::kNone) return t;
  if (t.dtype() == DType::kI8) {
    const std::string scale_name = int8_scale_name(name);
    if (t.rank() != 2 || !has(scale_name)) {
      throw std::runtime_error(file + ": tensor \"" + name + "\" is I8 without its block scales \"" + scale_name +
                               "\"; a floating-point dtype (F32, BF16, F16) or an int8 Linear weight is needed here");
    }
    Tensor scales = get(scale_name);
    const Shape scale_shape{shape[0], int8_scale_columns(shape[1])};
    if (scales.dtype() != DType::kBF16 || scales.shape() != scale_shape) {
      throw std::runtime_error(file_of(scale_name).string() + ": tensor \"" + scale_name + "\" is " +
                               std::string(dtype_name(scales.dtype())) + " " + shape_string(scales.shape()) +
                               ", expected BF16 " + shape_string(scale_shape));
    }
    return Tensor::with_block_scales(std::move(t), std::move(scales));
  }
  return t;
}

}  // namespace rgbaq::engine
