#pragma once
// Which files of one weight component's folder hold its weights, chosen by name alone, so that what
// `rgbaq model pull` downloads and a cache snapshot is checked for (engine/model/model_files) is what
// WeightStore::open reads:
// - the shard index; of several (dtype variants beside it), the plain one diffusers loads;
// - without an index, the plain weights file when there is one (not its variants), else every
//   *.safetensors file.
#include <string>
#include <vector>

namespace rgbaq::engine {

struct WeightFiles {
  std::string index;               // a file name in the folder, or empty
  std::vector<std::string> files;  // without an index: the weight files' names, sorted
};

// `names`: the names of the files in the folder. Throws std::runtime_error naming `folder` when it
// holds several shard indexes and none is the plain one.
WeightFiles choose_weight_files(std::vector<std::string> names, const std::string& folder);

// Whether a shard index's weight_map value names a file in the index's own folder.
bool is_shard_file_name(const std::string& name);

}  // namespace rgbaq::engine
