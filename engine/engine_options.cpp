#include "engine/engine_options.h"

#include <stdexcept>

namespace rgbaq::engine {

Precision parse_precision(const std::string& name) {
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp32") return Precision::kFp32;
  throw std::invalid_argument("precision \"" + name + "\" is not one of bf16, fp32");
}

const char* precision_name(Precision p) { return p == Precision::kFp32 ? "fp32" : "bf16"; }

std::string random_weights_mark(const EngineOptions& options) {
  return options.random_weights ? "+random-weights-" + std::to_string(*options.random_weights) : "";
}

}  // namespace rgbaq::engine
