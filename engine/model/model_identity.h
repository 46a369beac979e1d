#pragma once
// Short fingerprints of model files, so caches and outputs can tell one model from another: a 64-bit
// hash (16 hex digits) over each file's name, size, modification time, config text and the first and
// last 64 KiB of its bytes. Cheap for a 16 GB checkpoint, and it changes when the weights are replaced,
// fine-tuned or rewritten in place, so a session opened on a changed directory sees a new model.
#include <filesystem>
#include <string>

namespace rgbaq::engine {

// The text encoder component (config.json and its weights).
std::string text_encoder_identity(const std::filesystem::path& model_dir);
// The whole model directory: every component, the tokenizer and model_index.json.
std::string model_identity(const std::filesystem::path& model_dir);

}  // namespace rgbaq::engine
