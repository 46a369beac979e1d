#pragma once
// The files of a diffusers model directory that rgbaq reads, as paths relative to its root: the model
// index, the scheduler config, the tokenizer, each weight component's config.json and its weights
// (the shard index and the shards it names, or its *.safetensors files). The same rule decides what
// `rgbaq model pull` downloads and whether a Hugging Face cache snapshot is complete.
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq::engine {

// `listing` is every file the directory (or the Hub repo) holds, relative and with "/" separators;
// `read_json(rel)` reads one of them (model_index.json, a shard index). Returns the files rgbaq needs,
// some perhaps absent from `listing` (a shard an index names, a component's config.json): the
// caller names those as missing. Throws std::runtime_error naming the file when a JSON read is bad.
std::vector<std::string> model_files_needed(const std::set<std::string>& listing,
                                            const std::function<nlohmann::json(const std::string&)>& read_json);

// The small files beside them in the components' folders (tokenizer and processor configs, vocab
// and merges): not read by rgbaq, but part of the pipeline diffusers loads from the same snapshot.
std::vector<std::string> model_companion_files(const std::set<std::string>& listing, const std::vector<std::string>& needed);

// The needed files of the directory at `root` that are absent (a dangling symlink counts as absent).
std::vector<std::string> missing_model_files(const std::filesystem::path& root);

}  // namespace rgbaq::engine
