#include "engine/model_directory.h"

#include <stdexcept>

namespace rgbaq::engine {

ModelDirectory ModelDirectory::open(const std::filesystem::path& root) {
  if (!std::filesystem::is_directory(root)) throw std::runtime_error(root.string() + ": no such model directory");
  for (const char* rel : {"model_index.json", "tokenizer/tokenizer.json", "text_encoder/config.json",
                          "transformer/config.json", "vae/config.json"}) {
    if (!std::filesystem::exists(root / rel)) {
      throw std::runtime_error(root.string() + ": " + rel +
                               " is missing (a diffusers-layout directory has model_index.json, tokenizer/, "
                               "text_encoder/, transformer/, vae/ and scheduler/)");
    }
  }
  ModelDirectory dir;
  dir.root_ = root;
  return dir;
}

}  // namespace rgbaq::engine
