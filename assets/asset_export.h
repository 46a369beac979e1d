#pragma once
// The export stage (issue 40): finished RGBA images into assets a game or UI pipeline takes as they are.
// For each image: the image trimmed to its content (the alpha check's bbox) when asked, padded with
// transparent pixels, straight alpha unless premultiplied is asked, as PNG or lossless WebP (NAME.ext,
// NAME the source's file name without its extension); each size in `sizes` as NAME_<size>px.ext, its
// longer side that size (the pad included, kept at `pad` pixels), aspect kept, resampled in
// premultiplied space (assets/resample.h). With an atlas, the trimmed images are packed onto pages
// (assets/atlas_packer.h, each keeping `pad` transparent pixels around it) described by TexturePacker
// JSON Hash files (assets/atlas_json.h).
//
// DIR/manifest.json says what was written: per image its job, prompt, seed, source file and size, trim
// rectangle, padding and every file with its pixel size, bytes and SHA-256; and the whole export's file
// list. That list is how a re-run knows its own files: a file that is in the way is overwritten only if
// the previous manifest lists it with the content it still has, a file of the previous export that this
// one does not write again is removed (under the same rule), and anything else there makes the export
// fail before it writes a thing.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "assets/asset_format.h"
#include "assets/export_folder.h"
#include "assets/rgba_image.h"

namespace rgbaq::assets {

struct AssetExportOptions {
  bool trim = false;
  int pad = 0;                 // 0..kMaxPad
  bool premultiplied = false;
  AssetFormat format = AssetFormat::kPng;
  std::vector<int> sizes;      // distinct, at most kMaxSizes, each > 2 * pad and at most kMaxSize (and the format's largest side)
  std::string atlas;           // the atlas's name ("" for none): letters, digits, '.', '_', '-'
  int atlas_max = 4096;        // the largest side of an atlas page: at most kMaxAtlasSide (and the format's largest side)
};
// Limits that keep one request from taking the daemon's memory (a 65535 px size is a 68 GB float
// buffer): the options are checked against them before anything is read, and every output (an image,
// an atlas page; a size is within it by kMaxSize) against kMaxOutputPixels before its pixels are made.
inline constexpr int kMaxPad = 1024;
inline constexpr int kMaxSizes = 16;
inline constexpr int kMaxSize = 8192;
inline constexpr int kMaxAtlasSide = 16384;
inline constexpr int64_t kMaxOutputPixels = int64_t{64} << 20;  // 64 Mpx: a kMaxSize square

// Throws std::invalid_argument naming the option at fault, as the CLI spells it ("--pad -1: ...") or
// as the HTTP API does ("\"pad\" -1: ...").
enum class OptionNames { kCli, kJson };
void check_asset_export_options(const AssetExportOptions& options, OptionNames names = OptionNames::kCli);

// The options as the HTTP API and the gallery send them: {"trim", "pad", "premultiplied", "format",
// "sizes": [...], "atlas", "atlas_max"}, each optional. Throws std::invalid_argument naming the field.
AssetExportOptions asset_export_options_from_json(const nlohmann::json& body);

// One image to export.
struct AssetSource {
  int64_t job = 0;
  std::string prompt;
  uint64_t seed = 0;
  std::string file;                  // the source image's path: its file name names the exports
  std::function<RgbaImage()> load;   // its pixels (straight alpha); throws with the reason it cannot
};

// Exports `sources` into `folder` and commits (nothing shows before everything is ready). `about`
// goes into the manifest as "source" (the run, the filters). An image that cannot be loaded, or is
// empty when trimmed, is skipped and listed with its reason. Returns the manifest. Throws
// std::invalid_argument for options that do not fit the images (an image larger than an atlas page or
// than kMaxOutputPixels, an atlas name taken by an image's file), naming the options as `names` says,
// and ExportFolderError for a file in the way.
nlohmann::json export_assets(const std::vector<AssetSource>& sources, const AssetExportOptions& options, ExportFolder& folder,
                             const nlohmann::json& about, OptionNames names = OptionNames::kCli);

// What an export did, as `rgbaq export --assets --json` prints it and the HTTP route answers:
// {"folder", "manifest" (its path), "images", "files" (counts), "skipped", "atlas"}.
nlohmann::json asset_export_summary(const nlohmann::json& manifest, const std::filesystem::path& folder);

}  // namespace rgbaq::assets
