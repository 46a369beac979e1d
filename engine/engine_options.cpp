#include "engine/engine_options.h"

#include <stdexcept>

namespace rgbaq::engine {

Precision parse_precision(const std::string& name) {
  if (name == "bf16") return Precision::kBf16;
  if (name == "fp32") return Precision::kFp32;
  if (name == "fp8") return Precision::kFp8;
  throw std::invalid_argument("precision \"" + name + "\" is not one of bf16, fp32, fp8");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp8: return "fp8";
    case Precision::kBf16: break;
  }
  return "bf16";
}

GpuInt8 parse_gpu_int8(const std::string& name) {
  if (name == "widen") return GpuInt8::kWiden;
  if (name == "keep") return GpuInt8::kKeep;
  if (name == "w8a8") return GpuInt8::kW8A8;
  throw std::invalid_argument("\"" + name + "\" is not one of widen, keep, w8a8");
}

const char* gpu_int8_name(GpuInt8 g) { return g == GpuInt8::kKeep ? "keep" : g == GpuInt8::kW8A8 ? "w8a8" : "widen"; }

AttentionKernel parse_attention_kernel(const std::string& name) {
  if (name == "gemm") return AttentionKernel::kGemm;
  if (name == "fused") return AttentionKernel::kFused;
  throw std::invalid_argument("\"" + name + "\" is not one of gemm, fused");
}

const char* attention_kernel_name(AttentionKernel a) { return a == AttentionKernel::kFused ? "fused" : "gemm"; }

bool parse_on_off(const std::string& value) {
  if (value == "on") return true;
  if (value == "off") return false;
  throw std::invalid_argument("\"" + value + "\" is not one of on, off");
}

std::string embedding_precision_mark(const EngineOptions& options, const std::string& backend, bool text_encoder_convrot) {
  const bool widened = text_encoder_convrot && backend == "cuda" && options.gpu_int8 != GpuInt8::kW8A8;
  return std::string(options.precision == Precision::kFp8 ? "+fp8" : "") + (widened ? "+convrot-widened" : "");
}

std::string random_weights_mark(const EngineOptions& options) {
  return options.random_weights ? "+random-weights-" + std::to_string(*options.random_weights) : "";
}

}  // namespace rgbaq::engine
