#pragma once
// The tiny checkpoint, generated into a temporary directory for a test (never committed).
#include <filesystem>

#include "engine/model/dtype.h"
#include "tests/test_temp_dir.h"
#include "tools/tiny_model.h"

namespace rgbaq {

class TinyModel {
 public:
  explicit TinyModel(engine::DType dtype = engine::DType::kBF16, uint64_t seed = 0,
                     tools::Layout layout = tools::Layout::kOurs) {
    tools::TinyModelOptions options;
    options.seed = seed;
    options.dtype = dtype;
    options.layout = layout;
    options.tokenizer_json = std::filesystem::path(RGBAQ_SOURCE_DIR_PATH) / "tokenizer/data/qwen3/tokenizer.json";
    tools::write_tiny_model(dir(), options);
  }
  std::filesystem::path dir() const { return temp_.path() / "model"; }

 private:
  TempDir temp_;
};

}  // namespace rgbaq
