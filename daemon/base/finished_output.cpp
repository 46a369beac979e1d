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
         meta["model"].value("identity", "") == image.model_identity && lora_set_of(png) == image.lora;
}

std::string lora_set_of(const storage::PngImage& png) {
  const auto it = png.texts.find("rgbaq");
  if (it == png.texts.end()) return "";
  std::vector<jobs::LoraItem> recorded;
  for (const auto& l : storage::loras_of(it->second)) recorded.push_back({l.name, l.weight});
  return jobs::lora_list_string(recorded);
}

}  // namespace rgbaq::daemon
