#pragma once
// The weights of one model component (text_encoder/, transformer/, vae/): one safetensors file, several,
// or shards listed by a *.safetensors.index.json. Lookups name the component, the file and the tensor.
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/comfy_quant.h"
#include "engine/model/safetensors.h"

namespace rgbaq::engine {

// A file's tensor name -> the engine's, or nullopt when the name is unknown (engine/model/comfy_keys.h).
using TensorRename = std::function<std::optional<std::string>(const std::string&)>;

class WeightStore {
 public:
  // Throws std::runtime_error naming the directory or file at fault: no weights, an index that names a
  // missing file or a tensor its shard lacks, a tensor present in two files, a ComfyUI quantized module
  // that is not sound (engine/model/comfy_quant.h: every module checked here, at open).
  static WeightStore open(const std::filesystem::path& component_dir);
  // One safetensors file as a component (a ComfyUI single file), its names translated by `rename`: a
  // name it does not know, or two names it maps to one, is refused naming the tensor.
  static WeightStore open_file(const std::filesystem::path& file, const TensorRename& rename);

  bool has(const std::string& name) const { return file_of_.count(name) > 0; }
  // The tensor; throws "DIR: tensor NAME is missing" when absent.
  Tensor get(const std::string& name) const;
  // The tensor, checked to have `shape` and a floating-point dtype (F32, BF16, F16), or to be an I8
  // weight [out, in] with its block scales NAME_scale beside it (returned attached: Tensor::block_scales),
  // or a ComfyUI quantized module's weight with its scales (Tensor::quant(): kInt8ConvRot, kFp8Scaled).
  Tensor require(const std::string& name, const Shape& shape) const;
  // The ComfyUI quantization of weight `name` (engine names), or null when it has none.
  const ComfyQuant* comfy_quant(const std::string& name) const;

  // The file that holds `name` (which must be present).
  const std::filesystem::path& file_of(const std::string& name) const;
  std::vector<std::string> names() const;
  // The numbers N of the tensors named `prefix`N.… (N at most 6 digits): a stack's numbered blocks.
  std::set<long> block_numbers(const std::string& prefix) const;
  const std::filesystem::path& directory() const { return dir_; }
  size_t size() const { return file_of_.size(); }

 private:
  std::filesystem::path dir_;
  void add_file(SafetensorsFile file, const TensorRename& rename);
  void check_comfy_quant();

  struct Located {
    size_t file;            // index in files_
    std::string file_name;  // the name in the file (differs from the engine's when renamed)
  };
  std::vector<SafetensorsFile> files_;
  std::map<std::string, Located> file_of_;  // tensor name (engine's) -> where it is
  struct Quantized {
    size_t file;
    std::string module;  // as the file spells it
    ComfyQuant quant;
  };
  std::map<std::string, Quantized> quant_;  // weight name (engine's) -> its ComfyUI quantization
};

}  // namespace rgbaq::engine
