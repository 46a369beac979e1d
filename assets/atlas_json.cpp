#include "assets/atlas_json.h"

#include "common/build_info.h"

namespace rgbaq::assets {

using nlohmann::json;

std::string atlas_image_name(const std::string& name, int page, int pages, const std::string& extension) {
  return (pages == 1 ? name : name + "-" + std::to_string(page)) + "." + extension;
}

std::string atlas_json_name(const std::string& name, int page, int pages) {
  return (page == 0 ? name : name + "-" + std::to_string(page)) + ".json";
}

json atlas_page_json(const std::string& name, int page, int pages, const std::string& extension, int width, int height,
                     const std::vector<AtlasFrame>& frames) {
  json hash = json::object();
  for (const AtlasFrame& f : frames) {
    const bool trimmed = f.source_rect.x != 0 || f.source_rect.y != 0 || f.source_rect.w != f.source_width ||
                         f.source_rect.h != f.source_height;
    hash[f.name] = {{"frame", {{"x", f.frame.x}, {"y", f.frame.y}, {"w", f.frame.w}, {"h", f.frame.h}}},
                    {"rotated", false},
                    {"trimmed", trimmed},
                    {"spriteSourceSize", {{"x", f.source_rect.x}, {"y", f.source_rect.y}, {"w", f.source_rect.w}, {"h", f.source_rect.h}}},
                    {"sourceSize", {{"w", f.source_width}, {"h", f.source_height}}}};
  }
  json meta = {{"app", "rgbaq"},
               {"version", common::project_version()},
               {"image", atlas_image_name(name, page, pages, extension)},
               {"format", "RGBA8888"},
               {"size", {{"w", width}, {"h", height}}},
               {"scale", "1"}};
  if (pages > 1) {
    json related = json::array();
    for (int p = 0; p < pages; ++p) {
      if (p != page) related.push_back(atlas_json_name(name, p, pages));
    }
    meta["related_multi_packs"] = related;
  }
  return {{"frames", hash}, {"meta", meta}};
}

}  // namespace rgbaq::assets
