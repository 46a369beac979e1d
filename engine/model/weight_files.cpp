#include "engine/model/weight_files.h"

#include <algorithm>
#include <stdexcept>

namespace rgbaq::engine {
namespace {

constexpr const char* kPlainIndexes[] = {"model.safetensors.index.json", "diffusion_pytorch_model.safetensors.index.json"};
constexpr const char* kPlainFiles[] = {"model.safetensors", "diffusion_pytorch_model.safetensors"};

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

WeightFiles choose_weight_files(std::vector<std::string> names, const std::string& folder) {
  std::sort(names.begin(), names.end());
  std::vector<std::string> indexes, files;
  for (const auto& n : names) {
    if (n.ends_with(".safetensors.index.json")) indexes.push_back(n);
    if (n.ends_with(".safetensors")) files.push_back(n);
  }
  WeightFiles out;
  for (const char* plain : kPlainIndexes) {
    if (contains(indexes, plain)) out.index = plain;
  }
  if (out.index.empty() && indexes.size() == 1) out.index = indexes.front();
  if (out.index.empty() && indexes.size() > 1) {
    throw std::runtime_error(folder + ": " + std::to_string(indexes.size()) +
                             " shard indexes (" + indexes[0] + ", " + indexes[1] +
                             (indexes.size() > 2 ? ", ..." : "") + ") and none of them model.safetensors.index.json or "
                             "diffusion_pytorch_model.safetensors.index.json: which one is the model is unclear");
  }
  if (!out.index.empty()) return out;
  for (const char* plain : kPlainFiles) {
    if (contains(files, plain)) files = {plain};  // not its dtype variants beside it
  }
  out.files = std::move(files);
  return out;
}

bool is_shard_file_name(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos && name != "." && name != "..";
}

}  // namespace rgbaq::engine
