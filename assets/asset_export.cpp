#include "assets/asset_export.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "assets/alpha_check.h"
#include "assets/atlas_json.h"
#include "assets/atlas_packer.h"
#include "assets/premultiply.h"
#include "assets/resample.h"
#include "assets/trim.h"
#include "common/build_info.h"
#include "common/sha256.h"

namespace rgbaq::assets {
namespace {

using nlohmann::json;

constexpr const char* kManifest = "manifest.json";
constexpr size_t kMaxNameBytes = 100;
// Trimmed images kept in memory for the atlas, up to this many bytes; past it the rest are read again.
constexpr size_t kKeptForAtlasBytes = 256u << 20;

std::string sha256_of(const std::string& bytes) { return common::sha256_hex(bytes.data(), bytes.size()); }

// The files the export already in the folder wrote, by name: their SHA-256 then.
std::map<std::string, std::string> previous_files(const ExportFolder& folder) {
  const auto text = folder.read(kManifest);
  if (!text) return {};
  const json m = json::parse(*text, nullptr, false);
  if (!m.is_object() || !m.contains("rgbaq_asset_export") || !m.contains("files") || !m["files"].is_array()) {
    throw ExportFolderError((folder.path() / kManifest).string() +
                            " is not the manifest of an rgbaq asset export; nothing was written (move it away, or export into "
                            "another folder)");
  }
  std::map<std::string, std::string> files;
  for (const auto& f : m["files"]) {
    if (f.is_object() && f.contains("file") && f["file"].is_string() && f.contains("sha256") && f["sha256"].is_string()) {
      files[f["file"].get<std::string>()] = f["sha256"].get<std::string>();
    }
  }
  return files;
}

// Whether `name` in the folder is the previous export's file, as that export wrote it.
bool unchanged_own_file(const ExportFolder& folder, const std::map<std::string, std::string>& previous, const std::string& name) {
  const auto it = previous.find(name);
  if (it == previous.end()) return false;
  const auto bytes = folder.read(name);
  return bytes && sha256_of(*bytes) == it->second;
}

// Throws unless `name` is free, or the previous export's file unchanged.
void claim(const ExportFolder& folder, const std::map<std::string, std::string>& previous, const std::string& name) {
  if (!folder.has(name)) return;
  bool ours = false;
  try {
    ours = unchanged_own_file(folder, previous, name);
  } catch (const ExportFolderError&) {
    ours = false;  // a link or a folder: not a file this export wrote
  }
  if (ours) return;
  throw ExportFolderError((folder.path() / name).string() + " is already there and this export did not write it" +
                          (previous.count(name) ? " (it changed since)" : "") +
                          "; nothing was written (move it away, or export into another folder)");
}

// The files an image's base name gives: NAME.ext, and NAME_<size>px.ext for each size.
std::vector<std::string> file_names(const std::string& base, const AssetExportOptions& o) {
  const std::string ext = asset_format_name(o.format);
  std::vector<std::string> names = {base + "." + ext};
  for (const int size : o.sizes) names.push_back(base + "_" + std::to_string(size) + "px." + ext);
  return names;
}

// The base name of an image's files: its source's file name without the extension, unless that is no
// plain name (then "job<id>"); "_job<id>" added while one of its files' names is another image's.
std::string base_name(const AssetSource& s, const AssetExportOptions& o, std::set<std::string>& planned) {
  std::string base = std::filesystem::path(s.file).stem().string();
  bool plain = !base.empty() && base[0] != '.' && base.size() <= 200;
  for (const char c : base) plain = plain && c != '/' && static_cast<unsigned char>(c) >= 0x20 && c != 0x7f;
  if (!plain) base = "job" + std::to_string(s.job);
  for (;;) {
    const auto names = file_names(base, o);
    if (std::none_of(names.begin(), names.end(), [&](const std::string& n) { return planned.count(n) > 0; })) {
      planned.insert(names.begin(), names.end());
      return base;
    }
    base += "_job" + std::to_string(s.job);
  }
}

// An option as the caller spells it: "--atlas-max" on the command line, "\"atlas_max\"" over HTTP.
std::string option_name(std::string field, OptionNames names) {
  if (names == OptionNames::kJson) return "\"" + field + "\"";
  std::replace(field.begin(), field.end(), '_', '-');
  return "--" + field;
}

// Refuses an output over kMaxOutputPixels before its pixels are made.
void check_output_pixels(const std::string& what, int64_t width, int64_t height) {
  if (width * height > kMaxOutputPixels) {
    throw std::invalid_argument(what + " would be " + std::to_string(width) + "x" + std::to_string(height) + ", over the " +
                                std::to_string(kMaxOutputPixels >> 20) + " Mpx an output may have; nothing was written");
  }
}

json rect_json(const PixelRect& r) { return {{"x", r.x}, {"y", r.y}, {"w", r.w}, {"h", r.h}}; }

json options_json(const AssetExportOptions& o) {
  return {{"trim", o.trim},
          {"pad", o.pad},
          {"premultiplied", o.premultiplied},
          {"format", asset_format_name(o.format)},
          {"sizes", o.sizes},
          {"atlas", o.atlas.empty() ? json(nullptr) : json(o.atlas)},
          {"atlas_max", o.atlas_max},
          {"resampling", "stb_image_resize in premultiplied space: mitchell when shrinking, catmull-rom when growing"}};
}

// An image on its way to the atlas: what it showed of its source, and its pixels while they are kept.
struct AtlasItem {
  size_t source = 0, entry = 0;  // indices into the sources and the manifest's images
  std::string frame;             // the frame's name: the image's file name
  PixelRect rect;
  int source_width = 0, source_height = 0;
  std::optional<RgbaImage> kept;
};

}  // namespace

void check_asset_export_options(const AssetExportOptions& o, OptionNames names) {
  const auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  const auto px = [](int v) { return std::to_string(v) + " pixels"; };
  const int largest = asset_format_max_side(o.format);
  const auto side_limit = [&](int cap) {  // "1 to N pixels", with the format when it is what sets N
    const int n = std::min(cap, largest);
    return "1 to " + px(n) + (n < cap ? std::string(" (") + asset_format_name(o.format) + ")" : "");
  };
  if (o.pad < 0 || o.pad > kMaxPad) fail(option_name("pad", names) + " " + std::to_string(o.pad) + ": the padding is 0 to " + px(kMaxPad));
  if (o.sizes.size() > size_t(kMaxSizes)) {
    fail(option_name("sizes", names) + " lists " + std::to_string(o.sizes.size()) + " sizes: at most " + std::to_string(kMaxSizes));
  }
  std::set<int> seen;
  for (const int size : o.sizes) {
    const std::string at = option_name("sizes", names) + " " + std::to_string(size) + ": ";
    if (size < 1 || size > std::min(kMaxSize, largest)) fail(at + "a size is " + side_limit(kMaxSize));
    if (size <= 2 * o.pad) fail(at + "leaves no room for the image inside " + px(o.pad) + " of padding on each side");
    if (!seen.insert(size).second) fail(at + "given twice");
  }
  if (!o.atlas.empty()) {
    const std::string at = option_name("atlas", names) + " \"" + o.atlas + "\": ";
    bool plain = o.atlas.size() <= kMaxNameBytes && o.atlas[0] != '.' && o.atlas[0] != '-';
    for (const char c : o.atlas) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
    if (!plain) {
      fail(at + "an atlas name is up to " + std::to_string(kMaxNameBytes) + " letters, digits, '.', '_' and '-', not starting with '.' or '-'");
    }
    if (o.atlas == "manifest") fail(at + "manifest.json is the export's own");
  }
  if (o.atlas_max < 1 || o.atlas_max > std::min(kMaxAtlasSide, largest)) {
    fail(option_name("atlas_max", names) + " " + std::to_string(o.atlas_max) + ": a page's side is " + side_limit(kMaxAtlasSide));
  }
}

AssetExportOptions asset_export_options_from_json(const json& body) {
  if (!body.is_object()) throw std::invalid_argument("the options must be a JSON object");
  AssetExportOptions o;
  const auto flag = [&](const char* key, bool& to) {
    if (!body.contains(key)) return;
    if (!body[key].is_boolean()) throw std::invalid_argument(std::string("\"") + key + "\" must be true or false");
    to = body[key].get<bool>();
  };
  const auto number = [&](const json& v, const char* key) {
    if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN || v.get<int64_t>() > INT32_MAX) {
      throw std::invalid_argument(std::string("\"") + key + "\" must be an integer, not " + v.dump());
    }
    return v.get<int>();
  };
  flag("trim", o.trim);
  flag("premultiplied", o.premultiplied);
  if (body.contains("pad")) o.pad = number(body["pad"], "pad");
  if (body.contains("format")) {
    const auto f = body["format"].is_string() ? parse_asset_format(body["format"].get<std::string>()) : std::nullopt;
    if (!f) throw std::invalid_argument("\"format\" must be \"png\" or \"webp\", not " + body["format"].dump());
    o.format = *f;
  }
  if (body.contains("sizes")) {
    if (!body["sizes"].is_array()) throw std::invalid_argument("\"sizes\" must be a list of pixel sizes");
    for (const auto& s : body["sizes"]) o.sizes.push_back(number(s, "sizes"));
  }
  if (body.contains("atlas") && !body["atlas"].is_null()) {
    if (!body["atlas"].is_string()) throw std::invalid_argument("\"atlas\" must be a name");
    o.atlas = body["atlas"].get<std::string>();
    if (o.atlas.empty()) throw std::invalid_argument("\"atlas\" must not be empty");
  }
  if (body.contains("atlas_max")) o.atlas_max = number(body["atlas_max"], "atlas_max");
  check_asset_export_options(o, OptionNames::kJson);
  return o;
}

json export_assets(const std::vector<AssetSource>& sources, const AssetExportOptions& options, ExportFolder& folder, const json& about,
                   OptionNames names) {
  check_asset_export_options(options, names);
  const std::string ext = asset_format_name(options.format);
  const int pad_px = options.pad;
  const auto previous = previous_files(folder);

  // Every image's file names, checked before anything is made: a file in the way stops the export here.
  std::set<std::string> planned;
  std::vector<std::string> bases;
  for (const AssetSource& s : sources) bases.push_back(base_name(s, options, planned));
  if (!options.atlas.empty()) {  // its pages' names: NAME.ext, or NAME-0.ext ... with one page an image at most
    std::vector<std::string> pages = {atlas_image_name(options.atlas, 0, 1, ext)};
    for (size_t p = 0; p < sources.size(); ++p) pages.push_back(atlas_image_name(options.atlas, int(p), 2, ext));
    for (const std::string& name : pages) {
      if (planned.count(name)) {
        throw std::invalid_argument(option_name("atlas", names) + " \"" + options.atlas + "\": its page " + name + " would replace an image's file");
      }
    }
  }
  for (const std::string& name : planned) claim(folder, previous, name);

  json images = json::array(), skipped = json::array(), files = json::array();
  std::vector<AtlasItem> atlas_items;
  size_t kept_bytes = 0;
  // Every file but the manifest is staged here and listed in the manifest's "files".
  const auto stage_bytes = [&](const std::string& name, const std::string& bytes) {
    folder.stage(name, bytes);
    files.push_back({{"file", name}, {"bytes", bytes.size()}, {"sha256", sha256_of(bytes)}});
    return files.back();
  };
  const auto stage = [&](const RgbaImage& image, const std::string& name) {
    json f = stage_bytes(name, encode_asset(image, options.format));
    f["width"] = image.width;
    f["height"] = image.height;
    return f;
  };
  // Straight pixels as the export writes them: inside the padding, premultiplied when asked.
  const auto finished = [&](const RgbaImage& straight) {
    RgbaImage out = pad(straight, pad_px);
    if (options.premultiplied) premultiply(out);
    return out;
  };

  for (size_t i = 0; i < sources.size(); ++i) {
    const AssetSource& s = sources[i];
    RgbaImage image;
    try {
      image = s.load();
    } catch (const std::exception& e) {
      skipped.push_back({{"job", s.job}, {"file", s.file}, {"reason", e.what()}});
      continue;
    }
    const int source_w = image.width, source_h = image.height;
    PixelRect rect{0, 0, source_w, source_h};
    if (options.trim) {
      const auto content = content_rect(image);
      if (!content) {
        const std::string why = "nothing to trim to: no pixel has alpha above " + std::to_string(kTransparentAlphaMax);
        skipped.push_back({{"job", s.job}, {"file", s.file}, {"reason", why}});
        continue;
      }
      rect = *content;
    }
    const RgbaImage content = options.trim ? crop(image, rect) : std::move(image);
    const int framed_w = content.width + 2 * pad_px, framed_h = content.height + 2 * pad_px;
    check_output_pixels("job " + std::to_string(s.job) + "'s image" + (pad_px ? " padded" : ""), framed_w, framed_h);
    if (!options.atlas.empty() && (framed_w > options.atlas_max || framed_h > options.atlas_max)) {
      throw std::invalid_argument(option_name("atlas_max", names) + " " + std::to_string(options.atlas_max) + " is smaller than job " +
                                  std::to_string(s.job) + "'s image (" + std::to_string(framed_w) + "x" + std::to_string(framed_h) +
                                  (options.trim ? ", trimmed" : "") + (pad_px ? ", padded" : "") + "); nothing was written");
    }
    json entry = {{"job", s.job},
                  {"prompt", s.prompt},
                  {"seed", s.seed},
                  {"source", {{"file", s.file}, {"width", source_w}, {"height", source_h}}},
                  {"trim", rect_json(rect)},
                  {"pad", pad_px}};
    const auto names = file_names(bases[i], options);
    entry["files"] = json::array({stage(finished(content), names[0])});
    for (size_t k = 0; k < options.sizes.size(); ++k) {
      const int size = options.sizes[k];
      const auto [w, h] = fitted_size(content.width, content.height, size - 2 * pad_px);
      json f = stage(finished(resample(content, w, h)), names[k + 1]);
      f["size"] = size;
      if (w != content.width || h != content.height) {
        f["filter"] = resample_filter_name(resample_filter_for(std::max(content.width, content.height), std::max(w, h)));
      }
      entry["files"].push_back(std::move(f));
    }
    if (!options.atlas.empty()) {
      AtlasItem item{i, images.size(), names[0], rect, source_w, source_h, std::nullopt};
      if (kept_bytes + content.rgba.size() <= kKeptForAtlasBytes) {
        kept_bytes += content.rgba.size();
        item.kept = content;
      }
      atlas_items.push_back(std::move(item));
    }
    images.push_back(std::move(entry));
  }

  json atlas = nullptr;
  if (!options.atlas.empty() && !atlas_items.empty()) {
    std::vector<PackSize> sizes;
    for (const AtlasItem& item : atlas_items) sizes.push_back({item.rect.w + 2 * pad_px, item.rect.h + 2 * pad_px});
    const auto pages = pack_atlas(sizes, options.atlas_max);
    const int count = int(pages.size());
    for (const PackedPage& page : pages) {
      const std::string what = option_name("atlas_max", names) + " " + std::to_string(options.atlas_max) + ": an atlas page";
      check_output_pixels(what, page.width, page.height);
    }
    for (int p = 0; p < count; ++p) {
      claim(folder, previous, atlas_image_name(options.atlas, p, count, ext));
      claim(folder, previous, atlas_json_name(options.atlas, p, count));
    }
    atlas = {{"name", options.atlas}, {"pages", json::array()}};
    for (int p = 0; p < count; ++p) {
      const PackedPage& page = pages[size_t(p)];
      RgbaImage sheet(page.width, page.height);
      std::vector<AtlasFrame> frames;
      for (size_t k = 0; k < page.items.size(); ++k) {
        AtlasItem& item = atlas_items[size_t(page.items[k])];
        RgbaImage content;
        if (item.kept) {
          content = std::move(*item.kept);
          item.kept.reset();
        } else {  // read again: the image must still be the one exported above
          const AssetSource& s = sources[item.source];
          const RgbaImage image = s.load();
          if (image.width != item.source_width || image.height != item.source_height) {
            throw std::runtime_error(s.file + " changed while it was exported (" + std::to_string(image.width) + "x" +
                                     std::to_string(image.height) + " now); nothing was written");
          }
          content = crop(image, item.rect);
        }
        if (options.premultiplied) premultiply(content);
        const PixelRect at{page.places[k].x + pad_px, page.places[k].y + pad_px, content.width, content.height};
        for (int y = 0; y < content.height; ++y) {
          std::copy_n(content.pixel(0, y), size_t(content.width) * 4, sheet.pixel(at.x, at.y + y));
        }
        frames.push_back({item.frame, at, item.rect, item.source_width, item.source_height});
        images[item.entry]["atlas"] = {{"page", p}, {"frame", item.frame}, {"rect", rect_json(at)}};
      }
      const std::string image_name = atlas_image_name(options.atlas, p, count, ext), json_name = atlas_json_name(options.atlas, p, count);
      const json page_file = stage(sheet, image_name);
      stage_bytes(json_name, atlas_page_json(options.atlas, p, count, ext, sheet.width, sheet.height, frames).dump(2) + "\n");
      atlas["pages"].push_back({{"image", image_name}, {"json", json_name}, {"width", sheet.width}, {"height", sheet.height},
                                {"frames", frames.size()}, {"bytes", page_file["bytes"]}});
    }
  }

  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const json manifest = {{"rgbaq_asset_export", 1},
                         {"written_by", std::string("rgbaq ") + common::project_version()},
                         {"written_at", now},
                         {"source", about},
                         {"options", options_json(options)},
                         {"images", images},
                         {"skipped", skipped},
                         {"atlas", atlas},
                         {"files", files}};
  folder.stage(kManifest, manifest.dump(2) + "\n");
  folder.commit();
  // The previous export's files that this one did not write again go, when they are still as written.
  std::set<std::string> written(folder.staged().begin(), folder.staged().end());
  for (const auto& [name, sha] : previous) {
    if (written.count(name)) continue;
    try {
      if (unchanged_own_file(folder, previous, name)) folder.remove(name);
    } catch (const ExportFolderError&) {
      // something else took its name since: not this export's to remove
    }
  }
  return manifest;
}

json asset_export_summary(const json& manifest, const std::filesystem::path& folder) {
  return {{"folder", folder.string()},
          {"manifest", (folder / kManifest).string()},
          {"images", manifest["images"].size()},
          {"files", manifest["files"].size()},
          {"skipped", manifest["skipped"]},
          {"atlas", manifest["atlas"]}};
}

}  // namespace rgbaq::assets
