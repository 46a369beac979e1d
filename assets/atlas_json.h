#pragma once
// An atlas page's description in TexturePacker's "JSON Hash" layout, as PixiJS's Spritesheet, Phaser's
// atlas loader and Godot's importers read it:
//   {"frames": {NAME: {"frame": {x, y, w, h}, "rotated": false, "trimmed", "spriteSourceSize": {x, y, w, h},
//                      "sourceSize": {w, h}}, ...},
//    "meta": {"app", "version", "image", "format": "RGBA8888", "size": {w, h}, "scale": "1"
//             (, "related_multi_packs": [the other pages' JSON files])}}
// `frame` is where the image lies on the page; `spriteSourceSize` where that part lay in the source
// image (the trim rectangle) and `sourceSize` the source's size, so a loader puts a trimmed sprite back
// at its place in the untrimmed frame.
//
// Several pages (multipack): one JSON a page, each naming its own image; the first is NAME.json, the
// others NAME-1.json, NAME-2.json ... (their images NAME-0, NAME-1 ...), and each lists every other in
// meta.related_multi_packs, as TexturePacker writes them: PixiJS loading any one of them loads the rest
// (Spritesheet.linkedSheets).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assets/rgba_image.h"

namespace rgbaq::assets {

struct AtlasFrame {
  std::string name;         // the frame's key: the exported image's file name
  PixelRect frame;          // on the page
  PixelRect source_rect;    // the part of the source image it shows (x, y within the source)
  int source_width = 0, source_height = 0;
};

// The file names of an atlas NAME with `pages` pages: images (with `extension`) and JSON files.
std::string atlas_image_name(const std::string& name, int page, int pages, const std::string& extension);
std::string atlas_json_name(const std::string& name, int page, int pages);

// The JSON of page `page` of `pages`, its image `width` x `height`.
nlohmann::json atlas_page_json(const std::string& name, int page, int pages, const std::string& extension, int width, int height,
                               const std::vector<AtlasFrame>& frames);

}  // namespace rgbaq::assets
