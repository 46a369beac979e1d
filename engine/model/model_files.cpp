#include "engine/model/model_files.h"

#include <algorithm>

#include "engine/model/model_config.h"
#include "engine/model/weight_files.h"

namespace rgbaq::engine {
namespace {

using nlohmann::json;

// The folders ModelDirectory takes its components from (engine/model/model_directory.cpp's role rules).
constexpr const char* kWeightFolders[] = {"text_encoder", "transformer", "vae"};
constexpr const char* kTokenizerFolders[] = {"processor", "tokenizer"};

bool under(const std::string& path, const std::string& folder) {
  return path.size() > folder.size() + 1 && path.compare(0, folder.size(), folder) == 0 && path[folder.size()] == '/' &&
         path.find('/', folder.size() + 1) == std::string::npos;
}

std::vector<std::string> files_in(const std::set<std::string>& listing, const std::string& folder, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& f : listing)
    if (under(f, folder) && f.ends_with(suffix)) out.push_back(f);
  return out;
}

// A component's weights as WeightStore::open reads them (engine/model/weight_files): the shard index and
// the shards it names, or the weight files.
void add_weights(const std::set<std::string>& listing, const std::string& folder,
                 const std::function<json(const std::string&)>& read_json, std::vector<std::string>& out) {
  std::vector<std::string> names;
  for (const auto& f : files_in(listing, folder, "")) names.push_back(f.substr(folder.size() + 1));
  const WeightFiles chosen = choose_weight_files(std::move(names), folder);
  if (chosen.index.empty()) {
    if (chosen.files.empty()) out.push_back(folder + "/*.safetensors");
    for (const auto& f : chosen.files) out.push_back(folder + "/" + f);
    return;
  }
  const std::string index = folder + "/" + chosen.index;
  out.push_back(index);
  const json doc = read_json(index);
  if (!doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    throw std::runtime_error(index + ": no \"weight_map\" object");
  }
  std::set<std::string> shards;
  for (const auto& [tensor, file] : doc["weight_map"].items()) {
    const std::string name = file.is_string() ? file.get<std::string>() : std::string();
    if (!is_shard_file_name(name)) {
      throw std::runtime_error(index + ": weight_map[\"" + tensor + "\"] is not a file name in " + folder + "/");
    }
    shards.insert(folder + "/" + name);
  }
  out.insert(out.end(), shards.begin(), shards.end());
}

}  // namespace

std::vector<std::string> model_files_needed(const std::set<std::string>& listing,
                                            const std::function<json(const std::string&)>& read_json) {
  std::vector<std::string> out = {"model_index.json"};
  if (!listing.count("model_index.json")) return out;
  const json index = read_json("model_index.json");
  auto component = [&](const std::string& key) {
    return index.contains(key) && index[key].is_array() && index[key].size() == 2 && index[key][1].is_string();
  };
  std::string tokenizer = "tokenizer";
  for (const char* f : kTokenizerFolders) {
    if (component(f) && listing.count(std::string(f) + "/tokenizer.json")) {
      tokenizer = f;
      break;
    }
    if (component(f) && tokenizer == "tokenizer") tokenizer = f;  // absent from the listing: named missing
  }
  out.push_back(tokenizer + "/tokenizer.json");
  out.push_back("scheduler/scheduler_config.json");
  for (const char* folder : kWeightFolders) {
    out.push_back(std::string(folder) + "/config.json");
    add_weights(listing, folder, read_json, out);
  }
  return out;
}

std::vector<std::string> model_companion_files(const std::set<std::string>& listing, const std::vector<std::string>& needed) {
  std::vector<std::string> folders = {"scheduler"};
  folders.insert(folders.end(), std::begin(kWeightFolders), std::end(kWeightFolders));
  folders.insert(folders.end(), std::begin(kTokenizerFolders), std::end(kTokenizerFolders));
  std::vector<std::string> out;
  for (const auto& f : listing) {
    const bool small = (f.ends_with(".json") && !f.ends_with(".safetensors.index.json")) || f.ends_with(".txt") ||
                       f.ends_with(".jinja");
    if (!small || std::find(needed.begin(), needed.end(), f) != needed.end()) continue;
    for (const auto& folder : folders)
      if (under(f, folder)) out.push_back(f);
  }
  return out;
}

std::vector<std::string> missing_model_files(const std::filesystem::path& root) {
  std::set<std::string> listing;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec); !ec && it != std::filesystem::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_regular_file(ec)) listing.insert(it->path().lexically_relative(root).generic_string());
  }
  std::vector<std::string> missing;
  for (const auto& f : model_files_needed(listing, [&](const std::string& rel) { return read_json_object(root / rel); }))
    if (!listing.count(f)) missing.push_back(f);
  return missing;
}

}  // namespace rgbaq::engine
