#include "jobs/lora_list.h"

#include <charconv>
#include <cmath>
#include <set>

namespace rgbaq::jobs {
namespace {

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// "name" or "name:weight" into `item`; an error message or "".
std::string parse_item(std::string_view text, LoraItem& item) {
  text = trim(text);
  const auto colon = text.rfind(':');
  const std::string_view name = trim(colon == std::string_view::npos ? text : text.substr(0, colon));
  if (const std::string why = lora_name_problem(name); !why.empty()) return why;
  item.name = std::string(name);
  item.weight = 1.0f;
  if (colon == std::string_view::npos) return "";
  const std::string_view w = trim(text.substr(colon + 1));
  float v = 0;
  const auto [end, ec] = std::from_chars(w.data(), w.data() + w.size(), v);
  if (w.empty() || ec != std::errc() || end != w.data() + w.size() || !std::isfinite(v) || std::fabs(v) > kMaxLoraWeight) {
    return "the weight \"" + std::string(w) + "\" of LoRA \"" + item.name + "\" is not a number in -10..10";
  }
  item.weight = v;
  return "";
}

std::string check_unique(const std::vector<LoraItem>& items) {
  std::set<std::string> seen;
  for (const auto& i : items) {
    if (!seen.insert(i.name).second) return "LoRA \"" + i.name + "\" is named twice";
  }
  return "";
}

}  // namespace

std::string lora_name_problem(std::string_view name) {
  if (name.empty()) return "a LoRA item has no name (items are name:weight, separated by ;)";
  const std::string quoted = "\"" + std::string(name) + "\"";
  if (name.find_first_of("/\\") != std::string_view::npos) {
    return "LoRA name " + quoted + " has a path separator; name a file in the LoRA folders (rgbaqd --lora-dir) by its stem";
  }
  if (name.find_first_of(":;<>,") != std::string_view::npos || name.find('\0') != std::string_view::npos) {
    return "LoRA name " + quoted + " holds one of : ; < > , (items are name:weight, separated by ;)";
  }
  if (name.front() == '.') return "LoRA name " + quoted + " starts with a dot";
  if (name.size() > 100) return "LoRA name " + quoted + " is longer than 100 bytes";
  return "";
}

std::optional<std::vector<LoraItem>> parse_lora_list(std::string_view text, std::string& error) {
  std::vector<LoraItem> items;
  if (trim(text).empty()) return items;
  size_t start = 0;
  while (start <= text.size()) {
    const auto semi = text.find(';', start);
    const std::string_view part = text.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start);
    if (!trim(part).empty() || semi != std::string_view::npos) {  // a trailing ";" is allowed
      if (trim(part).empty() && semi + 1 < text.size()) {
        error = "an empty LoRA item (items are name:weight, separated by ;)";
        return std::nullopt;
      }
      if (!trim(part).empty()) {
        LoraItem item;
        if (std::string why = parse_item(part, item); !why.empty()) {
          error = std::move(why);
          return std::nullopt;
        }
        items.push_back(std::move(item));
      }
    }
    if (semi == std::string_view::npos) break;
    start = semi + 1;
  }
  if (std::string why = check_unique(items); !why.empty()) {
    error = std::move(why);
    return std::nullopt;
  }
  return items;
}

std::optional<PromptLoras> split_prompt_loras(std::string_view prompt, std::string& error) {
  PromptLoras out;
  std::string text;
  size_t pos = 0;
  while (true) {
    const auto open = prompt.find("<lora:", pos);
    if (open == std::string_view::npos) break;
    const auto close = prompt.find('>', open);
    if (close == std::string_view::npos) {
      error = "the prompt's \"<lora:\" at byte " + std::to_string(open + 1) + " has no closing \">\"";
      return std::nullopt;
    }
    text.append(prompt.substr(pos, open - pos));
    LoraItem item;
    if (std::string why = parse_item(prompt.substr(open + 6, close - open - 6), item); !why.empty()) {
      error = "in " + std::string(prompt.substr(open, close - open + 1)) + ": " + why;
      return std::nullopt;
    }
    out.loras.push_back(std::move(item));
    pos = close + 1;
  }
  text.append(prompt.substr(pos));
  out.text = out.loras.empty() ? std::string(prompt) : std::string(trim(text));
  if (std::string why = check_unique(out.loras); !why.empty()) {
    error = std::move(why);
    return std::nullopt;
  }
  return out;
}

std::string prompt_text(std::string_view prompt) {
  std::string error;
  const auto split = split_prompt_loras(prompt, error);
  return split ? split->text : std::string(prompt);
}

std::string lora_list_string(const std::vector<LoraItem>& items) {
  std::string out;
  for (const auto& i : items) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, i.weight);
    out += (out.empty() ? "" : ";") + i.name + ":" + std::string(buf, ec == std::errc() ? end : buf);
  }
  return out;
}

}  // namespace rgbaq::jobs
