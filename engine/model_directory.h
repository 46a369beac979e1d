#pragma once
// A diffusers-layout model directory: model_index.json, tokenizer/, text_encoder/, transformer/, vae/,
// scheduler/. Opening checks that every part is there and says which is not.
#include <filesystem>
#include <string>

namespace rgbaq::engine {

class ModelDirectory {
 public:
  // Throws std::runtime_error naming the first missing file and the layout expected.
  static ModelDirectory open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path tokenizer_json() const { return root_ / "tokenizer" / "tokenizer.json"; }
  std::filesystem::path text_encoder_dir() const { return root_ / "text_encoder"; }
  std::filesystem::path transformer_dir() const { return root_ / "transformer"; }
  std::filesystem::path vae_dir() const { return root_ / "vae"; }

 private:
  std::filesystem::path root_;
};

}  // namespace rgbaq::engine
