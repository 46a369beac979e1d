#include "daemon/base/finished_output.h"

#include <nlohmann/json.hpp>

#include "jobs/lora_list.h"
#include "storage/render_metadata.h"

namespace rgbaq::daemon {

bool holds_image(const storage::PngImage& png, const ImageIdentity& image) {
  const auto it = png.texts.find("rgbaq");
  if (it == png.texts.end()) return false;
  const auto meta = nlohmann::json::parse(it->second, nullptr, false);
  return meta.is_object() && meta.value("prompt", "") == image.prompt && meta.value("seed", uint64_t{0}) == image.seed &&
         png.width == image.width && png.height == image.height && meta.contains("model") && meta["model"].is_object() &&
         meta["model"].value("identity", "") == image.model_identity && records_lora_set(png, image.lora, image.lora_sha256);
}

bool records_lora_set(const storage::PngImage& png, const std::string& lora, const LoraHashesNow& lora_sha256) {
  const auto it = png.texts.find("rgbaq");
  const auto recorded = it == png.texts.end() ? std::vector<storage::LoraRecord>{} : storage::loras_of(it->second);
  std::vector<jobs::LoraItem> items;
  for (const auto& l : recorded) items.push_back({l.name, l.weight});
  if (jobs::lora_list_string(items) != lora) return false;
  if (recorded.empty()) return true;
  const std::vector<std::string> now = lora_sha256();
  if (now.size() != recorded.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (recorded[i].sha256 != now[i]) return false;
  }
  return true;
}

}  // namespace rgbaq::daemon
