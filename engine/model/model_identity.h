#pragma once
// Short fingerprints of model files, so caches and outputs can tell one model from another: a 64-bit
// hash (16 hex digits) over each file's name, size, modification time, config text and the first and
// last 64 KiB of its bytes. Cheap for a 16 GB checkpoint, and it changes when the weights are replaced,
// fine-tuned or rewritten in place, so a session opened on a changed directory sees a new model.
#include <filesystem>
#include <string>

#include "engine/model/component_files.h"

namespace rgbaq::engine {

// The text encoder component (config.json and its weights, or the single file that replaces them).
std::string text_encoder_identity(const std::filesystem::path& model_dir, const ComponentFiles& files = {});
// The whole model directory (every component, the tokenizer and model_index.json), each component given
// as a single file hashed in its folder's place; with no directory, the files (and the tokenizer) alone.
// The same as before for a directory with no files given.
// With no model directory, `tokenizer_json` (rgbaq's own, which the session then reads) counts too.
std::string model_identity(const std::filesystem::path& model_dir, const ComponentFiles& files = {},
                           const std::filesystem::path& tokenizer_json = {});
// One file's hash as above (name, size, modification time, first and last 64 KiB).
std::string file_identity(const std::filesystem::path& file);

}  // namespace rgbaq::engine
