#pragma once
// The weights of one model component (text_encoder/, transformer/, vae/): one safetensors file, several,
// or shards listed by a *.safetensors.index.json. Lookups name the component, the file and the tensor.
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/safetensors.h"

namespace rgbaq::engine {

class WeightStore {
 public:
  // Throws std::runtime_error naming the directory or file at fault: no weights, an index that names a
  // missing file or a tensor its shard lacks, a tensor present in two files.
  static WeightStore open(const std::filesystem::path& component_dir);

  bool has(const std::string& name) const { return file_of_.count(name) > 0; }
  // The tensor; throws "DIR: tensor NAME is missing" when absent.
  Tensor get(const std::string& name) const;
  // The tensor, checked to have `shape` and a floating-point dtype (F32, BF16, F16), or to be an I8
  // weight [out, in] with its block scales NAME_scale beside it (returned attached: Tensor::block_scales).
  Tensor require(const std::string& name, const Shape& shape) const;
  // The file that holds `name` (which must be present).
  const std::filesystem::path& file_of(const std::string& name) const;
  std::vector<std::string> names() const;
  const std::filesystem::path& directory() const { return dir_; }
  size_t size() const { return file_of_.size(); }

 private:
  std::filesystem::path dir_;
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> file_of_;  // tensor name -> index in files_
};

}  // namespace rgbaq::engine
