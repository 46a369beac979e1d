#pragma once
// `rgbaq model quantize`: a copy of a model directory whose Linear weights (those the weight schema
// names as Linear) are int8 with bf16 block scales (engine/model/int8_blocks.h), everything else as stored.
// Each quantized component keeps its file layout (shards and index), gains the scale tensors beside
// their weights, and an "rgbaq_quantization" entry in its config.json that says so. The CPU engine
// (and any backend) reads the result directly.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rgbaq::engine {

struct QuantizeResult {
  struct Component {
    std::string role;
    int64_t quantized = 0;  // Linear weights now int8
    uint64_t bytes_before = 0, bytes_after = 0;
  };
  std::vector<Component> components;
};

// `roles`: "transformer" and/or "text_encoder". Throws std::invalid_argument for another role,
// std::runtime_error naming the file at fault (an unusable source, an existing destination, I/O).
QuantizeResult quantize_model(const std::filesystem::path& src, const std::filesystem::path& dst,
                              const std::vector<std::string>& roles);

// The config.json entry's key, and the entry that describes the int8 form.
inline constexpr const char* kQuantizationConfigKey = "rgbaq_quantization";
nlohmann::json quantization_config_entry(int64_t quantized_tensors);

}  // namespace rgbaq::engine
