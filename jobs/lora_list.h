#pragma once
// A job's LoRAs as the job file names them: the `lora` field, "name:weight" items separated by ";"
// ("pixel-art:0.8;outline:0.4"; the weight may be left out: 1), and AUTOMATIC1111's inline
// "<lora:name:weight>" tags in the prompt, which are taken out of the text the tokenizer sees (so the
// encoder cache key is the prompt without them) while the prompt is recorded as written.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rgbaq::jobs {

struct LoraItem {
  std::string name;  // a file name stem in the LoRA folders: NAME.safetensors
  float weight = 1.0f;
};

inline constexpr float kMaxLoraWeight = 10.0f;  // |weight| at most this

// The items of a `lora` field, or nothing with `error` set (a bad name, a weight that is no number in
// -10..10, a name given twice). An empty or blank text is no LoRA.
std::optional<std::vector<LoraItem>> parse_lora_list(std::string_view text, std::string& error);

// The prompt without its <lora:name:weight> tags (ends trimmed), and the tags' items in order.
struct PromptLoras {
  std::string text;
  std::vector<LoraItem> loras;
};
std::optional<PromptLoras> split_prompt_loras(std::string_view prompt, std::string& error);
// The text the tokenizer sees: the prompt without its tags (a malformed tag stays as written).
std::string prompt_text(std::string_view prompt);

// "name:weight;name:weight" with each weight in its shortest exact form; "" for none. What the queue
// stores, and what parse_lora_list reads back to the same items.
std::string lora_list_string(const std::vector<LoraItem>& items);

// Why `name` cannot name a LoRA file (empty, a path separator, ":", ";", "<", ">", ",", a leading dot,
// over 100 bytes), or "" when it can.
std::string lora_name_problem(std::string_view name);

}  // namespace rgbaq::jobs
